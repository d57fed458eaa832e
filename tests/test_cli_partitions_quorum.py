"""``kraftlog partitions`` and ``kraftlog quorum``: values equal the replayed image and the ground
truth the generator wrote beside the fixtures, at points inside the log."""

import json
from types import SimpleNamespace

import pytest
from test_cli_shell import REAL, SINGLE, THREE, run

from conftest import REPO
from kraftlog.state.image import ClusterImage
from kraftlog.state.partition_view import min_isr

KRAFT_V1 = REPO / "fixtures/fleet/cluster-4.1"


def truth(cluster) -> dict:
    return json.loads((cluster / "ground-truth.json").read_text())


def truth_partitions_at(t: dict, offset: int) -> dict:
    """(topic name, partition) -> the ground truth's row holding at ``offset``."""
    columns = t["partitionColumns"]
    names = {x["topicId"]: x["name"] for x in t["topics"] if x["from"] <= offset and (x["to"] is None or offset <= x["to"])}
    rows = {}
    for raw in t["partitions"]:
        row = dict(zip(columns, raw, strict=True))
        if row["from"] <= offset and (row["to"] is None or offset <= row["to"]) and row["topicId"] in names:
            rows[(names[row["topicId"]], row["partition"])] = row
    return rows


@pytest.mark.parametrize(("path", "node"), [(SINGLE, []), (THREE, ["--node", "2"]), (REAL, [])],
                         ids=["single-node", "three-nodes", "real"])
@pytest.mark.parametrize("offset", [300, 2000, 6000])
def test_partition_rows_equal_replay(capsys, path, node, offset):
    if not path.is_dir():
        pytest.skip("the shared corpus (../shared/corpus) is absent")
    code, out, err = run(capsys, "partitions", path, *node, "--offset", offset, "--format", "json")
    assert code == 0, err
    rows = json.loads(out)
    _, image, _ = run(capsys, "replay", path, *node, "--offset", offset)
    topics = json.loads(image)["topics"]
    assert len(rows) == sum(len(t["partitions"]) for t in topics.values())
    for r in rows:
        p = topics[r["topic"]]["partitions"][str(r["partition"])]
        assert (r["leader"], r["leaderEpoch"], r["replicas"], r["isr"], r["eligibleLeaderReplicas"],
                r["lastKnownElr"]) == (p["leader"], p["leaderEpoch"], p["replicas"], p["isr"],
                                       p["eligibleLeaderReplicas"], p["lastKnownElr"])


@pytest.mark.parametrize("cluster", [SINGLE, THREE, KRAFT_V1], ids=["single-node", "three-nodes", "kraft-v1"])
def test_unhealthy_lists_the_ground_truths_shrunk_isrs(capsys, cluster):
    t = truth(cluster)
    columns = t["partitionColumns"]
    shrunk = [dict(zip(columns, r, strict=True)) for r in t["partitions"]]
    shrunk = [r for r in shrunk if len(r["isr"]) < len(r["replicas"]) - len(r["addingReplicas"])]
    offset = shrunk[len(shrunk) // 2]["from"]
    node = ["--node", str(t["cluster"]["primaryNode"])]
    code, out, err = run(capsys, "partitions", cluster, *node, "--offset", offset, "--unhealthy", "--format", "jsonl")
    assert code == 0, err
    listed = {(r["topic"], r["partition"]): r for r in map(json.loads, out.splitlines())}
    expected = {k for k, r in truth_partitions_at(t, offset).items()
                if len(r["isr"]) < len(r["replicas"]) - len(r["addingReplicas"])}
    under = {k for k, r in listed.items() if "under-replicated" in r["flags"]}
    assert expected and under == expected
    for key in expected:
        assert listed[key]["isr"] == truth_partitions_at(t, offset)[key]["isr"]
    # and the text table says the same, one line per listed partition
    code, text, _ = run(capsys, "partitions", cluster, *node, "--offset", offset, "--unhealthy")
    assert text.splitlines()[0].split()[:6] == ["TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR"]
    assert len(text.splitlines()) == 1 + len(listed)


def test_topic_and_broker_filters(capsys):
    _, out, _ = run(capsys, "partitions", SINGLE, "--offset", 5000, "--format", "jsonl", "--topic", "orders")
    assert {json.loads(line)["topic"] for line in out.splitlines()} == {"orders"}
    _, out, _ = run(capsys, "partitions", SINGLE, "--offset", 5000, "--format", "jsonl", "--broker", 2)
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows and all(2 in r["replicas"] for r in rows)


def _config(name, value, resource_type, resource):
    return SimpleNamespace(type="CONFIG_RECORD", error=None,
                           data={"resourceType": resource_type, "resourceName": resource, "name": name, "value": value})


def test_min_isr_from_the_topic_then_the_cluster_then_kafkas_default():
    image = ClusterImage.empty()
    assert min_isr(image, "orders") == (1, "default")
    image.apply(_config("min.insync.replicas", "2", 4, ""), 1)
    assert min_isr(image, "orders") == (2, "cluster")
    image.apply(_config("min.insync.replicas", "3", 2, "orders"), 2)
    assert min_isr(image, "orders") == (3, "topic")
    image.apply(_config("min.insync.replicas", "two", 2, "orders"), 3)
    with pytest.raises(ValueError, match="is not a whole number"):
        min_isr(image, "orders")


@pytest.mark.parametrize("cluster", [SINGLE, THREE, KRAFT_V1], ids=["single-node", "three-nodes", "kraft-v1"])
def test_quorum_at_points_equals_ground_truth_and_replay(capsys, cluster):
    t = truth(cluster)
    node = ["--node", str(t["cluster"]["primaryNode"])]
    epochs = t["epochs"]
    for offset in (50, epochs[-1]["startOffset"] - 1, epochs[-1]["startOffset"] + 5):
        code, out, err = run(capsys, "quorum", cluster, *node, "--offset", offset, "--format", "json", "--elections", 99)
        assert code == 0, err
        status = json.loads(out)
        current = [e for e in epochs if e["startOffset"] <= offset][-1]
        assert (status["leaderId"], status["leaderEpoch"]) == (current["leaderId"], current["epoch"])
        assert [(e["epoch"], e["startOffset"], e["leaderId"]) for e in status["electionsBefore"]
                + status["electionsAfter"]] == [(e["epoch"], e["startOffset"], e["leaderId"]) for e in epochs]
        assert sorted(v["id"] for v in status["voters"]) == t["cluster"]["controllers"]
        assert status["kraftVersion"] == t["cluster"]["kraftVersion"]
        _, image, _ = run(capsys, "replay", cluster, *node, "--offset", offset)
        brokers = json.loads(image)["brokers"]
        assert {str(b["id"]): (b["epoch"], b["fenced"], b["inControlledShutdown"]) for b in status["brokers"]} == {
            k: (b["brokerEpoch"], b["fenced"], b["inControlledShutdown"]) for k, b in brokers.items()}


def test_quorum_text(capsys):
    code, out, _ = run(capsys, "quorum", SINGLE, "--offset", 5000)
    assert code == 0
    lines = out.splitlines()
    assert lines[:6] == ["ClusterId:       iQZpnz8VSjaP-_V8pNznZg", "LeaderId:        1", "LeaderEpoch:     9",
                         "At:              offset 5000, 2025-01-01T00:37:08.358Z", "KRaftVersion:    0", "CurrentVoters:   [1]"]


@pytest.mark.parametrize("command", ["partitions", "quorum"])
def test_a_point_before_the_log_is_refused(capsys, command):
    code, out, err = run(capsys, command, SINGLE, "--time", "2000-01-01T00:00:00Z")
    assert (code, out) == (1, "")
    assert "time 946684800000 is before anything on disk" in err
