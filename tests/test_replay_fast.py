"""Replay's cheaper paths (issue 18) give what the general ones give: ``ClusterImage.apply`` by api key,
``merge_partition`` over the fields a change holds, one decoded record per value across walks
(``decode_metadata``'s cache, tested in ``test_schema_records.py``) and ``history``'s remembered matches."""

import gc
import json
from argparse import Namespace
from pathlib import Path

import pytest
from test_cli_fast import quiet_log  # noqa: F401
from test_state_support import uuid

from conftest import CORPUS
from kraftlog.cli.history import _Matcher
from kraftlog.files import records
from kraftlog.files.copies import Log
from kraftlog.files.logdir import find_nodes
from kraftlog.files.reader import Limits
from kraftlog.files.records import Entry, ReadProblems
from kraftlog.schema import decode_control, decode_metadata, encode_control, encode_metadata
from kraftlog.state.image import ClusterImage
from kraftlog.state.problems import ReplayProblem
from kraftlog.state.replay import replay
from kraftlog.state.topics import merge_partition

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
T = uuid(1)


class _General(ClusterImage):
    """The image with every record taken by ``apply``'s general path (no handler by api key)."""

    def __init__(self) -> None:
        super().__init__()
        self._by_api_key = {}


def _same(a: ClusterImage, b: ClusterImage) -> None:
    assert a.to_json(redact=False) == b.to_json(redact=False)
    assert (a.provenance, a.problems, a.transaction) == (b.provenance, b.problems, b.transaction)
    assert (a.raft.leader_epoch, a.raft.leader_id, a.raft.to_json()) == (b.raft.leader_epoch, b.raft.leader_id,
                                                                          b.raft.to_json())


def _nodes() -> list:
    roots = [FIXTURES] + ([CORPUS / "real"] if CORPUS.is_dir() else [])
    return [node for root in roots for node in find_nodes(root) if node.segments]


@pytest.mark.parametrize("node", _nodes(), ids=lambda n: str(n.log_dir))
def test_apply_by_api_key_is_the_general_path_on_real_logs(node):
    fast = replay(Log.of(node).entries(0, Limits(), ReadProblems(), runs="blocks"))
    general = replay(Log.of(node).entries(0, Limits(), ReadProblems()), _General())
    assert fast.records == general.records > 0
    _same(fast.image, general.image)


def _rec(kind: str, version: int, **data):
    return decode_metadata(encode_metadata(kind, version, data))


def _records() -> list:
    """Real decoded records: a topic, its partition and changes, two refused, and a transaction."""
    return [
        _rec("TOPIC_RECORD", 0, name="t", topicId=T),
        _rec("PARTITION_RECORD", 1, partitionId=0, topicId=T, replicas=[1, 2, 3], isr=[1, 2, 3], removingReplicas=[],
             addingReplicas=[], leader=1, leaderEpoch=5, partitionEpoch=7),
        _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, isr=[1, 2]),
        _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, leader=2),
        _rec("PARTITION_CHANGE_RECORD", 1, partitionId=1, topicId=T, leader=2),  # no such partition
        _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, leader=3, leaderRecoveryState=7),  # refused
        _rec("BEGIN_TRANSACTION_RECORD", 0, name="move"),
        _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, replicas=[2, 3, 4], isr=[2, 3, 4]),
        _rec("END_TRANSACTION_RECORD", 0),
        _rec("NO_OP_RECORD", 0),
    ]


def test_literal_records_give_the_literal_image_either_way():
    fast, general = ClusterImage.empty(), _General()
    for offset, rec in enumerate(_records()):
        fast.apply(rec, offset, 1000 + offset, 3)
        general.apply(rec, offset, 1000 + offset, 3)
    _same(fast, general)
    assert fast.to_json()["topics"]["t"]["partitions"]["0"] == {
        "replicas": [2, 3, 4], "directories": ["AAAAAAAAAAAAAAAAAAAAAA"] * 3, "isr": [2, 3, 4],
        "removingReplicas": [], "addingReplicas": [], "leader": 2, "leaderRecoveryState": 0, "leaderEpoch": 6,
        "partitionEpoch": 10, "eligibleLeaderReplicas": [], "lastKnownElr": []}
    assert [(p.offset, p.message) for p in fast.problems] == [
        (4, "PartitionChangeRecord for t-1, which does not exist"), (5, "unknown leaderRecoveryState 7")]
    assert fast.provenance.to_json() == {"offset": 9, "epoch": 3, "timestamp": 1009}


def test_a_change_without_placement_keeps_it_and_leaves_the_old_partition_as_it_was():
    old = {"replicas": [1, 2], "directories": [uuid(7), uuid(8)], "isr": [1, 2], "removingReplicas": [],
           "addingReplicas": [], "leader": 1, "leaderRecoveryState": 0, "leaderEpoch": 4, "partitionEpoch": 9,
           "eligibleLeaderReplicas": [], "lastKnownElr": []}
    before = {k: list(v) if isinstance(v, list) else v for k, v in old.items()}
    new = merge_partition(old, {"partitionId": 0, "topicId": T, "isr": [2], "leader": 2})
    assert old == before
    assert new == {**before, "isr": [2], "leader": 2, "leaderEpoch": 5, "partitionEpoch": 10}
    assert list(new) == list(old)  # the state's field order, which the image's JSON shows


def test_a_change_field_the_table_does_not_name_is_refused():
    with pytest.raises(ReplayProblem, match="field fencing is not one kraftlog merges"):
        merge_partition({"partitionEpoch": 0, "replicas": [1], "directories": [uuid(7)]}, {"fencing": 1})


def test_a_remembered_match_changes_when_the_topic_is_created():
    match = _Matcher(Namespace(topic="t", partition=None, broker=None, config=None), ClusterImage.empty())
    change = _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, isr=[1])
    assert not match(change) and not match(change)
    assert match(_rec("TOPIC_RECORD", 0, name="t", topicId=T))
    assert match(change)
    one = _Matcher(Namespace(topic="t", partition=1, broker=None, config=None), ClusterImage.empty())
    assert one(_rec("TOPIC_RECORD", 0, name="t", topicId=T)) and not one(change)


def test_full_collections_are_rarer_only_while_a_log_is_replayed():
    before = gc.get_threshold()
    seen = []

    def entries():
        seen.append(gc.get_threshold())
        yield Entry(_rec("NO_OP_RECORD", 0), 0, 1000, 1)
        raise OSError("gone")

    with pytest.raises(OSError):
        replay(entries())
    assert seen == [(before[0], before[1], before[2] * 100)] and gc.get_threshold() == before
    assert replay(iter([Entry(_rec("NO_OP_RECORD", 0), 0, 1000, 1)])).records == 1
    assert gc.get_threshold() == before


def _topics(log_dir) -> list[str]:
    """The names of the topics the log creates."""
    return sorted({e.record.data["name"] for e in Log.of(find_nodes(log_dir)[0]).entries(0, Limits(), ReadProblems())
                   if e.record.type == "TOPIC_RECORD"})


def _history(log_dir, capsys, *args) -> str:
    from kraftlog.cli.main import main

    main(["history", str(log_dir), *args])
    return capsys.readouterr().out


def test_history_rendered_in_groups_is_history_rendered_change_by_change(quiet_log, monkeypatch, capsys):  # noqa: F811
    from kraftlog.cli import history

    topics = _topics(quiet_log)
    outputs = {}
    for held in (1, 3, 1 << 20):
        monkeypatch.setattr(history, "_HELD", held)
        outputs[held] = [_history(quiet_log, capsys, "--topic", t, *f) for t in topics
                         for f in ((), ("--format", "jsonl"))]
    assert outputs[1] == outputs[3] == outputs[1 << 20]
    assert any("aborted" in out for out in outputs[1]) and any("inTransaction" in out for out in outputs[1])


def test_history_writes_the_changes_read_before_a_failure(quiet_log, monkeypatch, capsys):  # noqa: F811
    from kraftlog.cli import history

    topic = _topics(quiet_log)[0]
    whole = _history(quiet_log, capsys, "--topic", topic, "--format", "jsonl").splitlines()
    offsets = [json.loads(line)["offset"] for line in whole]
    cut = offsets[len(offsets) // 2]
    entries = history.log_entries

    def failing(*args, **kwargs):
        for e in entries(*args, **kwargs):
            if (e.offset if type(e) is Entry else e.last) > cut:
                if type(e) is not Entry and e.offsets[0] <= cut:  # a block's (or run's) offsets are consecutive
                    yield e.part(0, cut - int(e.offsets[0]) + 1)
                raise OSError("the disk went away")
            yield e

    monkeypatch.setattr(history, "log_entries", failing)
    from kraftlog.cli.main import main

    assert main(["history", str(quiet_log), "--topic", topic, "--format", "jsonl"]) == 1
    written = capsys.readouterr()
    assert "the disk went away" in written.err
    assert written.out.splitlines() == [line for line, o in zip(whole, offsets, strict=True) if o <= cut]


def _block(recs: list, epochs: list[int]) -> records.Block:
    """A block of ``recs`` at offsets 10.. (times 2000..), each record its own kv, NoOps inactive."""
    import numpy as np

    n = len(recs)
    return records.Block(list(recs), np.arange(n), np.arange(10, 10 + n), np.arange(2000, 2000 + n),
                         np.asarray(epochs, np.int64), np.asarray([not records.is_no_op(r) for r in recs]))


def _leader(leader_id: int):
    key, value = encode_control("LEADER_CHANGE", {"version": 0, "leaderId": leader_id, "voters": []})
    return decode_control(key, value)


def _block_records() -> tuple[list, list[int]]:
    """``_records`` with NoOps between them, inside the transaction too, an epoch that rises on a NoOp
    before a leader change of a lower epoch (a damaged log) and on a NoOp after it, a record that fails
    to decode, and a transaction left open at the end."""
    noop = _rec("NO_OP_RECORD", 0)
    recs = [noop, *_records()[:6], noop, noop, _leader(2), noop, _rec("BEGIN_TRANSACTION_RECORD", 0, name="m"),
            noop, _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, isr=[1]), noop,
            _rec("END_TRANSACTION_RECORD", 0), noop, decode_metadata(b"\x01\x63\x00"), noop,
            _rec("BEGIN_TRANSACTION_RECORD", 0, name="open"), noop, noop]
    epochs = [3] * 7 + [3, 4, 3, 5] + [5] * (len(recs) - 11)
    return recs, epochs


def test_a_block_applied_at_once_is_each_record_applied_in_turn():
    recs, epochs = _block_records()
    for cut in range(len(recs) + 1):  # ending anywhere: before, inside and after each transaction
        block, one_by_one = ClusterImage.empty(), _General()
        block.apply_block(_block(recs, epochs).part(0, cut)) if cut else None
        for offset, (rec, epoch) in enumerate(zip(recs[:cut], epochs, strict=False)):
            one_by_one.apply(rec, 10 + offset, 2000 + offset, epoch)
        assert block.to_json(redact=False) == one_by_one.to_json(redact=False), cut
        assert (block.provenance, block.problems, block.raft.leader_epoch, block.raft.leader_id, block.raft.to_json(),
                _held(block)) == (one_by_one.provenance, one_by_one.problems, one_by_one.raft.leader_epoch,
                                  one_by_one.raft.leader_id, one_by_one.raft.to_json(), _held(one_by_one)), cut


def _held(image: ClusterImage):
    """An open transaction's begin, name and the records it holds (their handlers are the image's own)."""
    txn = image.transaction
    return txn and (txn.begin_offset, txn.name, [(h.__name__, rec, offset) for h, rec, offset in txn.records])


def test_a_block_gives_the_literal_image():
    recs, epochs = _block_records()
    image = ClusterImage.empty()
    image.apply_block(_block(recs, epochs))
    assert image.to_json()["topics"]["t"]["partitions"]["0"] == {
        "replicas": [1, 2, 3], "directories": ["AAAAAAAAAAAAAAAAAAAAAA"] * 3, "isr": [1],
        "removingReplicas": [], "addingReplicas": [], "leader": 2, "leaderRecoveryState": 0, "leaderEpoch": 6,
        "partitionEpoch": 10, "eligibleLeaderReplicas": [], "lastKnownElr": []}
    assert [(p.offset, p.type) for p in image.problems] == [
        (15, "PARTITION_CHANGE_RECORD"), (16, "PARTITION_CHANGE_RECORD"), (27, "UNKNOWN")]
    # the open transaction's Begin leaves the image where the record before it put it
    assert image.provenance.to_json() == {"offset": 28, "epoch": 5, "timestamp": 2018}
    assert (image.raft.leader_epoch, image.raft.leader_id) == (5, -1)  # epoch 5 came after the leader change
    assert image.transaction.begin_offset == 29 and len(image.transaction.records) == 2


def test_history_reads_a_topic_id_and_partition_where_entity_of_does():
    from kraftlog.schema import entity_of
    from kraftlog.schema.entity import fields_of

    seen = set()
    for node in _nodes():
        for e in Log.of(node).entries(0, Limits(), ReadProblems()):
            rec = e.record
            if not hasattr(rec, "api_key") or rec.error is not None:
                continue
            whole, fields = entity_of(rec), fields_of(rec.api_key)
            for key in ("topic_id", "partition_id"):
                assert (rec.data.get(fields[key]) if key in fields else None) == whole[key], rec
                seen.add(key) if whole[key] is not None else None
    assert seen == {"topic_id", "partition_id"}


def test_a_partition_changed_again_after_a_mark_leaves_what_the_mark_held_as_it_was():
    """A state ``after`` may hold (``hold_topic``) is never changed by the block's later changes, those
    ``Topics.change_run`` takes too: what it held renders as the mark saw it."""
    from kraftlog.state.topics import topic_held_json

    recs = [*_records()[:3], _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, isr=[1]),
            _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, leader=2),
            _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, isr=[2])]
    image, held = ClusterImage.empty(), {}
    image.apply_block(_block(recs, [1] * len(recs)), [3, 4], lambda i: held.update({i: image.topics.hold_topic(T)}))
    shown = {i: (p := topic_held_json(h)["partitions"]["0"])["isr"] + [p["leader"], p["partitionEpoch"]]
             for i, h in held.items()}
    assert shown == {3: [1, 1, 9], 4: [1, 2, 10]}
    p = image.to_json()["topics"]["t"]["partitions"]["0"]
    assert (p["isr"], p["leader"], p["leaderEpoch"], p["partitionEpoch"]) == ([2], 2, 6, 11)


def test_stretches_of_partition_changes_are_taken_at_once_as_one_by_one_takes_them(monkeypatch):
    """``Topics.change_run`` takes a block's PartitionChangeRecords of shapes merged before, and leaves to
    ``apply_block``'s record by record path a shape seen first, a missing partition, a refused value and a
    transaction's records; the image after any cut and at any mark is what ``apply`` one by one leaves."""
    from kraftlog.state import topics
    from kraftlog.state.topics import topic_held_json

    monkeypatch.setattr(topics, "_shaped", {})  # no shape merged yet
    monkeypatch.setattr(topics, "_run", topics._run_source())

    def change(partition: int, **fields):
        return _rec("PARTITION_CHANGE_RECORD", 1, partitionId=partition, topicId=T, **fields)

    recs = [*_records()[:2], _rec("PARTITION_RECORD", 1, partitionId=1, topicId=T, replicas=[2, 3], isr=[2, 3],
                                  removingReplicas=[], addingReplicas=[], leader=2, leaderEpoch=0, partitionEpoch=0),
            change(0, isr=[1, 2]), change(1, isr=[3]), change(0, isr=[2]), change(0, leader=2), change(1, leader=3),
            change(4, isr=[1]), change(1, isr=[2, 3]), change(0, leader=3, leaderRecoveryState=7),
            _rec("NO_OP_RECORD", 0), change(0, isr=[1]), _rec("BEGIN_TRANSACTION_RECORD", 0, name="m"),
            change(1, isr=[2]), change(0, leader=1), _rec("END_TRANSACTION_RECORD", 0), change(1, isr=[3]),
            change(0, leader=-1), change(1, leader=2, isr=[2, 3])]
    epochs = [1] * len(recs)
    taken = []
    run = topics.Topics.change_run

    def noted(self, recs, start):
        end = run(self, recs, start)
        taken.append(end - start)
        return end

    monkeypatch.setattr(topics.Topics, "change_run", noted)
    for cut in range(len(recs) + 1):
        for marks in ([], [k for k in range(cut) if k % 3 == 2 and not records.is_no_op(recs[k])]):
            block, one_by_one, seen, expected = ClusterImage.empty(), _General(), {}, {}
            if cut:
                block.apply_block(_block(recs, epochs).part(0, cut), marks,
                                  lambda i, block=block, seen=seen: seen.update(
                                      {i: (block.topics.hold_topic(T), block.to_json())}))
            for offset, rec in enumerate(recs[:cut]):
                one_by_one.apply(rec, 10 + offset, 2000 + offset, 1)
                if offset in marks:
                    expected[offset] = (one_by_one.topics.topic_json(T), one_by_one.to_json())
            assert block.to_json(redact=False) == one_by_one.to_json(redact=False), (cut, marks)
            assert (block.provenance, block.problems, _held(block)) == (
                one_by_one.provenance, one_by_one.problems, _held(one_by_one)), (cut, marks)
            assert {i: (topic_held_json(h), j) for i, (h, j) in seen.items()} == expected, (cut, marks)
    assert max(taken) >= 2  # a stretch taken at once
    p = one_by_one.to_json()["topics"]["t"]["partitions"]
    assert [(q["isr"], q["leader"], q["leaderEpoch"], q["partitionEpoch"]) for q in (p["0"], p["1"])] == [
        ([1], -1, 8, 13), ([2, 3], 2, 2, 6)]
