"""Replaying generated logs gives back what the generator intended: each snapshot equals the log
replayed to it, and at random offsets (and at every transaction boundary) the replayed image
matches the ground truth the simulation wrote beside the files."""

import random

import pytest
from test_synth import all_clusters, generated, truth_of  # noqa: F401  (generated is a fixture)

from conftest import REPO
from kraftlog.files.logdir import find_nodes

rebuild_module = pytest.importorskip("kraftlog.state.rebuild", reason="kraftlog.state (replay) is not there yet")

OFFSETS_PER_CLUSTER = 12


def _image(image) -> dict:
    out = image.to_json(redact=False)
    del out["provenance"]
    return out


def _unexpected(problems) -> list:
    """Problems other than the report that Kafka 4.x refuses a metadata.version below 3.3-IV3, which
    the clusters generated at 3.3-IV0..3.3-IV2 write on purpose."""
    return [p for p in problems if not (p.type == "FEATURE_LEVEL_RECORD" and "Kafka 4.x refuses" in p.message)]


def _nodes_to_check(cluster, truth) -> list:
    """The primary copy and the diverging one: the other copies are byte copies of the primary."""
    wanted = {truth["cluster"]["primaryNode"], truth["cluster"]["divergingNode"]}
    return [n for n in find_nodes(cluster) if n.node_id in wanted]


def test_each_snapshot_equals_the_log_replayed_to_it(generated):  # noqa: F811
    compared = 0
    for cluster in all_clusters(generated):
        truth = truth_of(cluster)
        for node in _nodes_to_check(cluster, truth):
            for snap in node.snapshots:
                if snap.offset == 0:
                    continue
                expected = rebuild_module.load_checkpoint(snap)
                built = rebuild_module.rebuild(node, offset=snap.offset - 1, base="none")
                assert built.image.provenance.offset == snap.offset - 1
                assert not built.problems.messages and not _unexpected(built.image.problems)
                assert not _unexpected(expected.problems)
                got, want = _image(built.image), _image(expected)
                assert got == want, f"{snap.path}"
                compared += 1
    assert compared >= 20


def _holds(item: dict, offset: int) -> bool:
    return item["from"] <= offset and (item["to"] is None or offset <= item["to"])


def _offsets(truth: dict, rng: random.Random) -> list[int]:
    end = truth["cluster"]["endOffset"]
    picked = {rng.randrange(end) for _ in range(OFFSETS_PER_CLUSTER)} | {end - 1}
    for t in truth["transactions"]:
        picked |= {t["begin"], t["end"] - 1, t["end"]}
    return sorted(picked)


def _expected_at(truth: dict, offset: int) -> dict:
    names = {t["topicId"]: t["name"] for t in truth["topics"]}
    columns = truth["partitionColumns"]
    partitions = {}
    for row in truth["partitions"]:
        p = dict(zip(columns, row, strict=True))
        if _holds(p, offset):
            partitions[(names[p["topicId"]], str(p["partition"]))] = {
                k: p[k] for k in columns if k not in ("topicId", "partition", "from", "to")}
    features = {}
    for f in truth["features"]:
        if f["offset"] <= offset:
            features[f["name"]] = f["level"]
    return {
        "topics": {t["name"]: t["topicId"] for t in truth["topics"] if _holds(t, offset)},
        "partitions": partitions,
        "brokers": {str(b["brokerId"]): {k: b[k] for k in ("brokerEpoch", "incarnationId", "fenced",
                                                             "inControlledShutdown")}
                    for b in truth["brokers"] if _holds(b, offset)},
        "features": {k: v for k, v in features.items() if v or k == "metadata.version"},
    }


def _replayed_at(image: dict, expected: dict) -> dict:
    columns = next(iter(expected["partitions"].values()), {}).keys()
    return {
        "topics": {name: t["topicId"] for name, t in image["topics"].items()},
        "partitions": {(name, pid): {k: p[k] for k in columns}
                       for name, t in image["topics"].items() for pid, p in t["partitions"].items()},
        "brokers": {bid: {k: b[k] for k in ("brokerEpoch", "incarnationId", "fenced", "inControlledShutdown")}
                    for bid, b in image["brokers"].items()},
        "features": image["features"],
    }


def test_replay_at_random_offsets_gives_the_ground_truth(generated):  # noqa: F811
    rng = random.Random(6)
    for cluster in all_clusters(generated):
        truth = truth_of(cluster)
        node = next(n for n in find_nodes(cluster) if n.node_id == truth["cluster"]["primaryNode"])
        for offset in _offsets(truth, rng):
            built = rebuild_module.rebuild(node, offset=offset)
            assert not _unexpected(built.image.problems), (cluster, offset, built.image.problems[:3])
            expected = _expected_at(truth, offset)
            assert _replayed_at(_image(built.image), expected) == expected, f"{cluster} at offset {offset}"


def test_the_last_image_is_the_final_ground_truth(generated):  # noqa: F811
    for cluster in all_clusters(generated):
        truth = truth_of(cluster)
        final = truth["final"]
        node = next(n for n in find_nodes(cluster) if n.node_id == truth["cluster"]["primaryNode"])
        image = _image(rebuild_module.rebuild(node, offset=truth["cluster"]["endOffset"] - 1).image)
        for key in ("features", "configs", "clientQuotas", "producerIds"):
            assert image[key] == final[key], key
        assert sorted(image["acls"]) == final["acls"]
        assert sorted(image["delegationTokens"]) == final["delegationTokens"]
        assert {m: sorted(users) for m, users in image["scram"].items()} == final["scram"]
        assert sorted(map(int, image["controllers"])) == final["controllers"]
        assert {name: {"topicId": t["topicId"], "partitions": len(t["partitions"])}
                for name, t in image["topics"].items()} == final["topics"]


def test_the_diverging_copy_replays_its_uncommitted_change(generated):  # noqa: F811
    checked = 0
    for cluster in all_clusters(generated):
        truth = truth_of(cluster)
        for tail in truth["uncommitted"]:
            nodes = {n.node_id: n for n in find_nodes(cluster)}
            change = tail["records"][0]["data"]
            resource = f"TOPIC:{change['resourceName']}"
            for node_id, node in nodes.items():
                configs = _image(rebuild_module.rebuild(node, offset=tail["toOffset"]).image)["configs"]
                value = configs.get(resource, {}).get(change["name"])
                assert (value == change["value"]) == (node_id == tail["node"]), (cluster, node_id)
            checked += 1
    assert checked >= 2


def test_replay_reads_no_segment_that_ends_before_its_snapshot(monkeypatch):
    """Reaching an offset costs the log after the snapshot, not every segment before it."""
    from kraftlog.files import copies
    from kraftlog.state import rebuild as rb

    node = find_nodes(str(REPO / "fixtures" / "single-node"))[0]
    target = node.snapshots[-1].offset + 20  # the last snapshot lies in the last of several segments
    assert len(node.segments) > 2 and node.segments[-1].offset < node.snapshots[-1].offset
    whole = rb.rebuild(node, offset=target, base="none").image.to_json()
    read = []
    for name in ("iter_entries", "iter_items"):  # replay reads by ``iter_items`` (blocks), others by entries
        real = getattr(copies, name)
        monkeypatch.setattr(copies, name, lambda lf, *a, _real=real, **k: (read.append(lf.path.name),
                                                                           _real(lf, *a, **k))[1])
    built = rb.rebuild(node, offset=target)
    assert built.base == f"snapshot {node.snapshots[-1].path.name}" and not built.problems.messages
    assert [n for n in read if n.endswith(".log")] == [node.segments[-1].path.name]
    assert {k: v for k, v in built.image.to_json().items() if k != "provenance"} == \
        {k: v for k, v in whole.items() if k != "provenance"}
