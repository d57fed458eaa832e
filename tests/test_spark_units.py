"""The Spark job's driver-side rules, without Spark: the replay plan, which copy supplies which
offsets, the transaction marker table, and the fold (against a plain ClusterImage replay)."""

import json
import os
import shutil
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from kraftlog.files.copies import minus
from kraftlog.spark import entities, events, output, timelines
from kraftlog.spark.copies import FileSummary, likely_first, ranks, suppliers, supplies, unrelated, wanted
from kraftlog.spark.decode import staged_events
from kraftlog.spark.discover import Copy, FileEntry, Inventory
from kraftlog.spark.fold import EVENT_COLUMNS, fold_function
from kraftlog.spark.job import MIN_RECORDS_PER_BUCKET, _buckets
from kraftlog.spark.output import DeltaOutput, Output, UnsafeOutput, open_output
from kraftlog.spark.passes import MIN_TASKS, tasks
from kraftlog.spark.plan import GAP, SEED, Reset, Snapshot, plan
from kraftlog.spark.replayed import Replayed
from kraftlog.spark.sink import Parts, Sink, read_staged, read_staged_parts, recording
from kraftlog.spark.transactions import Marker, transactions
from kraftlog.spark.weights import deal
from kraftlog.state.image import ClusterImage


def snap(end: int) -> Snapshot:
    return Snapshot(end, end, 1000 + end)


def test_plan_log_from_zero_needs_no_snapshot():
    p = plan([(0, 99)], [snap(50)])
    assert (p.ranges, p.resets, p.unreplayable) == ([(0, 99)], [], [])


def test_plan_log_after_retention_starts_at_its_earliest_snapshot():
    p = plan([(40, 99)], [snap(30), snap(60), snap(80)])
    assert p.ranges == [(60, 99)] and p.unreplayable == [(40, 59)]
    # snapshot 30 lies before the log: its state holds at its own last offset only
    assert p.resets == [Reset(29, SEED, snap(30)), Reset(30, GAP), Reset(59, SEED, snap(60))]


def test_plan_gap_then_snapshot_and_a_snapshot_alone():
    p = plan([(0, 9), (20, 29)], [snap(25), snap(100)])
    assert p.ranges == [(0, 9), (25, 29)]
    assert p.resets == [Reset(10, GAP), Reset(24, SEED, snap(25)), Reset(30, GAP), Reset(99, SEED, snap(100)),
                        Reset(100, GAP)]
    assert p.unreplayable == [(20, 24)]


def test_plan_without_log_or_snapshot_before_it():
    assert plan([(5, 9)], []).unreplayable == [(5, 9)]
    assert plan([], []).ranges == []


def test_minus():
    assert minus(0, 10, [(2, 3), (6, 6)]) == [(0, 1), (4, 5), (7, 10)]
    assert minus(0, 10, [(0, 10)]) == []
    assert minus(115, 29, []) == []  # a run wholly past a copy's cut


def _inventory(*copies: tuple[int, list[tuple[int, int]]]) -> tuple[Inventory, dict]:
    inv, summary = Inventory(), {}
    for copy_id, runs in copies:
        inv.copies.append(Copy(copy_id, "c", copy_id, f"/n{copy_id}"))
        inv.files.append(FileEntry(copy_id, copy_id, "c", copy_id, f"/n{copy_id}", f"/n{copy_id}/0.log", "segment",
                                   0, None, 1, None))
        summary[copy_id] = FileSummary(copy_id, runs, 0, 0, None, None, None, None, None, 0, 0, None)
    return inv, summary


def test_suppliers_best_copy_first_others_fill_in_until_they_disagree():
    inv, summary = _inventory((0, [(50, 100)]), (1, [(0, 120)]), (2, [(0, 130)]))
    # copy 1 disagrees from offset 110 on (an uncommitted tail); copy 2 from 125
    got = suppliers(inv, summary, {0: 0, 1: 1, 2: 2}, {1: 110, 2: 125})
    assert got == [(0, 50, 100), (1, 0, 49), (1, 101, 109), (2, 110, 124)]


def test_a_copy_supplies_nothing_past_its_cut_even_in_a_later_run():
    inv, summary = _inventory((0, [(50, 100)]), (1, [(0, 40), (115, 120)]))
    assert suppliers(inv, summary, {0: 0, 1: 1}, {1: 30}) == [(0, 50, 100), (1, 0, 29)]


def test_ranks_follow_the_last_batchs_epoch_then_offset():
    inv, summary = _inventory((0, [(0, 120)]), (1, [(0, 100)]), (2, [(0, 100)]))
    for i, (epoch, last) in enumerate([(6, 120), (7, 100), (7, 100)]):
        summary[i] = FileSummary(i, summary[i].runs, 0, 0, 0, last, None, None, epoch, 0, 0, None)
    assert ranks(inv, summary) == {1: 0, 2: 1, 0: 2}


def test_a_copy_differing_from_the_first_common_offset_is_another_log():
    inv, summary = _inventory((0, [(0, 100)]), (1, [(0, 90)]), (2, [(0, 120)]), (3, [(200, 300)]))
    apart = unrelated(inv, summary, {0: 0, 1: 1, 2: 2, 3: 3}, {1: 0, 2: 95})
    assert list(apart) == [1] and "first offset both hold (0)" in apart[1]  # copy 2: an uncommitted tail


def test_supplies_is_inside_the_files_intervals():
    want = wanted([(7, 0, 9), (7, 20, 29), (8, 10, 19)])
    assert [o for o in range(0, 35) if supplies(want, 7, o)] == [*range(0, 10), *range(20, 30)]
    assert not supplies(want, 9, 5)


def test_likely_first_is_the_copy_with_the_newest_epoch_then_segment(tmp_path):
    inv, _ = _inventory((0, []), (1, []), (2, []))
    for copy, epochs in ((0, "5 0\n7 100"), (1, "5 0\n9 120"), (2, "")):
        folder = tmp_path / f"m{copy}"
        folder.mkdir()
        (folder / "leader-epoch-checkpoint").write_text(f"0\n{epochs.count(chr(10)) + bool(epochs)}\n{epochs}\n")
        inv.copies[copy] = Copy(copy, "c", copy, f"/n{copy}", str(folder))
    assert likely_first(inv) == {1}
    inv.copies[1] = Copy(1, "c", 1, "/n1", None)  # no checkpoint to read: epoch unknown
    assert likely_first(inv) == {0}


def test_groups_deal_every_task_once_heaviest_first():
    weights = {i: w for i, w in enumerate([90, 5, 40, 40, 30, 10, 10, 3, 2, 1])}
    groups = deal(weights, 3)
    assert sorted(t for g in groups for t in g) == sorted(weights)
    loads = [sum(weights[t] for t in g) for g in groups]
    assert loads == sorted(loads, reverse=True) and loads[0] == 90 and loads[1] - loads[2] <= 10  # 90 alone
    assert deal({1: 5, 2: 5}, 8) == [[1], [2]]


def test_one_topics_partitions_spread_over_buckets_and_its_records_reach_each():
    rows = [("TOPIC_RECORD", None, {"name": "orders", "topicId": TOPIC})] + [
        ("PARTITION_CHANGE_RECORD", p, {"partitionId": p, "topicId": TOPIC, "isr": [1]}) for p in range(40)]
    src = pa.table({
        "eff_offset": pa.array(range(41), pa.int64()), "offset": pa.array(range(41), pa.int64()),
        "seq": pa.array([0] * 41, pa.int64()), "eff_time": pa.array([0] * 41, pa.int64()),
        "epoch": pa.array([1] * 41, pa.int32()), "record_type": [t for t, _, _ in rows],
        "data": [json.dumps(d) for _, _, d in rows], "topic_id": [TOPIC] * 41,
        "topic_name": ["orders"] + [None] * 40, "partition_id": pa.array([p for _, p, _ in rows], pa.int32()),
        "broker_id": pa.nulls(41, pa.int32()), "resource_name": pa.nulls(41, pa.string())})
    partitions = [(b, t) for b, t in events.routed("c", src, 4, {}) if t.column("entity")[0].as_py() == "partition_history"]
    own = Counter()
    for b, t in partitions:
        own[b] += t.filter(pc.equal(t.column("record_type"), "PARTITION_CHANGE_RECORD")).num_rows
    topic = {b for b, t in partitions if "TOPIC_RECORD" in t.column("record_type").to_pylist()}
    assert sum(own.values()) == 40 and len([n for n in own.values() if n]) == 4 and topic == {0, 1, 2, 3}


def _marker(offset: int, kind: str, timestamp: int = 0) -> Marker:
    return Marker("c", offset, timestamp, kind, "{}")


def test_transactions_follow_the_controller_rule():
    begin, end, abort = "BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD"
    rows = transactions([_marker(1, begin), _marker(5, end, 50), _marker(7, begin), _marker(8, begin),
                         _marker(9, abort, 90), _marker(10, end), _marker(12, begin)])
    assert rows == [("c", 1, 5, 50, "committed"), ("c", 7, 9, 90, "aborted"), ("c", 12, None, None, "open")]


TOPIC = "AAAAAAAAAAAAAAAAAAAAAQ"
NEW_TOPIC = "AAAAAAAAAAAAAAAAAAAAAg"


def _partition(p: int, **kw) -> tuple[str, dict]:
    return "PARTITION_RECORD", {"partitionId": p, "topicId": TOPIC, "replicas": [1, 2], "isr": [1, 2],
                                "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderEpoch": 0,
                                "partitionEpoch": 0, "directories": [], **kw}


#: (effective offset, offset, record type, data): a topic's life, with a transaction committed at 12.
EVENTS = [
    (1, 1, "TOPIC_RECORD", {"name": "orders", "topicId": TOPIC}),
    (2, 2, *_partition(0)),
    (3, 3, *_partition(1)),
    (4, 4, "PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": TOPIC, "isr": [1]}),
    (12, 10, "PARTITION_CHANGE_RECORD", {"partitionId": 1, "topicId": TOPIC, "leader": 2}),
    (12, 11, "PARTITION_CHANGE_RECORD", {"partitionId": 1, "topicId": TOPIC, "isr": [2]}),
    (13, 13, "PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": TOPIC, "leader": 1}),
    (14, 14, "PARTITION_CHANGE_RECORD", {"partitionId": 7, "topicId": TOPIC, "leader": 1}),  # refused
    (15, 15, "REMOVE_TOPIC_RECORD", {"topicId": TOPIC}),
]


def _fold(events: list[tuple], resets: list[Reset]) -> list[dict]:
    """The partition timeline of EVENTS, routed as the job routes them (topic records to every partition)."""
    rows = []
    for p in (0, 1, 7):
        for eff, offset, kind, data in events:
            if kind in ("TOPIC_RECORD", "REMOVE_TOPIC_RECORD") or data.get("partitionId") == p:
                rows.append(("c", TOPIC, p, eff, offset, 0, 1000 + eff, 1, kind, json.dumps(data)))
    names = ["cluster_id", "topic_id", "partition_id", *EVENT_COLUMNS]
    batch = pa.RecordBatch.from_arrays([pa.array(c) for c in zip(*rows, strict=True)], names=names)
    out = fold_function(entities.PARTITION, {"c": resets}, redact=True)(iter([batch]))
    return pa.Table.from_batches(list(out)).to_pylist()


def _replayed_at(events: list[tuple], at: int) -> dict:
    image = ClusterImage()
    for eff, offset, kind, data in events:
        if eff <= at:
            image.apply(Replayed(kind, data), offset)
    topic = image.topics.by_id.get(TOPIC)
    return {} if topic is None else topic["partitions"]


def test_fold_equals_replay_at_every_offset():
    rows = _fold(EVENTS, [])
    for at in range(0, 18):
        holds = {r["partition_id"]: r for r in rows if r["valid_from_offset"] <= at
                 and (r["valid_to_offset"] is None or at < r["valid_to_offset"])}
        want = _replayed_at(EVENTS, at)
        assert sorted(holds) == sorted(want), at
        for p, r in holds.items():
            w = want[p]
            assert (r["leader"], r["leader_epoch"], r["partition_epoch"], r["isr"], r["replicas"]) == \
                (w["leader"], w["leaderEpoch"], w["partitionEpoch"], w["isr"], w["replicas"]), at
    p1 = [r for r in rows if r["partition_id"] == 1]
    assert [(r["valid_from_offset"], r["change"], r["changed"], r["change_offset"]) for r in p1] == [
        (3, "created", [], 3), (12, "changed", ["leader", "leader_epoch", "partition_epoch", "isr"], 11)]
    assert p1[-1]["valid_to_offset"] == 15 and p1[-1]["ended_by"] == "REMOVE_TOPIC_RECORD"


def test_fold_resets_at_a_gap_and_a_seed():
    seed = Snapshot(31, 9, 5000)
    seeded = [(30, 30, "TOPIC_RECORD", {"name": "orders", "topicId": TOPIC}), (30, 30, *_partition(1, leader=2))]
    rows = _fold(EVENTS[:4] + seeded, [Reset(8, GAP), Reset(30, SEED, seed)])
    p0 = [r for r in rows if r["partition_id"] == 0]
    assert [(r["valid_from_offset"], r["valid_to_offset"], r["ended_by"]) for r in p0] == [(2, 4, None), (4, 8, "gap")]
    p1 = [r for r in rows if r["partition_id"] == 1]
    assert [(r["valid_from_offset"], r["valid_to_offset"], r["change"], r["leader"]) for r in p1] == [
        (3, 8, "created", 1), (30, None, "snapshot", 2)]
    assert p1[-1]["valid_from_ms"] == 5000


def test_what_a_seed_does_not_hold_is_not_the_seeds():
    """A partition created after a seed (its topic and itself in one transaction, so at one
    effective offset) is created then, at its own time; one the seed drops ends at the seed."""
    seed = Snapshot(31, 9, 5000)
    created = [(50, 48, "TOPIC_RECORD", {"name": "orders", "topicId": TOPIC}), (50, 49, *_partition(0))]
    rows = _fold(created, [Reset(30, SEED, seed)])
    assert [(r["valid_from_offset"], r["valid_from_ms"], r["change"], r["change_records"]) for r in rows] == [
        (50, 1050, "created", ["TOPIC_RECORD", "PARTITION_RECORD"])]
    dropped = EVENTS[:3] + [(30, 30, "TOPIC_RECORD", {"name": "orders", "topicId": TOPIC}), (30, 30, *_partition(1))]
    p0 = [r for r in _fold(dropped, [Reset(30, SEED, seed)]) if r["partition_id"] == 0]
    assert [(r["valid_from_offset"], r["valid_to_offset"], r["valid_to_ms"], r["ended_by"]) for r in p0] == [
        (2, 30, 5000, "SNAPSHOT")]


def test_config_values_named_as_secrets_are_redacted_but_still_change():
    shown = entities.CONFIG.shown
    assert shown((4, "1", "sasl.jaas.config"), ("a",)) == ("[redacted]",)
    assert shown((2, "orders", "retention.ms"), ("1",)) == ("1",)


def test_runs_of_nothing_are_none():
    assert events.runs(np.zeros(0, np.int64)) == []
    assert events.runs(np.asarray([4, 4, 1, 4])) == [(0, 2), (2, 3), (3, 4)]


def test_staged_parts_are_reported_read_back_and_a_missing_one_is_an_error(tmp_path):
    schema = pa.schema([("offset", pa.int64()), ("data", pa.string())])
    root = str(tmp_path)
    with recording() as parts:
        for part, rows in (("a", [1, 2]), ("b", [3])):
            sink = Sink(root, "t", schema, part, 7, staged=True, column="bucket")
            sink.write(pa.record_batch([pa.array(rows), pa.array([str(r) for r in rows])], schema=schema))
            assert sink.close() == len(rows)
    assert [(p["path"], p["rows"], p["value"], p["bytes"]) for p in parts] == [
        (f"t/bucket=7/part-{x}.arrow", n, 7, (tmp_path / f"t/bucket=7/part-{x}.arrow").stat().st_size)
        for x, n in (("a", 2), ("b", 1))]
    parts = [{**p, "task": 5} for p in parts]
    assert [r for b in read_staged(root, "t/bucket=7/part-a") for r in b.column("offset").to_pylist()] == [1, 2]
    assert read_staged_parts(root, parts, schema).column("offset").to_pylist() == [1, 2, 3]
    assert read_staged_parts(root, [], schema).num_rows == 0
    with pytest.raises(FileNotFoundError):
        next(read_staged(root, "t/bucket=7/part-c"))
    (tmp_path / "t/bucket=7/part-b.arrow").unlink()  # a part the reader cannot see is never read as no rows
    with pytest.raises(FileNotFoundError, match=f"part written by task 5 on host .* at {root}/t/bucket=7/part-b"):
        read_staged_parts(root, parts, schema)


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2-exchange", "two-renames"])
def test_publishing_swaps_the_new_output_in_and_only_then_removes_the_previous(tmp_path, monkeypatch, exchange):
    swapped, swap = [], output._exchange
    # a filesystem without RENAME_EXCHANGE takes the other path
    monkeypatch.setattr(output, "_exchange", lambda *a: swapped.append(swap(*a) if exchange else False) or swapped[-1])
    target = tmp_path / "out"
    target.mkdir()
    (target / "_manifest.json").write_text("previous")
    out = Output(None, str(target), "r1")
    os.makedirs(out.root)
    (Path(out.root) / "_manifest.json").write_text("new")
    assert out.publish() == str(target)
    assert (target / "_manifest.json").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # neither staging nor the previous output is left
    assert swapped == [exchange]


@pytest.mark.parametrize("target", ["/dev/shm", "s3://bucket/out", "hdfs://nn/out"])
def test_an_output_no_rename_can_replace_safely_is_refused(target):
    with pytest.raises(UnsafeOutput, match="--output"):
        Output(None, target, "r1")


def test_an_object_store_output_is_delta_tables():
    out = open_output(None, "s3a://bucket/out/", "01a20cfb-5d23-77d1-bf30-706b593bfade")
    assert isinstance(out, DeltaOutput) and out.tables == "s3://bucket/out"
    assert out.root == "s3a://bucket/out/_staging-01a20cfb-5d23-77d1-bf30-706b593bfade"


def test_tasks_follow_the_bytes_read_not_the_cores():
    assert tasks(0) == tasks(10 << 20) == MIN_TASKS
    assert tasks(1 << 30) == 16 and tasks((1 << 30) + 1) == 17



def test_a_bucket_of_a_log_a_third_events_is_folded_whole_by_the_default_worker_memory():
    """Buckets follow the events a fold takes: the bench fleet's 16.4 M records (26 % events) made 8
    buckets of ~535 k events, each folded in two parts that read its staged events three times."""
    per_fold = timelines.events_per_fold(timelines.WORKER_MEMORY)
    summary = {i: SimpleNamespace(records=n) for i, n in enumerate([16_433_575 // 4] * 4)}
    buckets = _buckets(summary, per_fold)
    assert 16_433_575 / buckets / 3 <= per_fold and buckets == 17
    # however small a fold, a bucket holds a quarter of a million records (its parts are folded one by one)
    assert _buckets(summary, 40) == -(-16_433_575 // MIN_RECORDS_PER_BUCKET)
    assert _buckets({0: SimpleNamespace(records=1000)}, per_fold) == MIN_TASKS

def _bucket_events(root: str, buckets: int) -> dict[int, list[dict]]:
    """A topic of 24 partitions, each changed a few times, and a broker and a config, staged as the job
    stages them (``routed``); returns each bucket's parts as reported."""
    rows = [("TOPIC_RECORD", {"name": "orders", "topicId": TOPIC}, TOPIC, None, None, None)]
    rows += [(*_partition(p), TOPIC, p, None, None) for p in range(24)]
    rows += [("PARTITION_CHANGE_RECORD", {"partitionId": p, "topicId": TOPIC, "isr": [1 + k % 2]}, TOPIC, p, None, None)
             for k in range(3) for p in range(24)]
    rows += [("REGISTER_BROKER_RECORD", {"brokerId": 1, "brokerEpoch": 5, "incarnationId": TOPIC, "endPoints": [],
                                         "features": [], "rack": None, "fenced": True}, None, None, 1, None),
             ("CONFIG_RECORD", {"resourceType": 2, "resourceName": "orders", "name": "retention.ms", "value": "1"},
              None, None, None, "orders")]
    n = len(rows)
    src = pa.table({"eff_offset": range(1, n + 1), "offset": range(1, n + 1), "seq": [0] * n,
                    "eff_time": range(1000, 1000 + n), "epoch": pa.array([1] * n, pa.int32()),
                    "record_type": [r[0] for r in rows], "data": [json.dumps(r[1]) for r in rows],
                    "topic_id": [r[2] for r in rows], "topic_name": ["orders" if r[2] else None for r in rows],
                    "partition_id": pa.array([r[3] for r in rows], pa.int32()),
                    "broker_id": pa.array([r[4] for r in rows], pa.int32()), "resource_name": [r[5] for r in rows]})
    with recording() as parts:
        staged = staged_events(root, "g0")
        for bucket, table in events.routed("c", src, buckets, {TOPIC: "orders"}):
            for rb in table.to_batches():
                staged.of(bucket).write(rb)
        staged.close()
    by_bucket = {b: [] for b in range(buckets)}
    for p in parts:
        by_bucket[p["value"]].append({**p, "task": 0})
    return by_bucket


def _timelines(root: Path) -> dict[str, list[str]]:
    return {e.table: sorted(json.dumps(r, default=str) for r in
                            ds.dataset(root / e.table, format="parquet", partitioning="hive").to_table().to_pylist())
            for e in entities.ENTITIES if (root / e.table).exists()}


def test_a_bucket_of_more_events_than_a_fold_takes_is_folded_in_parts_with_the_same_rows(tmp_path, monkeypatch):
    """The budget per worker: a bucket is folded at most ``per_fold`` events at a time (and a routed
    row in each part), every key's events together, to the rows it folds to whole."""
    whole, split = tmp_path / "whole", tmp_path / "split"
    buckets, epochs = 2, {"c": [(1, 1, 1000)]}
    staged = _bucket_events(str(whole), buckets)
    shutil.copytree(whole, split)
    folded = []
    fold_events = timelines._fold_events
    monkeypatch.setattr(timelines, "_fold_events", lambda root, part, ev, *a: folded.append((part, ev.num_rows))
                        or fold_events(root, part, ev, *a))
    counts = {}
    for root, per_fold in ((whole, 10**9), (split, 9)):
        for b in range(buckets):
            n = timelines.fold_bucket(str(root), b, staged[b], buckets, {}, epochs, {TOPIC: "orders"}, True, "r",
                                      per_fold)
            counts[per_fold] = Counter(counts.get(per_fold)) + Counter(n)
    assert counts[9] == counts[10**9] and counts[9]["partition_history"] == 24 * 4
    assert _timelines(split) == _timelines(whole)
    parts = [n for part, n in folded if "-" in part]
    routed = 1  # the topic's record, in every part of a bucket's partitions
    assert len(parts) > 2 * buckets and max(parts) <= 9
    assert sum(n for part, n in folded if "-" not in part) == sum(parts) - routed * (len(parts) - buckets)


def test_a_task_writing_many_buckets_holds_at_most_its_pending_bytes_unwritten(tmp_path):
    """Staged events go to every bucket a task reaches, as slices of the batches routed; their rows
    are written out once the batches they were cut from hold more than the bound together, each batch
    counted whole and once however many of its slices wait (a slice keeps its whole batch in
    memory), not a row group each."""
    schema = pa.schema([("offset", pa.int64())])
    with recording() as written:
        parts = Parts(str(tmp_path), "t", schema, "g0", staged=True, column="bucket", pending_bytes=1000)
        rows = pa.record_batch([pa.array(range(100))], schema=schema)  # 800 bytes
        for bucket in range(3):
            parts.write(bucket, rows.slice(bucket * 10, 10))
            assert parts.pending == 800 and sum(s.pending_rows for s in parts.sinks.values()) == 10 * (bucket + 1)
        parts.write(0, pa.record_batch([pa.array(range(100, 200))], schema=schema))  # 800 bytes more
        assert parts.pending == 0 and not any(s.pending for s in parts.sinks.values())
        parts.write(1, rows.slice(0, 1))
        assert parts.pending == 800
        assert parts.close() == 131
    got = {p["value"]: [r for b in read_staged(str(tmp_path), p["path"].removesuffix(".arrow"))
                        for r in b.column("offset").to_pylist()] for p in written}
    assert got == {0: [*range(10), *range(100, 200)], 1: [*range(10, 20), 0], 2: list(range(20, 30))}
