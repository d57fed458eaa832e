"""``history --topic`` leaves other topics' changes out of its replay (``image.KeptTopics``): its output (stdout,
stderr, exit status) is the full replay's on every log, the refusals of the changes it leaves out included."""

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
from test_cli_fast import quiet_log  # noqa: F401
from test_replay_fast import T, _block, _nodes, _rec, _topics

from kraftlog.cli import history
from kraftlog.cli.main import main
from kraftlog.files.logdir import find_nodes
from kraftlog.schema import MetadataRecord, encode_metadata
from kraftlog.state.image import CHANGE, FENCE, KEPT, OTHER, ClusterImage, KeptTopics
from kraftlog.state.topics import PARTITION_CHANGE_RECORD, Topics, _merge_lines
from kraftlog.synth.cluster import generate
from kraftlog.synth.ids import uuid_text
from kraftlog.synth.spec import ClusterSpec
from kraftlog.wire.batch import Record, encode_batch

U, V, X = "AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAw", "AAAAAAAAAAAAAAAAAAAABA"
Z = ["AAAAAAAAAAAAAAAAAAAABQ", "AAAAAAAAAAAAAAAAAAAABg", "AAAAAAAAAAAAAAAAAAAABw"]
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
DIRS = ["AAAAAAAAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBBBBBBBA"]


def _run(path, *args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["history", str(path), *args])
    return code, out.getvalue(), err.getvalue()


def _both_ways(path, topics: list[str], monkeypatch, forms=((), ("--format", "jsonl"), ("--partition", "0"))) -> list:
    """Each topic's history with other topics' changes left out and with every record applied: the same; so are
    broker 1's and the configs of broker 1 and the first topic (which keep no topic)."""
    runs = [(("--topic", t), form) for t in topics for form in forms] + [
        (entity, ()) for entity in (("--broker", "1"), ("--config", "BROKER:1"), ("--config", f"TOPIC:{topics[0]}"))]
    kept = [_run(path, *entity, *form) for entity, form in runs]
    monkeypatch.setattr(history, "LEAVE_OUT", False)
    whole = [_run(path, *entity, *form) for entity, form in runs]
    monkeypatch.setattr(history, "LEAVE_OUT", True)
    for run, a, b in zip(runs, kept, whole, strict=True):
        assert a == b, run
    return kept


def _pc(topic_id: str, partition_id: int, **fields):
    return ("PARTITION_CHANGE_RECORD", 1, {"partitionId": partition_id, "topicId": topic_id, **fields})


def _partition(topic_id: str, partition_id: int):
    return ("PARTITION_RECORD", 1, {"partitionId": partition_id, "topicId": topic_id, "replicas": [1, 2],
                                    "isr": [1, 2], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
                                    "directories": DIRS})


#: A literal log (one record a batch, some batches of three): topic "t" (T) followed, "u" (U) and "x" (X) not;
#: the changes of "u" and "x" left out where their partition is there when the stretch they are in begins (after a
#: TopicRecord, RemoveTopicRecord or transaction marker), refused where it is not (never made, its topic removed,
#: its id re-created) and where their placement does not fit, in and out of transactions.
PLAN = [
    ("TOPIC_RECORD", 0, {"name": "t", "topicId": T}), _partition(T, 0),
    ("TOPIC_RECORD", 0, {"name": "u", "topicId": U}), _partition(U, 0), _partition(U, 1),
    ("TOPIC_RECORD", 0, {"name": "z", "topicId": Z[0]}),
    _pc(U, 0, isr=[1]),  # 6: left out
    _pc(U, 5, isr=[1]),  # 7: refused, u-5 not there
    _pc(V, 0, isr=[1]),  # 8: refused, no topic V
    _pc(T, 0, isr=[1]),  # 9: shown
    _pc(U, 0, leader=2),  # 10: left out
    _pc(U, 1, replicas=[1, 2, 3], directories=DIRS),  # 11: refused, 2 directories for 3 replicas
    _partition(U, 5), _pc(U, 5, isr=[2]),  # 13: applied, u-5 was not there when the stretch began
    ("TOPIC_RECORD", 0, {"name": "z1", "topicId": Z[1]}),
    _pc(U, 5, isr=[1]),  # 15: left out
    ("REMOVE_TOPIC_RECORD", 0, {"topicId": U}),
    _pc(U, 0, isr=[1, 2]),  # 17: refused, u gone (u-0 was found before)
    ("TOPIC_RECORD", 0, {"name": "x", "topicId": X}), _partition(X, 0), _partition(X, 1),
    ("TOPIC_RECORD", 0, {"name": "z2", "topicId": Z[2]}),
    _pc(X, 0, isr=[2]), _pc(X, 1, isr=[2]),  # 22, 23: left out
    ("TOPIC_RECORD", 0, {"name": "y", "topicId": X}),  # 24: the id re-created: its partitions dropped
    _pc(X, 1, isr=[1]),  # 25: refused, y-1 not there
    _partition(X, 1),
    ("BEGIN_TRANSACTION_RECORD", 0, {"name": "b"}), _pc(X, 1, leader=2), _pc(X, 7, isr=[1]), _pc(T, 0, leader=2),
    ("END_TRANSACTION_RECORD", 0, {}),  # 31: 29 refused (y-7 not there) when applied here
    ("BEGIN_TRANSACTION_RECORD", 0, {"name": "a"}), _pc(X, 8, isr=[1]), _pc(T, 0, isr=[1, 2]),
    ("ABORT_TRANSACTION_RECORD", 0, {}),  # 35: nothing applied
    ("CLEAR_ELR_RECORD", 0, {}),  # 36: shown (a ClearElrRecord of every topic)
    _pc(X, 1, isr=[1, 2]),  # 37: left out
    _pc(X, 9, isr=[1]),  # 38: refused, y-9 not there
    _pc(T, 0, leader=1),
]


def _write_log(tmp_path: Path, plan: list) -> Path:
    """A node's log of ``plan``, a batch a record but for every fifth batch, of three."""
    batches, offset = [], 0
    while offset < len(plan):
        group = plan[offset:offset + (3 if len(batches) % 5 == 4 else 1)]
        batches.append(encode_batch([Record(d, d, None, encode_metadata(*r), timestamp_delta=d, offset_delta=d)
                                     for d, r in enumerate(group)], base_offset=offset,
                                    base_timestamp=1_700_000_000_000 + offset, partition_leader_epoch=1))
        offset += len(group)
    log_dir = tmp_path / "node"
    (log_dir / "__cluster_metadata-0").mkdir(parents=True)
    (log_dir / "meta.properties").write_text("version=1\ncluster.id=kept\nnode.id=1\n")
    (log_dir / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"".join(batches))
    return log_dir / "__cluster_metadata-0"


def test_refused_changes_of_topics_not_followed_give_their_problem_lines(tmp_path, monkeypatch):
    log = _write_log(tmp_path, PLAN)
    code, out, err = _both_ways(log, ["t"], monkeypatch, forms=((),))[0]
    assert code == 1
    assert [line.split(" ", 2)[1] for line in out.splitlines() if line.startswith("offset")] == [
        "0", "1", "9", "30", "34", "35:", "36", "39"]
    assert "offset 35: transaction aborted; changes at offsets [34] never took effect" in out
    problems = [line for line in err.splitlines() if "problem" in line]
    assert problems == [
        "kraftlog: problem: offset 7 PARTITION_CHANGE_RECORD: PartitionChangeRecord for u-5, which does not exist",
        f"kraftlog: problem: offset 8 PARTITION_CHANGE_RECORD: PartitionChangeRecord for topic id {V}, which does "
        "not exist",
        "kraftlog: problem: offset 11 PARTITION_CHANGE_RECORD: 2 directories for 3 replicas",
        f"kraftlog: problem: offset 17 PARTITION_CHANGE_RECORD: PartitionChangeRecord for topic id {U}, which "
        "does not exist",
        "kraftlog: problem: offset 25 PARTITION_CHANGE_RECORD: PartitionChangeRecord for y-1, which does not exist",
        "kraftlog: problem: offset 29 PARTITION_CHANGE_RECORD: PartitionChangeRecord for y-7, which does not exist",
        "kraftlog: problem: offset 38 PARTITION_CHANGE_RECORD: PartitionChangeRecord for y-9, which does not exist",
    ]


def test_the_literal_log_is_the_full_replay_for_every_topic_and_form(tmp_path, monkeypatch):
    _both_ways(_write_log(tmp_path, PLAN), ["t", "u", "x", "y", "absent"], monkeypatch,
               forms=((), ("--format", "jsonl"), ("--partition", "0"), ("--partition", "1", "--no-redact")))


def test_changes_are_left_out(tmp_path, monkeypatch):
    """The mode does leave changes out (else the tests above would pass on the full replay alone)."""
    left = []
    left_out = KeptTopics.left_out
    monkeypatch.setattr(KeptTopics, "left_out", lambda *a: left.append(r := left_out(*a)) or r)
    _run(_write_log(tmp_path, PLAN), "--topic", "t")
    assert sum(int(a.sum()) for a in left) == 6  # offsets 6, 10, 15, 22, 23, 37


@pytest.fixture(scope="module")
def busy_log(tmp_path_factory) -> Path:
    """A generated cluster with many topics created and deleted, partitions reassigned, transactions."""
    out = tmp_path_factory.mktemp("kept") / "cluster"
    spec = ClusterSpec(name="", seed="kept", metadata_versions=(7, 21), start_ms=1_700_000_000_000,
                       duration_ms=3 * 3600_000, brokers=4, topics=8, partitions=4, events_per_hour=900,
                       max_records_per_batch=40, segment_bytes=512 << 10)
    generate(out, [spec])
    return next(out.rglob("__cluster_metadata-0"))


def test_a_busy_generated_log_is_the_full_replay(busy_log, monkeypatch):
    topics = _topics(busy_log)
    left = []
    left_out = KeptTopics.left_out
    monkeypatch.setattr(KeptTopics, "left_out", lambda *a: left.append(r := left_out(*a)) or r)
    kept = _both_ways(busy_log, topics[:6] + topics[-6:], monkeypatch)
    assert sum(int(a.sum()) for a in left) > 39 * 5000  # most of its 12,771 changes, in each of 39 histories
    assert len(topics) > 8 and all(code == 0 for code, _, _ in kept) and sum(len(out) for _, out, _ in kept) > 10000
    assert all(out for _, out, _ in kept[-3:])  # broker 1 and the configs changed


def test_the_quiet_log_is_the_full_replay(quiet_log, monkeypatch):  # noqa: F811
    kept = _both_ways(quiet_log, _topics(quiet_log), monkeypatch)
    assert any("aborted" in out for _, out, _ in kept) and any("inTransaction" in out for _, out, _ in kept)


@pytest.mark.parametrize("node", _nodes(), ids=lambda n: str(n.log_dir))
def test_fixtures_and_the_real_corpus_are_the_full_replay(node, monkeypatch):
    topics = _topics(node.metadata_dir)
    _both_ways(node.metadata_dir, topics[:3] + topics[-3:] + ["absent"], monkeypatch)


@pytest.mark.skipif(not (CORPUS / "kafka-serde").is_dir(), reason="the shared corpus is not beside the repository")
def test_kafka_serde_logs_are_the_full_replay(monkeypatch):
    for node in find_nodes(CORPUS / "kafka-serde" / "metadata"):
        _both_ways(node.metadata_dir, _topics(node.metadata_dir) + ["absent"], monkeypatch)


def test_the_walk_is_sorted_by_kind_and_kept_topic():
    recs = [_rec("TOPIC_RECORD", 0, name="t", topicId=T), _rec("PARTITION_CHANGE_RECORD", 1, partitionId=3, topicId=T),
            _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=U, isr=[1]),
            _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=U, replicas=[1]),
            _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=U, leaderRecoveryState=1),
            _rec("PARTITION_CHANGE_RECORD", 1, partitionId=2, topicId=U, leader=1),
            _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=U, isr=[2]),
            _rec("REMOVE_TOPIC_RECORD", 0, topicId=U), _rec("NO_OP_RECORD", 0),
            _rec("END_TRANSACTION_RECORD", 0), _rec("PARTITION_RECORD", 1, partitionId=0, topicId=U, replicas=[1],
                                                    isr=[1], leader=1, leaderEpoch=0, partitionEpoch=0)]
    handmade = MetadataRecord(recs[2].api_key, 1, {"partitionId": 0, "topicId": U, "fencing": 1})  # no value read
    walk = KeptTopics().walk([*recs, handmade], {T})
    assert walk.codes.tolist() == [FENCE, KEPT, 1, CHANGE, CHANGE, 2, 1, FENCE, OTHER, FENCE, OTHER, OTHER]


def test_a_decoded_change_without_the_unpassable_fields_is_one_merged_in_one_call():
    """``UNPASSABLE`` tells a decoded change's shape as ``_merge_lines`` does, at every version: a decoded change
    holds the schema's fields only, both KEY fields always (else its shape would need reading whole)."""
    from kraftlog.schema.metadata import BY_TYPE_NAME

    values = {"isr": [1], "leader": 2, "replicas": [1, 2], "removingReplicas": [2], "addingReplicas": [1],
              "leaderRecoveryState": 1, "directories": DIRS, "eligibleLeaderReplicas": [1], "lastKnownElr": [2]}
    assert set(values) | {"partitionId", "topicId"} == set(PARTITION_CHANGE_RECORD)
    seen = set()
    for version in range(BY_TYPE_NAME["PARTITION_CHANGE_RECORD"].highest_version + 1):
        for names in [[name] for name in values] + [list(values)]:
            try:
                rec = _rec("PARTITION_CHANGE_RECORD", version, partitionId=0, topicId=U, **{n: values[n] for n in names})
            except ValueError as e:  # a field of a later version
                assert "no such field in this version" in str(e)
                continue
            data = rec.data
            assert list(data)[:2] == ["partitionId", "topicId"]
            seen.add(tuple(data))
            walk = KeptTopics().walk([rec], set())
            assert (walk.codes[0] >= 0) == (_merge_lines(tuple(data)) is not None) == (
                not set(data) & {"replicas", "directories", "leaderRecoveryState"}), (version, names)
    assert len(seen) == len(values) + 1  # each field alone, and all (at the versions that have them)


def test_only_topic_and_remove_topic_records_drop_partitions():
    """``Topics.dropped``: a topic removed and an id re-created count; a new topic, a partition, a change do not."""
    image = ClusterImage.empty()
    seen = []
    for offset, rec in enumerate([("TOPIC_RECORD", 0, {"name": "u", "topicId": U}), _partition(U, 0), _pc(U, 0, isr=[1]),
                                  ("CLEAR_ELR_RECORD", 0, {}), ("TOPIC_RECORD", 0, {"name": "w", "topicId": U}),
                                  ("TOPIC_RECORD", 0, {"name": "v", "topicId": V}),
                                  ("REMOVE_TOPIC_RECORD", 0, {"topicId": U})]):
        image.apply(_rec(rec[0], rec[1], **rec[2]), offset)
        seen.append((image.topics.dropped, image.topics.last_dropped))
    assert seen == [(0, None)] * 4 + [(1, U), (1, U), (2, U)] and not image.problems
    assert Topics().dropped == 0


def test_a_mark_left_out_is_refused():
    recs = [_rec("TOPIC_RECORD", 0, name="u", topicId=U), _rec("PARTITION_RECORD", 1, partitionId=0, topicId=U,
                                                               replicas=[1], isr=[1], leader=1, leaderEpoch=0,
                                                               partitionEpoch=0),
            _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=U, isr=[1])]
    block = _block(recs, [1] * 3)
    walk = KeptTopics().walk(block.decoded, set())
    with pytest.raises(ValueError, match="leave out"):
        ClusterImage.empty().apply_block(block, [2], lambda i: None, walk)
    image = ClusterImage.empty()
    image.apply_block(block, [1], lambda i: None, walk)
    assert image.topics.by_id[U]["partitions"][0]["isr"] == [1] and not image.problems  # left out: as it was
    assert np.array_equal(walk.codes, [FENCE, OTHER, 0])


def test_keys_are_dropped_when_too_many_and_older_walks_leave_nothing_out(monkeypatch):
    from kraftlog.state import image as image_module

    monkeypatch.setattr(image_module, "_KEYS_KEPT", 2)
    kept = KeptTopics()
    changes = [_rec("PARTITION_CHANGE_RECORD", 1, partitionId=p, topicId=uuid_text(__import__("random").Random(p)),
                    isr=[1]) for p in range(4)]
    old = kept.walk(changes, set())
    assert old.codes.tolist() == [0, 1, 2, 3]
    new = kept.walk(changes[:1], set())
    assert new.codes.tolist() == [0] and new.keys is not old.keys
    passed = np.ones(4, bool)
    assert not kept.left_out(Topics(), old, np.arange(4), passed).any()


def test_refused_changes_appended_to_a_busy_generated_log_are_the_full_replay(busy_log, tmp_path, monkeypatch):
    """The generated log (which Kafka's rules accept whole) continued by a segment of changes of other topics
    refused or left out: of its removed topics, of a partition a topic does not have, of a topic removed there."""
    import shutil

    from kraftlog.files.copies import Log
    from kraftlog.files.reader import Limits
    from kraftlog.files.records import ReadProblems

    log = tmp_path / "node" / "__cluster_metadata-0"
    shutil.copytree(busy_log.parent, log.parent)
    entries = list(Log.of(find_nodes(log)[0]).entries(0, Limits(), ReadProblems()))
    created = {e.record.data["topicId"]: e.record.data["name"] for e in entries if e.record.type == "TOPIC_RECORD"}
    removed = [e.record.data["topicId"] for e in entries if e.record.type == "REMOVE_TOPIC_RECORD"]
    image = ClusterImage.empty()
    for e in entries:
        image.apply(e.record, e.offset, e.timestamp, e.epoch)
    there = [t for t in image.topics.by_id if image.topics.by_id[t]["partitions"]]
    assert len(removed) > 3 and len(there) > 3
    plan = [*(_pc(t, 0, isr=[1]) for t in removed[:3]),  # refused: removed
            *(_pc(t, 0, isr=[2]) for t in there[1:]), *(_pc(t, 99, isr=[1]) for t in there[1:]),  # left out; refused
            ("REMOVE_TOPIC_RECORD", 0, {"topicId": there[-1]}), _pc(there[-1], 0, leader=1),  # refused: removed
            _pc(there[1], 0, isr=[1])]  # left out
    last = entries[-1]
    batches = [encode_batch([Record(0, 0, None, encode_metadata(*r))], base_offset=last.offset + 1 + k,
                            base_timestamp=last.timestamp + 1 + k, partition_leader_epoch=last.epoch)
               for k, r in enumerate(plan)]
    (log / f"{last.offset + 1:020d}.log").write_bytes(b"".join(batches))
    kept = _both_ways(log, [created[there[0]]], monkeypatch)
    problems = [line for line in kept[0][2].splitlines() if "problem" in line]
    assert len(problems) == 3 + len(there) - 1 + 1 and kept[0][0] == 1, kept[0][2]
