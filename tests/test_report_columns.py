"""The report's columnar fold (issue 18): NoOps and plain PartitionChangeRecords folded a stretch at a
time (``collect._Walker.add_records``, ``report.columns``) give the model, the page and the image that
``add`` gives record by record, on generated logs, the real corpus, fixtures and literal records; and
the fold takes only what the declarations say it was built for."""

import dataclasses
import functools
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
records_module = importlib.import_module("kraftlog.schema.records")
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
    monkeypatch.setattr(columns, "PARTITION_CHANGE_RECORD", {**PARTITION_CHANGE_RECORD, "replicas": Merge(
        "placement", "replicas", bumps="leaderEpoch")})
    assert not columns.built()  # replicas that would bump an epoch the fold reads
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
    assert take(decode_metadata(_change(3, isr=[1, 2]))) == ((TOPIC_ID, 3), -2, (1, 2), None)
    assert take(decode_metadata(_change(3, leader=2))) == ((TOPIC_ID, 3), 2, None, None)
    assert take(decode_metadata(_change(3, 2, leader=-1, isr=[]))) == ((TOPIC_ID, 3), -1, (), None)
    assert take(decode_metadata(_change(3))) == ((TOPIC_ID, 3), -2, None, None)
    # fields the report does not read, passed to ``merge_partition`` as they come
    assert {"directories", "leaderRecoveryState", "addingReplicas", "removingReplicas", "lastKnownElr"} == columns.PASSED
    assert take(decode_metadata(_change(3, leaderRecoveryState=1, isr=[1]))) == (
        (TOPIC_ID, 3), -2, (1,), {"leaderRecoveryState": 1})
    assert take(decode_metadata(_change(3, 1, directories=[]))) == ((TOPIC_ID, 3), -2, None, {"directories": []})
    assert take(decode_metadata(_change(3, 2, lastKnownElr=[], leader=1))) == ((TOPIC_ID, 3), 1, None, {"lastKnownElr": []})
    # a reassignment's replicas: their count read, the field passed to the merge with the others
    assert columns.COUNTED == "replicas"
    assert take(decode_metadata(_change(3, replicas=[1, 2]))) == ((TOPIC_ID, 3), -2, None, {"replicas": [1, 2]})
    assert take(decode_metadata(_change(3, 1, replicas=[1], directories=[TOPIC_ID], isr=[1], leader=1))) == (
        (TOPIC_ID, 3), 1, (1,), {"replicas": [1], "directories": [TOPIC_ID]})
    for other in (_change(3, 2, eligibleLeaderReplicas=[1]),
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


def _broker(b: int, fenced: bool) -> tuple:
    return ("REGISTER_BROKER_RECORD", 0, {"brokerId": b, "incarnationId": f"AAAAAAAAAAAAAAAAAAAA{'BCDEFGH'[b]}A",
                                          "brokerEpoch": 10 + b, "rack": None, "fenced": fenced})


def _part(p: int, replicas: list[int], leader: int, topic: str = TOPIC_ID) -> tuple:
    return ("PARTITION_RECORD", 0, {"partitionId": p, "topicId": topic, "replicas": replicas, "isr": replicas,
                                    "leader": leader, "leaderEpoch": 0, "partitionEpoch": 0})


def _plan_change(p: int, version: int = 0, topic: str = TOPIC_ID, **fields) -> tuple:
    return ("PARTITION_CHANGE_RECORD", version, {"partitionId": p, "topicId": topic, **fields})


def _literal_log(tmp_path: Path) -> Path:
    """Brokers, a topic and its partitions, then changes of every kind the report reads: ISR shrinks
    and expands, leader moves (to a fenced broker, unclean, to none), changes the fold does not take
    (replicas, recovery state), one for a partition that does not exist, for a removed topic, inside
    committed and aborted transactions, across a new epoch, untimed, timestamps going back, a min ISR
    config between, records of one batch, weeks that widen the buckets, and control records (a leader's
    change) between NoOps and changes."""
    setup = [_broker(1, False), _broker(2, False), _broker(3, False), _broker(4, True),
             ("TOPIC_RECORD", 0, {"name": "t", "topicId": TOPIC_ID}),
             ("TOPIC_RECORD", 0, {"name": "gone", "topicId": GONE_ID}),
             *(_part(p, [1, 2, 3], 1 + p % 3) for p in range(6)), _part(0, [1, 2], 1, GONE_ID),
             ("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": "t", "name": "min.insync.replicas", "value": "2"})]
    storm = [_plan_change(0, isr=[1, 2]), _plan_change(1, isr=[2]), _plan_change(0, isr=[1]), _plan_change(2, leader=4, isr=[3, 4]),
             _plan_change(3, leader=2), _plan_change(3, leader=2), _plan_change(4, leader=-1, isr=[]), _plan_change(4, leader=3, isr=[3]),
             _plan_change(5, isr=[1, 2, 3]), _plan_change(0, isr=[1, 2, 3]), _plan_change(1, isr=[2, 3], leader=3), _plan_change(9, isr=[1]),
             _plan_change(0, topic=GONE_ID, isr=[1])]
    plan = [(1, START + i, r) for i, r in enumerate(setup)]
    plan += [(1, START + 100 + i, r) for i, r in enumerate(storm)]
    plan += [(1, START + 200, ("NO_OP_RECORD", 0, {}))] * 5
    plan += [(1, START + 201, LEADER_CHANGE), (1, START + 202, ("NO_OP_RECORD", 0, {})), (1, START + 203, _plan_change(5, isr=[2]))]
    plan += [(1, 0, _plan_change(1, isr=[1, 2, 3])), (1, START + 150, _plan_change(2, isr=[4])), (2, START + 300, _plan_change(5, isr=[1]))]
    plan += [(2, START + 301, _plan_change(5, replicas=[1, 2], isr=[1, 2], leader=2)), (2, START + 302, _plan_change(5, isr=[2])),
             (2, START + 303, _plan_change(3, leaderRecoveryState=1)), (2, START + 304, _plan_change(3, isr=[2, 3]))]
    plan += [(2, START + 400, ("BEGIN_TRANSACTION_RECORD", 0, {"name": "a"})), (2, START + 401, _plan_change(0, isr=[2])),
             (2, START + 402, ("ABORT_TRANSACTION_RECORD", 0, {"reason": "x"})),
             (2, START + 403, ("BEGIN_TRANSACTION_RECORD", 0, {"name": "c"})), (2, START + 404, _plan_change(0, leader=2)),
             (2, START + 405, ("END_TRANSACTION_RECORD", 0, {})), (2, START + 406, _plan_change(0, isr=[1, 2]))]
    plan += [(2, START + 500, ("BROKER_REGISTRATION_CHANGE_RECORD", 0, {"brokerId": 4, "brokerEpoch": 14,
                                                                          "fenced": -1})),
             (2, START + 501, _plan_change(2, isr=[3, 4, 2])),
             (2, START + 502, ("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": "t",
                                                    "name": "min.insync.replicas", "value": "3"})),
             (2, START + 503, _plan_change(1, isr=[3])), (2, START + 504, ("REMOVE_TOPIC_RECORD", 0, {"topicId": GONE_ID})),
             (2, START + 505, _plan_change(0, topic=GONE_ID, isr=[2]))]
    plan += [(3, START + 3 * DAY + i * 2 * DAY, _plan_change(i % 6, isr=[1, 2, 3][: 1 + i % 3], leader=1 + i % 2))
             for i in range(30)]
    plan += [(3, START + 70 * DAY, ("NO_OP_RECORD", 0, {}))] * 3
    plan += [(3, START + 70 * DAY + 1, LEADER_CHANGE), (3, START + 70 * DAY + 2, _plan_change(5, isr=[1, 2]))]
    return _write_log(tmp_path, plan)


def _write_log(tmp_path: Path, plan: list[tuple]) -> Path:
    """A node's log of ``plan``'s (epoch, time, record) in order, pairs of records sometimes in one batch."""
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
            records = [Record(offset + d, ts + d, None, r if type(r) is bytes else encode_metadata(*r),
                              timestamp_delta=d, offset_delta=d) for d, r in enumerate(group)]
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


def _held_log(tmp_path: Path, days: bool = True) -> Path:
    """Changes folded while records that read no partition come between (a broker fenced and unfenced
    while it leads changed partitions, a transaction, a config), then ones that do (a record of a type
    the fold does not list, an undecodable one), a partition's changes in one stretch going back in time and
    forth, and (``days``) ones days later."""
    change, noop = _plan_change, ("NO_OP_RECORD", 0, {})

    def fence(b: int, fenced: int) -> tuple:
        return ("BROKER_REGISTRATION_CHANGE_RECORD", 0, {"brokerId": b, "brokerEpoch": 10 + b, "fenced": fenced})

    setup = [_broker(1, False), _broker(2, False), _broker(3, False), ("TOPIC_RECORD", 0, {"name": "t", "topicId": TOPIC_ID}),
             *(_part(p, [1, 2, 3], (1, 2, 3, 1)[p]) for p in range(4)),
             ("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": "t", "name": "min.insync.replicas", "value": "2"})]
    later = [change(0, isr=[1, 2]), change(1, isr=[2]), change(3, isr=[1, 3]), noop, noop, fence(1, 1),
             change(0, isr=[1]), noop, change(3, leader=3), ("BEGIN_TRANSACTION_RECORD", 0, {"name": "a"}),
             change(1, isr=[2, 3]), ("END_TRANSACTION_RECORD", 0, {}), change(1, leader=3),
             ("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": "t", "name": "retention.ms", "value": "1"}),
             change(2, isr=[3]), fence(1, -1), change(0, isr=[1, 2, 3]), noop]
    plan = [(1, START + i, r) for i, r in enumerate(setup)] + [(1, START + 100 + i, r) for i, r in enumerate(later)]
    plan += [(1, START + 250, change(2, isr=[2, 3])), (1, START + 50, change(2, isr=[3])),
             (1, START + 250, change(2, isr=[2])), (1, START + 200, change(3, isr=[3])),
             (1, START + 201, ("CLEAR_ELR_RECORD", 0, {"topicName": "t"})), (1, START + 202, change(0, isr=[1])),
             (1, START + 203, bytes([1, 99, 0, 0])),  # an api key no schema declares: not decoded
             (1, START + 204, change(0, leader=2))]
    if days:
        plan += [(1, START + DAY, change(3, isr=[1, 3])), (1, START + 3 * DAY, change(3, isr=[3])),
                 (1, START + 3 * DAY + 1, change(0, leader=1))]
    return _write_log(tmp_path, plan)


def test_partitions_stay_held_across_records_that_do_not_read_them(tmp_path, monkeypatch):
    """Held partitions (``_hold``) stay in columns across a broker's fencing (rechecked there), a transaction
    and a config; a record of a type the fold does not list, or one not decoded, writes them all back first
    (fails closed); model, page and image as ``add`` gives them, and the health they went through."""
    node = find_nodes(str(_held_log(tmp_path)))[0]
    held = []
    add = collect_module._Walker.add

    def noting(self, e):
        before = len(self.held)
        add(self, e)
        if collect_module.FAST_COLUMNS:
            held.append((e.record.type, before, len(self.held)))

    monkeypatch.setattr(collect_module._Walker, "add", noting)
    for buckets, flips in ((10, False), (240, False), (10, True), (240, True)):
        monkeypatch.setattr(collect_module, "FOLDED_FLIPS", flips)  # (folded: the fencing goes by no ``add``)
        held.clear()
        _both(node, tmp_path, monkeypatch, max_buckets=buckets)
        fast = list(held)
        assert [h for h in fast if h[0] == "BROKER_REGISTRATION_CHANGE_RECORD"] == [] if flips else [
            ("BROKER_REGISTRATION_CHANGE_RECORD", 3, 3), ("BROKER_REGISTRATION_CHANGE_RECORD", 4, 4)]
        # the min ISR config of the setup goes by ``add``; the retention config, carried by the fold, does not
        assert [h for h in fast if h[0] in ("CONFIG_RECORD", "END_TRANSACTION_RECORD")] == [
            ("CONFIG_RECORD", 0, 0), ("END_TRANSACTION_RECORD", 2, 2)]
        assert ("PARTITION_CHANGE_RECORD", 3, 2) in fast  # in the transaction: its partition written back
        assert ("CLEAR_ELR_RECORD", 4, 0) in fast and ("UNKNOWN", 1, 0) in fast
    # without the days after, the buckets never widen: the cells' order as made (a partition's cells in one
    # stretch, in buckets back and forth in time) is the model's
    short = find_nodes(str(_held_log(tmp_path / "short", days=False)))[0]
    _both(short, tmp_path, monkeypatch, max_buckets=100)
    m = collect_module.collect(node)
    # min ISR 2 of 3 replicas: p0 and p3 led by broker 1 while it is fenced, p1's ISR grows in the transaction
    assert [h for _, _, h in m.health_changes] == [
        (0, 0, 0, 1, 0), (0, 0, 1, 2, 0), (0, 0, 1, 3, 0), (0, 2, 1, 3, 0), (0, 2, 2, 3, 0), (0, 1, 2, 3, 0),
        (0, 1, 1, 3, 0), (0, 1, 2, 4, 0), (0, 0, 2, 4, 0), (0, 0, 1, 3, 0), (0, 0, 0, 3, 0), (0, 0, 1, 3, 0),
        (0, 0, 2, 3, 0), (0, 0, 3, 4, 0), (0, 0, 2, 4, 0), (0, 0, 3, 4, 0)]
    assert [(e.offset, e.subject, e.value) for e in m.leader_events] == [(17, "t-3", 3), (21, "t-1", 3), (34, "t-0", 2),
                                                                         (37, "t-0", 1)]
    t0 = m.partitions[(TOPIC_ID, 0)]
    assert (t0.leader, t0.isr, t0.leader_changes, t0.shrinks, t0.expands, t0.unclean) == (1, (1,), 2, 3, 1, 1)
    assert [(c.first_offset, c.last_offset, c.isr, c.leader_changes) for c in t0.cells.values()] == [(9, 34, 1, 1),
                                                                                                       (37, 37, 1, 1)]
    t2 = m.partitions[(TOPIC_ID, 2)]
    assert (t2.isr, t2.shrinks, t2.expands, [(c.first_offset, c.last_offset) for c in t2.cells.values()]) == (
        (2,), 3, 2, [(28, 29)])  # widened: the cell of the earliest time first


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
    # partitions told apart in a table and grouped by a comparison sort (the others' ways: small stretches sorted,
    # groups by radix)
    monkeypatch.setattr(collect_module, "_SORTED_KEYS", -1)
    monkeypatch.setattr(collect_module, "_RADIX_GROUPS", 0)
    _both(node, tmp_path, monkeypatch)


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


def _aside_log(tmp_path: Path) -> Path:
    """Records of every type a fold carries (``collect._ASIDE_TYPES``) among NoOps and changes: quotas, ACLs
    (one removed that was never added), SCRAM credentials, tokens, producer ids, a controller, configs (a
    secret, one deleted, one untimed, one first in its bucket), and min ISR configs, which a fold does not carry."""
    change, noop = _plan_change, ("NO_OP_RECORD", 0, {})

    def config(name: str, value: str | None, resource_type: int = 2, resource: str = "t") -> tuple:
        return ("CONFIG_RECORD", 0, {"resourceType": resource_type, "resourceName": resource, "name": name,
                                     "value": value})

    quota = ("CLIENT_QUOTA_RECORD", 0, {"entity": [{"entityType": "user", "entityName": "alice"}],
                                        "key": "producer_byte_rate", "value": 1024.0})
    acl = ("ACCESS_CONTROL_ENTRY_RECORD", 0, {"id": "AAAAAAAAAAAAAAAAAAAAAw", "resourceType": 2, "resourceName": "t",
                                              "patternType": 3, "principal": "User:alice", "host": "*",
                                              "operation": 3, "permissionType": 3})
    setup = [_broker(1, False), _broker(2, False), _broker(3, False), ("TOPIC_RECORD", 0, {"name": "t", "topicId": TOPIC_ID}),
             *(_part(p, [1, 2, 3], 1 + p) for p in range(3)), config("min.insync.replicas", "2")]
    stretch = [change(0, isr=[1, 2]), noop, quota, change(1, isr=[2]), acl, noop, config("retention.ms", "1"),
               config("ssl.keystore.password", "hunter2", 4, "1"), change(0, isr=[1, 3]),
               ("REMOVE_ACCESS_CONTROL_ENTRY_RECORD", 0, {"id": "AAAAAAAAAAAAAAAAAAAAAw"}),
               ("REMOVE_ACCESS_CONTROL_ENTRY_RECORD", 0, {"id": "AAAAAAAAAAAAAAAAAAAABA"}),
               ("USER_SCRAM_CREDENTIAL_RECORD", 0, {"name": "alice", "mechanism": 2}),
               ("REMOVE_USER_SCRAM_CREDENTIAL_RECORD", 0, {"name": "alice", "mechanism": 2}),
               ("DELEGATION_TOKEN_RECORD", 0, {"owner": "User:alice", "tokenId": "tok"}),
               ("REMOVE_DELEGATION_TOKEN_RECORD", 0, {"tokenId": "tok"}),
               ("PRODUCER_IDS_RECORD", 0, {"brokerId": 1, "brokerEpoch": 11, "nextProducerId": 5000}),
               ("REGISTER_CONTROLLER_RECORD", 0, {"controllerId": 3000, "incarnationId": "AAAAAAAAAAAAAAAAAAAABQ"}),
               config("retention.ms", None), change(2, leader=2), config("min.insync.replicas", "3"),
               change(0, isr=[1, 2, 3]), noop]
    plan = [(1, START + i, r) for i, r in enumerate(setup)] + [(1, START + 100 + i, r) for i, r in enumerate(stretch)]
    plan += [(1, 0, config("segment.ms", "5")), (1, START + 200, change(1, isr=[2, 3])),
             (1, START + DAY, quota), (1, START + DAY + 1, noop), (1, START + DAY + 2, change(1, isr=[1, 2, 3])),
             (1, START + DAY + 3, ("PRODUCER_IDS_RECORD", 0, {"brokerId": 2, "brokerEpoch": 12, "nextProducerId": 6000})),
             (1, START + 3 * DAY, config("min.insync.replicas", "1")), (1, START + 3 * DAY + 1, noop)]

    def brokers(b: int, epoch: int | None = None, **fields) -> tuple:
        return ("BROKER_REGISTRATION_CHANGE_RECORD", 1, {"brokerId": b, "brokerEpoch": epoch or 10 + b, **fields})

    # broker records: fenced registered (carried), in controlled shutdown (carried), of a wrong epoch (refused),
    # a fenced one unregistered (carried), the leader of t-1 and t-2 fenced (not carried: their health moves)
    plan += [(1, START + 3 * DAY + 2 + i, r) for i, r in enumerate([
        _broker(4, True), brokers(2, inControlledShutdown=1), change(1, isr=[1, 2]), brokers(2, 99, fenced=1),
        ("UNREGISTER_BROKER_RECORD", 0, {"brokerId": 4, "brokerEpoch": 14}), noop, brokers(2, fenced=1),
        change(2, leader=1), noop,
        # broker 3, leading nothing, fenced (carried), made t-0's leader, unfenced while it leads t-0 (not carried);
        # made t-1's leader and moved off it, then fenced: that stretch ends there (t-1's health read broker 3
        # before it), and the next carries it
        brokers(3, fenced=1), change(0, leader=3), noop, brokers(3, fenced=-1), change(0, leader=1),
        change(1, leader=3), change(1, leader=1), brokers(3, fenced=1), noop])]
    return _write_log(tmp_path, plan)


def test_the_fold_carries_records_that_move_no_partition(tmp_path, monkeypatch):
    """Quotas, ACLs, SCRAM, tokens, producer ids, controllers, configs other than min ISR and broker records that
    leave their broker as available to lead as it was go in log order within a fold's stretch (not by ``add``),
    with model, page and image as ``add`` gives them; a min ISR config, a broker's fencing and a broker record
    that does not replay are not carried (fail closed: ``add``, and the health they move at their offsets)."""
    assert set(collect_module._ASIDE_TYPES) <= collect_module._READS_NO_PARTITION
    node = find_nodes(str(_aside_log(tmp_path)))[0]
    added, kept = [], []
    add = collect_module._Walker.add

    def noting(self, e):
        before = len(self.held)
        add(self, e)
        if collect_module.FAST_COLUMNS and e.record.type in {*collect_module._ASIDE_TYPES, *collect_module._BROKER_CODES}:
            added.append((e.offset, e.record.data.get("name", e.record.type)))
            if e.record.type == "CONFIG_RECORD":  # a min ISR config rechecks the held partitions where they are held
                kept.append((e.offset, before, len(self.held)))

    monkeypatch.setattr(collect_module._Walker, "add", noting)
    for buckets, flips in ((10, False), (240, False), (10, True), (240, True)):
        monkeypatch.setattr(collect_module, "FOLDED_FLIPS", flips)
        added.clear()
        kept.clear()
        folded = _both(node, tmp_path, monkeypatch, max_buckets=buckets)
        assert folded["changes"] >= 5, folded
        assert kept == [(7, 0, 0), (27, 3, 3), (36, 3, 3)]
        # the first record goes by ``add`` (no epoch yet); brokers 2 and 3 register leading nothing (carried);
        # the fencing of a leading broker is folded only with ``FOLDED_FLIPS``
        fenced = [] if flips else [(44, "BROKER_REGISTRATION_CHANGE_RECORD"), (50, "BROKER_REGISTRATION_CHANGE_RECORD")]
        assert added == [(0, "REGISTER_BROKER_RECORD"), (7, "min.insync.replicas"), (27, "min.insync.replicas"),
                         (36, "min.insync.replicas"), (41, "BROKER_REGISTRATION_CHANGE_RECORD"), *fenced]
    m = collect_module.collect(node)
    assert [(e.offset, e.kind, e.subject, e.detail) for e in m.changes] == [
        (7, "config", "TOPIC:t", "min.insync.replicas: (unset) -> 2"),
        (10, "quota", "quota user=alice", "producer_byte_rate = 1024"),
        (12, "acl", "TOPIC:t", "ALLOW User:alice READ from *"),
        (14, "config", "TOPIC:t", "retention.ms: (unset) -> 1"),
        (15, "config", "BROKER:1", "ssl.keystore.password: (unset) -> [redacted]"),
        (17, "acl removed", "TOPIC:t", "ALLOW User:alice READ from *"),
        (18, "acl removed", "ACL", "unknown ACL id AAAAAAAAAAAAAAAAAAAABA"),
        (19, "scram", "user alice", "SCRAM-SHA-512 credential set"),
        (20, "scram", "user alice", "SCRAM-SHA-512 credential removed"),
        (21, "token", "token tok", "issued to User:alice"),
        (22, "token", "token tok", "removed"),
        (25, "config deleted", "TOPIC:t", "retention.ms: 1 -> (unset)"),
        (27, "config", "TOPIC:t", "min.insync.replicas: 2 -> 3"),
        (30, "config", "TOPIC:t", "segment.ms: (unset) -> 5"),
        (32, "quota", "quota user=alice", "producer_byte_rate = 1024"),
        (36, "config", "TOPIC:t", "min.insync.replicas: 3 -> 1")]
    # under min ISR (third) moves at the min ISR config of 3 (27: t-0's ISR of 2 now under it)
    assert [(o, h) for o, _, h in m.health_changes] == [
        (8, (0, 0, 0, 1, 0)), (11, (0, 0, 1, 2, 0)), (27, (0, 0, 2, 2, 0)), (28, (0, 0, 1, 1, 0)), (34, (0, 0, 0, 0, 0)),
        (40, (0, 0, 0, 1, 0)), (44, (0, 2, 0, 1, 0)), (45, (0, 1, 0, 1, 0)),  # 44: broker 2 fenced, leading t-1, t-2
        (48, (0, 2, 0, 1, 0)), (50, (0, 1, 0, 1, 0)), (52, (0, 0, 0, 1, 0))]  # t-0 led by fenced 3; 3 unfenced; t-1 by 3
    assert {b: [(e.offset, e.kind) for e in lane.events] for b, lane in m.brokers.items() if b > 1} == {
        2: [(1, "active"), (39, "shutdown"), (44, "fenced")], 3: [(2, "active"), (47, "fenced"), (50, "active"), (54, "fenced")],
        4: [(38, "fenced"), (42, "absent")]}
    assert list(m.problems)[-1] == ("offset 41 BROKER_REGISTRATION_CHANGE_RECORD: BrokerRegistrationChangeRecord for "
                                    "broker 2 carries epoch 99, but the registration has epoch 12")
    assert [e.detail for e in m.controller_events] == ["registered, incarnation AAAAAAAAAAAAAAAAAAAABQ"]
    assert m.untimed == 1 and m.type_totals["CONFIG_RECORD"] == 7 and m.type_totals["PRODUCER_IDS_RECORD"] == 2


def _walker():
    return collect_module._Walker(collect_module.Timeline("", "", 1, ""), ClusterImage(), 10, True)


def test_leaders_availability_read_by_id_agrees_with_each_leader_told(monkeypatch):
    """``_flags`` reads the availability of leaders 0..255 from a table by broker id and tells each other leader
    (and any of a leader below -1) on its own: both give each partition's leader as unavailable where its broker
    is fenced or not registered, and no partition without a leader as unavailable."""
    import numpy as np

    w = _walker()
    w.image.brokers.registrations = {b: {"fenced": fenced} for b, fenced in ((0, False), (1, True), (3, False),
                                                                              (300, False), (301, True))}
    w.topic_ids, w.topic_codes = ["x"], {"x": 0}
    unavailable = {-1: 0, 0: 0, 1: 1, 2: 1, 3: 0, 255: 1, 300: 0, 301: 1, -3: 0}

    def told(leaders: list[int], looked_up: int) -> list[int]:
        monkeypatch.setattr(collect_module, "_LOOKED_UP", looked_up)
        n = len(leaders)
        flags = w._flags(np.asarray(leaders, np.int64), np.full(n, 2), np.zeros(n, np.int64), np.full(n, 2),
                         np.zeros(n, np.int64))
        assert ((flags & 1) == (np.asarray(leaders) < 0)).all()  # (offline)
        return ((flags >> 1) & 1).tolist()

    for leaders in ([-1, 0, 1, 2, 3, 255, 0, -1], [3, 300, 301, -1, 1], [0, -3, 1], [-1], []):
        for looked_up in (256, 0):
            assert told(leaders, looked_up) == [unavailable[b] for b in leaders], (leaders, looked_up)


def test_isrs_compared_as_bits_agree_with_sets(monkeypatch):
    """``_isr_moves_of`` and ``_isr_holds`` on ISRs of brokers 0..62 as bits give what the sets give, and ISRs
    holding another broker (63, -1) are taken as sets: literal values, then every pair both ways."""
    import numpy as np

    w = _walker()
    isrs = [(1, 2, 3), (1, 2), (2, 3), (5, 5), (5,), (), (0,), (62,), (0, 62), (63,), (1, 63), (-1, 2)]
    codes = np.asarray([w._isr_code(i) for i in isrs], np.int64)
    was, new = np.repeat(codes, len(codes)), np.tile(codes, len(codes))

    def moves(masked: bool, a, b):
        monkeypatch.setattr(collect_module, "MASKED_ISRS", masked)
        shrank, grew = w._isr_moves_of(np.asarray(a), np.asarray(b), np.ones(len(a), bool))
        return shrank.tolist(), grew.tolist()

    def holds(masked: bool, isr, leader):
        monkeypatch.setattr(collect_module, "MASKED_ISRS", masked)
        return w._isr_holds(np.asarray(isr), np.asarray(leader), np.asarray(leader) >= 0).tolist()

    at = {isr: int(c) for isr, c in zip(isrs, codes, strict=True)}
    pairs = [((1, 2, 3), (1, 2)), ((1, 2), (2, 3)), ((5, 5), (5,)), ((), (0,)), ((0, 62), (62,)), ((2, 3), (1, 2, 3))]
    for extra, also in (([], []), ([((1, 2), (1, 63))], [True])):  # all as bits; then one ISR taken as a set
        a, b = [at[x] for x, _ in pairs + extra], [at[y] for _, y in pairs + extra]
        assert moves(True, a, b) == ([True, True, False, False, True, False, *also], [False, True, False, True, False, True, *also])
    cases = [((1, 2, 3), 3), ((1, 2, 3), 4), ((62,), 62), ((0, 62), 0), ((1, 2), 63), ((), 0), ((5, 5), 5), ((0, 62), 64)]
    for extra, also in (([], []), ([((1, 63), 63)], [True])):
        isr, leader = [at[x] for x, _ in cases + extra], [b for _, b in cases + extra]
        assert holds(True, isr, leader) == [True, False, True, True, False, False, True, False, *also]
    for masked in (True, False):  # every pair: the bits where they can be, the sets where not, agree
        assert moves(masked, was, new) == moves(False, was, new)
        leaders = np.arange(-1, 66)
        assert holds(masked, np.repeat(codes, len(leaders)), np.tile(leaders, len(codes))) == \
            holds(False, np.repeat(codes, len(leaders)), np.tile(leaders, len(codes)))
    bits = w._isr_masks()
    assert bits[at[(0, 62)]] == 1 | 1 << 62 and bits[at[(5, 5)]] == 1 << 5 and bits[at[(1, 63)]] == -1 == bits[at[(-1, 2)]]


def test_kinds_told_once_stay_right_when_the_record_cache_is_full(tmp_path, monkeypatch):
    """When ``_kinds``' cache of told records is full it keeps the walk's own: a tiny cache (full at every walk)
    gives the model, page and image ``add`` gives, and records met again in later walks are not told again."""
    out = tmp_path / "busy"
    assert main(["generate", str(out), "--duration", "6h", "--brokers", "5", "--topics", "12", "--seed", "7",
                 "--events-per-hour", "120"]) == 0
    node = find_nodes(str(out))[0]
    told, walked = [], {}
    kind, kinds = collect_module._Walker._kind, collect_module._Walker._kinds

    def counting(self, rec):
        told.append(1)
        return kind(self, rec)

    def walks(self, run):
        walked.setdefault(id(run.decoded), (run.decoded, len({id(v) for v in run.decoded if v is not None})))
        return kinds(self, run)

    # records met again are shared through ``decode_metadata``'s cache: start it fresh, as a process's first walk
    # does, so that what earlier tests decoded (or a rest they left it in) does not decide what is told here
    for name, value in (("_recent", {}), ("_full", records_module._RECENT_ENTRIES), ("_hits", 0), ("_resting", 0)):
        monkeypatch.setattr(records_module, name, value)
    monkeypatch.setattr(collect_module._Walker, "_kind", counting)
    monkeypatch.setattr(collect_module._Walker, "_kinds", walks)
    monkeypatch.setattr(collect_module, "_SEEN_MAX", 8)
    monkeypatch.setattr(collect_module, "JOINED_RECORDS", 1)  # each walk's values on their own
    from kraftlog.files import records, walk  # walks of a MiB, as the commands' were when this was written
    monkeypatch.setattr(records, "walk_file", functools.partial(walk.walk_file, chunk=1 << 15, window=1 << 20))
    assert _both(node, tmp_path, monkeypatch)["changes"] > 100
    # (7 walks of 6,789 values, 4,767 told when written: emptied when full, each walk's would all be told)
    assert len(walked) > 3 and 0 < len(told) < sum(n for _, n in walked.values()) - 1000


def test_whether_a_broker_leads_an_unheld_partition_is_counted_as_it_is_read(tmp_path, monkeypatch):
    """``_may_lead`` counts the held partitions each broker leads (``held_led``) instead of reading them all: at
    every call, on logs whose brokers are fenced and unfenced while they lead held partitions, the count gives
    what reading ``led`` and ``held`` gives, and the model ``add`` gives."""
    may_lead = collect_module._Walker._may_lead
    calls = []

    def checked(self, broker, elected):
        unheld = any(self.key_codes.get(k) not in self.held for k in self.led.get(broker, ()))
        assert (len(self.led.get(broker, ())) > self.held_led.get(broker, 0)) == unheld
        assert sum(self.held_led.values()) == sum(1 for h in self.held.values() if h[4] is not None)
        calls.append(unheld)
        return may_lead(self, broker, elected)

    monkeypatch.setattr(collect_module._Walker, "_may_lead", checked)
    monkeypatch.setattr(collect_module, "FOLDED_FLIPS", False)  # (with it, ``_may_lead`` is not asked)
    _both(find_nodes(str(_aside_log(tmp_path / "aside")))[0], tmp_path, monkeypatch)
    out = tmp_path / "busy"
    assert main(["generate", str(out), "--duration", "6h", "--brokers", "5", "--topics", "12", "--seed", "7",
                 "--events-per-hour", "120"]) == 0
    _both(find_nodes(str(out))[0], tmp_path, monkeypatch)
    assert len(calls) > 50 and True in calls and False in calls


def test_which_records_keep_the_min_isrs_known():
    """A config of another key leaves every min ISR as it was (a ConfigRecord sets or deletes its one key); a min
    ISR config, a topic and a record not decoded do not; a new epoch's leader does (``_leader_change`` forgets them
    where the node's moves: ``tests/test_report_health.py``)."""
    keeps = collect_module._keeps_min_isr

    def config(name: str, value: str | None = "2") -> object:
        return decode_metadata(encode_metadata("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": "t",
                                                                    "name": name, "value": value}))

    topic = decode_metadata(encode_metadata("TOPIC_RECORD", 0, {"name": "t", "topicId": TOPIC_ID}))
    change = decode_metadata(_change(3, isr=[1]))
    assert [keeps(r, r.type) for r in (config("retention.ms"), config("retention.ms", None), change,
                                      config("min.insync.replicas"), config("min.insync.replicas", None), topic,
                                      decode_metadata(_change(3, isr=[1])[:-2]))] == [
        True, True, True, False, False, False, False]
    assert keeps(decode_metadata(encode_metadata("NO_OP_RECORD", 0, {})), "LEADER_CHANGE")


def test_blocks_of_consecutive_offsets_are_folded_as_one(tmp_path, monkeypatch):
    """``collect`` joins blocks of consecutive offsets (up to ``JOINED_RECORDS``) before ``add_records``: fewer
    runs than blocks, each of consecutive offsets, and the model, page and image ``add`` gives."""
    out = tmp_path / "busy"
    assert main(["generate", str(out), "--duration", "6h", "--brokers", "5", "--topics", "12", "--seed", "7",
                 "--events-per-hour", "120"]) == 0
    node = find_nodes(str(out))[0]

    from kraftlog.files import records, walk  # a log this short is one walk with the commands' default walks

    monkeypatch.setattr(records, "walk_file", functools.partial(walk.walk_file, chunk=1024))
    runs = []
    add_records = collect_module._Walker.add_records

    def noting(self, run):
        assert (run.offsets[1:] == run.offsets[:-1] + 1).all()
        runs.append(len(run))
        return add_records(self, run)

    monkeypatch.setattr(collect_module._Walker, "add_records", noting)
    blocks = sum(1 for lf in node.segments for b in iter_items(lf) if type(b) is Block)
    for most, ran in ((1, blocks), (1 << 16, 1)):  # none joined, then all (57,201 records)
        monkeypatch.setattr(collect_module, "JOINED_RECORDS", most)
        runs.clear()
        _both(node, tmp_path, monkeypatch)
        assert len(runs) == ran and sum(runs) == 57201
    assert blocks > 5


def _passed_log(tmp_path: Path) -> Path:
    """Changes with fields the report does not read (``columns.PASSED``) among plain ones and NoOps: directories
    (one per replica, all MIGRATING, and too few: refused), recovery states (one refused), adding and removing
    replicas, lastKnownElr, a partition's passed fields twice in one stretch, and one with a leader move."""
    change, noop = _plan_change, ("NO_OP_RECORD", 0, {})
    d1, d2, d3 = ("AAAAAAAAAAAAAAAAAAAA" + c + "A" for c in "BCD")
    setup = [_broker(1, False), _broker(2, False), _broker(3, False), ("TOPIC_RECORD", 0, {"name": "t", "topicId": TOPIC_ID}),
             *(_part(p, [1, 2, 3], 1 + p % 3) for p in range(4))]
    later = [change(0, isr=[1, 2]), noop, change(1, 1, directories=[d1, d2, d3]), change(1, isr=[2, 3]),
             change(2, leaderRecoveryState=1), noop, change(2, leaderRecoveryState=0, leader=2, isr=[2]),
             change(1, 1, directories=[d3, d2, d1]), change(0, isr=[1, 2, 3]),
             change(3, 1, directories=[d1, d2]),  # too few: refused (``add``), the stretch ends before it
             change(3, isr=[1]), change(0, 2, lastKnownElr=[3], removingReplicas=[3], addingReplicas=[]),
             change(2, leaderRecoveryState=7),  # no such state: refused
             change(3, 1, directories=["AAAAAAAAAAAAAAAAAAAAAA"] * 3), noop, change(3, leader=3)]
    plan = [(1, START + i, r) for i, r in enumerate(setup)] + [(1, START + 100 + i, r) for i, r in enumerate(later)]
    return _write_log(tmp_path, plan)


def test_the_fold_passes_fields_the_report_does_not_read_to_the_merge(tmp_path, monkeypatch):
    """Directories, recovery states, adding/removing replicas and lastKnownElr are folded (merged as
    ``merge_partition`` merges them, written back with the partition), and a record whose merge is
    refused goes by ``add`` with its problem: model, page and image as ``add`` gives them."""
    node = find_nodes(str(_passed_log(tmp_path)))[0]
    by_add, images = [], []
    add, finish = collect_module._Walker.add, collect_module._Walker.finish

    def noting(self, e):
        if collect_module.FAST_COLUMNS and e.record.type == "PARTITION_CHANGE_RECORD":
            by_add.append(e.offset)
        add(self, e)

    def keep(self):
        finish(self)
        images.append(self.image.topics.by_id[TOPIC_ID]["partitions"])

    monkeypatch.setattr(collect_module._Walker, "add", noting)
    monkeypatch.setattr(collect_module._Walker, "finish", keep)
    folded = _both(node, tmp_path, monkeypatch)
    assert by_add == [17, 20] and folded["changes"] == 11  # only the refused ones by ``add``
    parts = images[0]
    assert images[0] == images[1]
    assert parts[1]["directories"] == ["AAAAAAAAAAAAAAAAAAAADA", "AAAAAAAAAAAAAAAAAAAACA", "AAAAAAAAAAAAAAAAAAAABA"]
    assert (parts[1]["partitionEpoch"], parts[1]["isr"]) == (3, [2, 3])
    assert (parts[2]["leaderRecoveryState"], parts[2]["leader"], parts[2]["leaderEpoch"], parts[2]["partitionEpoch"]) == (
        0, 2, 1, 2)
    assert (parts[0]["lastKnownElr"], parts[0]["removingReplicas"], parts[0]["addingReplicas"], parts[0]["isr"]) == (
        [3], [3], [], [1, 2, 3])
    assert parts[3]["directories"] == ["AAAAAAAAAAAAAAAAAAAAAA"] * 3 and parts[3]["leader"] == 3
    m = collect_module.collect(node)
    assert m.problems.total == 2
    monkeypatch.setattr(collect_module, "FAST_PASSED", False)  # then each passed one ends a stretch
    by_add.clear()
    assert _both(node, tmp_path, monkeypatch)["changes"] == 5 and len(by_add) == 8


def test_a_fenced_leader_rechecks_held_partitions_and_the_others(tmp_path, monkeypatch):
    """Broker 1 leads p0 and p2, p0 held by a fold when it is fenced: both are rechecked (p0 in ``cols``, p2
    as written back), then unfenced with none held, and with both held."""
    change, noop = _plan_change, ("NO_OP_RECORD", 0, {})

    def fence(fenced: int) -> tuple:
        return ("BROKER_REGISTRATION_CHANGE_RECORD", 0, {"brokerId": 1, "brokerEpoch": 11, "fenced": fenced})

    setup = [_broker(1, False), _broker(2, False), ("TOPIC_RECORD", 0, {"name": "t", "topicId": TOPIC_ID}),
             _part(0, [1, 2], 1), _part(1, [1, 2], 2), _part(2, [1, 2], 1)]
    later = [change(0, isr=[1]), noop, change(1, isr=[2]), fence(1), noop, fence(-1), change(0, isr=[1, 2]),
             change(2, isr=[1]), fence(1), change(1, isr=[1, 2]), fence(-1)]
    plan = [(1, START + i, r) for i, r in enumerate(setup)] + [(1, START + 100 + i, r) for i, r in enumerate(later)]
    node = find_nodes(str(_write_log(tmp_path, plan)))[0]
    _both(node, tmp_path, monkeypatch)
    m = collect_module.collect(node)
    # (no leader, leader fenced, below min ISR, below replicas, ELR): p0 and p2 go unavailable with broker 1
    assert [(o, h) for o, _, h in m.health_changes] == [
        (6, (0, 0, 0, 1, 0)), (8, (0, 0, 0, 2, 0)), (9, (0, 2, 0, 2, 0)), (11, (0, 0, 0, 2, 0)),
        (12, (0, 0, 0, 1, 0)), (13, (0, 0, 0, 2, 0)), (14, (0, 2, 0, 2, 0)), (15, (0, 2, 0, 1, 0)),
        (16, (0, 0, 0, 1, 0))]


def _added_after_setup(tmp_path: Path, monkeypatch, setup: list[tuple], later: list[tuple]) -> tuple:
    """The node of a log of ``setup`` then ``later`` (a millisecond apart, in one epoch), and the offsets of the
    records after the setup ``add`` takes with ``FAST_COLUMNS`` (a list filled as ``collect`` runs)."""
    plan = [(1, START + i, r) for i, r in enumerate(setup)] + [(1, START + 100 + i, r) for i, r in enumerate(later)]
    node = find_nodes(str(_write_log(tmp_path, plan)))[0]
    added = []
    add = collect_module._Walker.add

    def noting(self, e):
        add(self, e)
        if collect_module.FAST_COLUMNS and e.offset >= len(setup):
            added.append(e.offset)

    monkeypatch.setattr(collect_module._Walker, "add", noting)
    return node, added


def test_a_fencing_of_a_leader_is_folded_with_the_rechecks_it_makes(tmp_path, monkeypatch):
    """With ``FOLDED_FLIPS`` broker 1's fencings and unfencings go by no ``add`` though it leads partitions: the
    fold rechecks those it leads where each comes (one health change per record), and reads it as it was where
    each change comes: p1 led by broker 1 before its fencing counts unavailable only from there, p2 elected
    while it is fenced counts unavailable until its unfencing; model, page and image as ``add`` gives them."""
    change, noop = _plan_change, ("NO_OP_RECORD", 0, {})

    def fence(fenced: int) -> tuple:
        return ("BROKER_REGISTRATION_CHANGE_RECORD", 0, {"brokerId": 1, "brokerEpoch": 11, "fenced": fenced})

    setup = [_broker(1, False), _broker(2, False), ("TOPIC_RECORD", 0, {"name": "t", "topicId": TOPIC_ID}),
             _part(0, [1, 2], 1), _part(1, [1, 2], 2), _part(2, [1, 2], 2)]
    later = [change(0, isr=[1]), noop, fence(1), noop, fence(-1), change(1, leader=1), noop, fence(1),
             change(2, leader=1), change(1, isr=[1]), fence(-1), change(0, leader=2), fence(1), noop]
    node, added = _added_after_setup(tmp_path, monkeypatch, setup, later)
    folded = _both(node, tmp_path, monkeypatch)
    assert folded["changes"] == 5 and added == []  # all of ``later`` folded
    monkeypatch.setattr(collect_module, "FAST_COLUMNS", True)
    m = collect_module.collect(node)
    assert added == []
    # (no leader, leader fenced, below min ISR, below replicas, ELR)
    assert [(o, h) for o, _, h in m.health_changes] == [
        (6, (0, 0, 0, 1, 0)), (8, (0, 1, 0, 1, 0)), (10, (0, 0, 0, 1, 0)), (13, (0, 2, 0, 1, 0)),
        (14, (0, 3, 0, 1, 0)), (15, (0, 3, 0, 2, 0)), (16, (0, 0, 0, 2, 0)), (18, (0, 2, 0, 2, 0))]
    # 13: p0 and p1 at once; 11 (p1 elects broker 1 while it is available) and 17 (p0 leaves it) move nothing
    assert [(e.offset, e.subject, e.value) for e in m.leader_events] == [(11, "t-1", 1), (14, "t-2", 1),
                                                                         (17, "t-0", 2)]


def test_a_topic_removal_ends_a_stretch(tmp_path, monkeypatch):
    """A RemoveTopicRecord goes by ``add`` (folding it where the stretch changes none of its topic's partitions
    gained no CPU): gone's partition, held from a stretch before a config, is written back and dropped where the
    removal comes, and so is u's, changed earlier in the stretch; model, page and image as ``add`` gives them."""
    u_id = "AAAAAAAAAAAAAAAAAAAAAw"
    change, noop = _plan_change, ("NO_OP_RECORD", 0, {})

    def remove(tid: str) -> tuple:
        return ("REMOVE_TOPIC_RECORD", 0, {"topicId": tid})

    setup = [_broker(1, False), _broker(2, False), ("TOPIC_RECORD", 0, {"name": "t", "topicId": TOPIC_ID}),
             ("TOPIC_RECORD", 0, {"name": "gone", "topicId": GONE_ID}), ("TOPIC_RECORD", 0, {"name": "u", "topicId": u_id}),
             _part(0, [1, 2], 1), _part(1, [1, 2], 2), _part(0, [1, 2], 1, GONE_ID), _part(0, [1, 2], 2, u_id)]
    config = ("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": "zz", "name": "min.insync.replicas", "value": "2"})
    later = [change(0, topic=GONE_ID, isr=[1]), config, change(0, isr=[1]), noop, remove(GONE_ID), change(1, isr=[2]),
             change(0, isr=[1, 2]), change(0, topic=u_id, isr=[2]), noop, remove(u_id), change(1, isr=[1, 2]), noop]
    node, added = _added_after_setup(tmp_path, monkeypatch, setup, later)
    _both(node, tmp_path, monkeypatch)
    assert added == [10, 13, 18]  # (10: a min ISR config)
    monkeypatch.setattr(collect_module, "FAST_COLUMNS", True)
    added.clear()
    m = collect_module.collect(node)
    assert added == [10, 13, 18]
    # (no leader, leader fenced, below min ISR, below replicas, ELR): 13 and 18 drop gone-0's and u-0's
    assert [(o, h) for o, _, h in m.health_changes] == [
        (9, (0, 0, 0, 1, 0)), (11, (0, 0, 0, 2, 0)), (13, (0, 0, 0, 1, 0)), (14, (0, 0, 0, 2, 0)),
        (15, (0, 0, 0, 1, 0)), (16, (0, 0, 0, 2, 0)), (18, (0, 0, 0, 1, 0)), (19, (0, 0, 0, 0, 0))]
    assert [(e.offset, e.kind, e.subject) for e in m.topic_events][3:] == [(13, "deleted", "gone"), (18, "deleted", "u")]
    gone = m.partitions[(GONE_ID, 0)]
    assert (gone.removed_time, gone.isr, gone.shrinks) == (START + 100 + 4, (1,), 1)
    assert {k for k in m.partitions if m.partitions[k].removed_time is None} == {(TOPIC_ID, 0), (TOPIC_ID, 1)}


def test_a_reassignment_is_folded_with_its_replica_count(tmp_path, monkeypatch):
    """With ``FOLDED_REPLICAS`` changes with replicas (a reassignment's) go by no ``add``: each replica count read
    where it comes (p0 under-replicated with 3 in sync while 4 replicas are assigned, in sync with 4 and then with
    3 of 3, p2 under-replicated once it has 3), the replicas and
    directories merged and written back with the partition, and a change whose placement ``merge_partition``
    refuses (3 directories for 2 replicas) by ``add`` with its problem; model, page and image as ``add`` gives them
    (and without ``FOLDED_REPLICAS``, where each reassigning change goes by ``add``)."""
    change, noop = _plan_change, ("NO_OP_RECORD", 0, {})
    d1, d2, d3 = ("AAAAAAAAAAAAAAAAAAAA" + c + "A" for c in "BCD")
    setup = [*(_broker(b, False) for b in (1, 2, 3, 4)), ("TOPIC_RECORD", 0, {"name": "t", "topicId": TOPIC_ID}),
             _part(0, [1, 2, 3], 1), _part(1, [1, 2, 3], 2), _part(2, [1, 2], 1)]
    later = [change(0, isr=[1, 2]), noop, change(0, replicas=[1, 2, 3, 4], addingReplicas=[4], isr=[1, 2, 3]),
             change(1, isr=[2]), change(0, isr=[1, 2, 3, 4]),
             change(0, 1, replicas=[2, 3, 4], addingReplicas=[], directories=[d1, d2, d3], isr=[2, 3, 4], leader=2),
             noop, change(2, replicas=[1, 2, 3]),
             change(1, 1, replicas=[1, 2], directories=[d1, d2, d3]),  # refused: ``add``, the stretch ends before it
             change(1, isr=[1, 2]), change(2, isr=[1, 2, 3]), change(0, isr=[2, 3]), noop]
    node, added = _added_after_setup(tmp_path, monkeypatch, setup, later)
    monkeypatch.setattr(collect_module, "FOLDED_REPLICAS", False)
    _both(node, tmp_path, monkeypatch)
    assert added == [10, 13, 15, 16]
    monkeypatch.setattr(collect_module, "FOLDED_REPLICAS", True)
    added.clear()
    assert _both(node, tmp_path, monkeypatch)["changes"] == 9
    assert added == [16]
    monkeypatch.setattr(collect_module, "FAST_COLUMNS", True)
    m = collect_module.collect(node)
    # (no leader, leader fenced, below min ISR, below replicas, ELR)
    assert [(o, h) for o, _, h in m.health_changes] == [
        (8, (0, 0, 0, 1, 0)), (11, (0, 0, 0, 2, 0)), (12, (0, 0, 0, 1, 0)), (15, (0, 0, 0, 2, 0)),
        (18, (0, 0, 0, 1, 0)), (19, (0, 0, 0, 2, 0))]
    assert m.problems.total == 1
    assert (m.partitions[(TOPIC_ID, 0)].replicas, m.partitions[(TOPIC_ID, 2)].replicas) == (3, 3)
    parts = collect_module.collect(node).partitions
    assert parts[(TOPIC_ID, 1)].replicas == 3
