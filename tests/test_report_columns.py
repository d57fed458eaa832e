"""The report's columnar fold (issue 18): NoOps and plain PartitionChangeRecords folded a stretch at a
time (``collect._Walker.add_records``, ``report.columns``) give the model, the page and the image that
``add`` gives record by record, on generated logs, the real corpus, fixtures and literal records; and
the fold takes only what the declarations say it was built for."""

import dataclasses
import importlib
import re
from pathlib import Path

import pytest

from kraftlog.cli.main import main
from kraftlog.files.logdir import find_nodes
from kraftlog.files.records import Block, iter_items
from kraftlog.report import columns, write_report
from kraftlog.schema import ControlRecord, decode_metadata, encode_control, encode_metadata
from kraftlog.state.image import ClusterImage
from kraftlog.state.topics import PARTITION_CHANGE_RECORD, Merge
from kraftlog.wire.batch import CONTROL_BIT, Record, encode_batch

collect_module = importlib.import_module("kraftlog.report.collect")
REPO = Path(__file__).resolve().parent.parent
DAY = 86_400_000
START = 1_735_689_600_000
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
LEADER_CHANGE = ("LEADER_CHANGE",)  # a control record in ``_literal_log``'s plan
GONE_ID = "AAAAAAAAAAAAAAAAAAAAAg"


def _model_text(m) -> dict:
    """Every field of the model as text (capped lists in full, with their totals)."""
    out = {}
    for f in dataclasses.fields(m):
        v = getattr(m, f.name)
        if f.name == "brokers":
            v = {k: (b.start_state, list(b.events), b.events.total) for k, b in v.items()}
        elif hasattr(v, "head"):
            v = (list(v), v.total)
        out[f.name] = repr(v)
    return out


def _both(node, tmp_path: Path, monkeypatch, **kw) -> dict:
    """The model, page and final image of ``collect`` with the fold and without; asserts they agree.
    Returns how many stretches the fold took and what went by ``add``."""
    seen, folded = {}, {"folds": 0, "changes": 0}
    fold = collect_module._Walker._fold

    def counting(self, run, a, z, kind, *rest):
        folded["folds"] += 1
        folded["changes"] += int((kind == collect_module._CHANGE).sum())
        return fold(self, run, a, z, kind, *rest)

    finish = collect_module._Walker.finish

    def keep_image(self):
        finish(self)
        seen["image"] = self.image.to_json(False)

    monkeypatch.setattr(collect_module._Walker, "_fold", counting)
    monkeypatch.setattr(collect_module._Walker, "finish", keep_image)
    results = {}
    for fast in (True, False):
        monkeypatch.setattr(collect_module, "FAST_COLUMNS", fast)
        model = collect_module.collect(node, **kw)
        out = tmp_path / f"page-{fast}.html"
        write_report(model, out)
        page = re.sub(rb" on \d{4}-\d\d-\d\d \d\d:\d\d UTC;", b"", out.read_bytes())  # when it was made
        results[fast] = (_model_text(model), page, seen.pop("image"))
    fast, slow = results[True], results[False]
    assert [k for k in fast[0] if fast[0][k] != slow[0][k]] == []
    assert fast[1] == slow[1] and fast[2] == slow[2]
    return folded


def test_the_fold_is_built_for_what_the_declarations_say(monkeypatch):
    assert columns.BUILT and columns.built()
    changed = dict(PARTITION_CHANGE_RECORD, leader=Merge("sentinel", "leader", -1, bumps="leaderEpoch"))
    monkeypatch.setattr(columns, "PARTITION_CHANGE_RECORD", changed)
    assert not columns.built()  # a leader field that merges otherwise
    monkeypatch.setattr(columns, "PARTITION_CHANGE_RECORD", {**PARTITION_CHANGE_RECORD, "newField": Merge("replace")})
    assert not columns.built()  # a field the schema does not declare
    monkeypatch.setattr(columns, "PARTITION_CHANGE_RECORD", {k: v for k, v in PARTITION_CHANGE_RECORD.items()
                                                             if k != "directories"})
    assert not columns.built()  # a field the schema declares and the merge table does not name
    monkeypatch.setattr(columns, "BUILT", False)
    assert columns.change_of(decode_metadata(_change(0, isr=[1, 2]))) is None  # not built: nothing taken


def _change(partition: int, version: int = 0, unknown=(), **fields) -> bytes:
    return encode_metadata("PARTITION_CHANGE_RECORD", version, {"partitionId": partition, "topicId": TOPIC_ID, **fields},
                           unknown)


def test_which_records_the_fold_takes():
    take = columns.change_of
    assert take(decode_metadata(_change(3, isr=[1, 2]))) == ((TOPIC_ID, 3), -2, (1, 2))
    assert take(decode_metadata(_change(3, leader=2))) == ((TOPIC_ID, 3), 2, None)
    assert take(decode_metadata(_change(3, 2, leader=-1, isr=[]))) == ((TOPIC_ID, 3), -1, ())
    assert take(decode_metadata(_change(3))) == ((TOPIC_ID, 3), -2, None)
    for other in (_change(3, replicas=[1, 2]), _change(3, leaderRecoveryState=1), _change(3, 1, directories=[]),
                  _change(3, 2, eligibleLeaderReplicas=[1]), _change(3, 2, lastKnownElr=[]),
                  _change(3, unknown=[("", 9, b"\x01")], isr=[1]),
                  encode_metadata("PARTITION_RECORD", 0, {"partitionId": 3, "topicId": TOPIC_ID, "replicas": [1],
                                                           "isr": [1], "leader": 1}),
                  encode_metadata("NO_OP_RECORD", 0, {})):
        assert take(decode_metadata(other)) is None, decode_metadata(other).to_json()
    newer = bytearray(_change(3, isr=[1]))
    newer[2] = 9  # version 9: read at the highest declared version
    rec = decode_metadata(bytes(newer))
    assert rec.decoded_as is not None and take(rec) is None
    assert take(decode_metadata(_change(3, isr=[1])[:-2])) is None  # cut: an error


def _literal_log(tmp_path: Path) -> Path:
    """Brokers, a topic and its partitions, then changes of every kind the report reads: ISR shrinks
    and expands, leader moves (to a fenced broker, unclean, to none), changes the fold does not take
    (replicas, recovery state), one for a partition that does not exist, for a removed topic, inside
    committed and aborted transactions, across a new epoch, untimed, timestamps going back, a min ISR
    config between, records of one batch, weeks that widen the buckets, and control records (a leader's
    change) between NoOps and changes."""
    def broker(b: int, fenced: bool) -> tuple:
        return ("REGISTER_BROKER_RECORD", 0, {"brokerId": b, "incarnationId": f"AAAAAAAAAAAAAAAAAAAA{'BCDEFGH'[b]}A",
                                              "brokerEpoch": 10 + b, "rack": None, "fenced": fenced})

    def part(p: int, replicas: list[int], leader: int, topic: str = TOPIC_ID) -> tuple:
        return ("PARTITION_RECORD", 0, {"partitionId": p, "topicId": topic, "replicas": replicas, "isr": replicas,
                                        "leader": leader, "leaderEpoch": 0, "partitionEpoch": 0})

    def change(p: int, version: int = 0, topic: str = TOPIC_ID, **fields) -> tuple:
        return ("PARTITION_CHANGE_RECORD", version, {"partitionId": p, "topicId": topic, **fields})

    setup = [broker(1, False), broker(2, False), broker(3, False), broker(4, True),
             ("TOPIC_RECORD", 0, {"name": "t", "topicId": TOPIC_ID}),
             ("TOPIC_RECORD", 0, {"name": "gone", "topicId": GONE_ID}),
             *(part(p, [1, 2, 3], 1 + p % 3) for p in range(6)), part(0, [1, 2], 1, GONE_ID),
             ("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": "t", "name": "min.insync.replicas", "value": "2"})]
    storm = [change(0, isr=[1, 2]), change(1, isr=[2]), change(0, isr=[1]), change(2, leader=4, isr=[3, 4]),
             change(3, leader=2), change(3, leader=2), change(4, leader=-1, isr=[]), change(4, leader=3, isr=[3]),
             change(5, isr=[1, 2, 3]), change(0, isr=[1, 2, 3]), change(1, isr=[2, 3], leader=3), change(9, isr=[1]),
             change(0, topic=GONE_ID, isr=[1])]
    plan = [(1, START + i, r) for i, r in enumerate(setup)]
    plan += [(1, START + 100 + i, r) for i, r in enumerate(storm)]
    plan += [(1, START + 200, ("NO_OP_RECORD", 0, {}))] * 5
    plan += [(1, START + 201, LEADER_CHANGE), (1, START + 202, ("NO_OP_RECORD", 0, {})), (1, START + 203, change(5, isr=[2]))]
    plan += [(1, 0, change(1, isr=[1, 2, 3])), (1, START + 150, change(2, isr=[4])), (2, START + 300, change(5, isr=[1]))]
    plan += [(2, START + 301, change(5, replicas=[1, 2], isr=[1, 2], leader=2)), (2, START + 302, change(5, isr=[2])),
             (2, START + 303, change(3, leaderRecoveryState=1)), (2, START + 304, change(3, isr=[2, 3]))]
    plan += [(2, START + 400, ("BEGIN_TRANSACTION_RECORD", 0, {"name": "a"})), (2, START + 401, change(0, isr=[2])),
             (2, START + 402, ("ABORT_TRANSACTION_RECORD", 0, {"reason": "x"})),
             (2, START + 403, ("BEGIN_TRANSACTION_RECORD", 0, {"name": "c"})), (2, START + 404, change(0, leader=2)),
             (2, START + 405, ("END_TRANSACTION_RECORD", 0, {})), (2, START + 406, change(0, isr=[1, 2]))]
    plan += [(2, START + 500, ("BROKER_REGISTRATION_CHANGE_RECORD", 0, {"brokerId": 4, "brokerEpoch": 14,
                                                                          "fenced": -1})),
             (2, START + 501, change(2, isr=[3, 4, 2])),
             (2, START + 502, ("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": "t",
                                                    "name": "min.insync.replicas", "value": "3"})),
             (2, START + 503, change(1, isr=[3])), (2, START + 504, ("REMOVE_TOPIC_RECORD", 0, {"topicId": GONE_ID})),
             (2, START + 505, change(0, topic=GONE_ID, isr=[2]))]
    plan += [(3, START + 3 * DAY + i * 2 * DAY, change(i % 6, isr=[1, 2, 3][: 1 + i % 3], leader=1 + i % 2))
             for i in range(30)]
    plan += [(3, START + 70 * DAY, ("NO_OP_RECORD", 0, {}))] * 3
    plan += [(3, START + 70 * DAY + 1, LEADER_CHANGE), (3, START + 70 * DAY + 2, change(5, isr=[1, 2]))]
    batches, offset, i = [], 0, 0
    while i < len(plan):
        epoch, ts, rec = plan[i]
        group = [rec]
        if (i % 7 == 3 and i + 1 < len(plan) and plan[i + 1][0] == epoch and min(ts, plan[i + 1][1]) > 0
                and LEADER_CHANGE not in (rec, plan[i + 1][2])):  # one batch
            group.append(plan[i + 1][2])
            i += 1
        i += 1
        if rec is LEADER_CHANGE:
            key, value = encode_control("LEADER_CHANGE", {"version": 0, "leaderId": 1, "voters": []})
            records = [Record(offset, ts, key, value)]
        else:
            records = [Record(offset + d, ts + d, None, encode_metadata(*r), timestamp_delta=d, offset_delta=d)
                       for d, r in enumerate(group)]
        batches.append(encode_batch(records, base_offset=offset, base_timestamp=ts, partition_leader_epoch=epoch,
                                    attributes=CONTROL_BIT if rec is LEADER_CHANGE else 0))
        offset += len(records)
    log_dir = tmp_path / "node"
    (log_dir / "__cluster_metadata-0").mkdir(parents=True)
    (log_dir / "meta.properties").write_text("version=1\ncluster.id=lit\nnode.id=1\n")
    (log_dir / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"".join(batches))
    return log_dir


def test_the_fold_agrees_with_add_on_literal_records(tmp_path, monkeypatch):
    node = find_nodes(str(_literal_log(tmp_path)))[0]
    blocks = [b for b in iter_items(node.segments[0]) if type(b) is Block]
    controls = 0
    for b in blocks:  # a block's control records (kv past the walk's values) go the object way
        kind = collect_module._Walker(collect_module.Timeline("", "", 1, ""), ClusterImage(), 10, True)._kinds(b)[0]
        is_control = [type(r) is ControlRecord for r in map(b.decoded.__getitem__, b.kv.tolist())]
        controls += sum(is_control)
        assert all(k == collect_module._OTHER for k, c in zip(kind.tolist(), is_control, strict=True) if c)
    assert controls == 2
    for buckets in (10, 240):
        folded = _both(node, tmp_path, monkeypatch, max_buckets=buckets)
        assert folded["folds"] >= 5 and folded["changes"] >= 20, folded
    m = collect_module.collect(node)
    assert m.problems.total and m.aborted_records == 1 and m.untimed == 1
    assert any("UNCLEAN" in e.detail for e in m.leader_events)


def test_the_fold_agrees_with_add_on_generated_logs(tmp_path, monkeypatch):
    for name, args in (("quiet", ["--duration", "2d", "--brokers", "4", "--seed", "3"]),
                       ("busy", ["--duration", "6h", "--brokers", "5", "--topics", "12", "--seed", "7",
                                 "--events-per-hour", "120", "--metadata-version", "3.3..4.1"])):
        out = tmp_path / name
        assert main(["generate", str(out), *args]) == 0
        node = find_nodes(str(out))[0]
        folded = _both(node, tmp_path, monkeypatch)
        assert folded["changes"] > 100, (name, folded)
        _both(node, tmp_path, monkeypatch, max_buckets=10)


def test_the_fold_agrees_with_add_on_fixtures_and_the_real_corpus(tmp_path, monkeypatch, corpus):
    nodes = find_nodes(str(REPO / "fixtures")) + find_nodes(str(corpus / "real"))
    assert len(nodes) > 10
    changes = 0
    for node in nodes:
        if not node.segments and not node.snapshots:
            continue
        try:
            changes += _both(node, tmp_path, monkeypatch)["changes"]
        except AssertionError as e:
            pytest.fail(f"{node.log_dir}: {e}")
    assert changes > 0
