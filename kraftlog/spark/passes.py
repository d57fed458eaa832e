"""The job's passes, as Spark tasks (Python functions over groups of task ids) that write their
tables themselves (see ``sink``) and return only notes: over the input files, which a task reads by its
local path (see ``decode``), then over the staged records of each file and the buckets of events
(see ``timelines``). Tasks are dealt into groups of about equal weight (file sizes), so two cores
end together."""

import gc
import json
import re
from collections import defaultdict
from collections.abc import Collection
from contextlib import contextmanager

import pyarrow as pa
from pyspark.sql import SparkSession

from kraftlog.files.heap import rare_collections
from kraftlog.files.reader import Limits
from kraftlog.files.storage import Source
from kraftlog.spark.decode import (
    BATCHES,
    RECORDS,
    FileMeta,
    Note,
    decode_file,
    finish_records,
    read_file,
    seed_file,
    staged_events,
)
from kraftlog.spark.discover import Inventory
from kraftlog.spark.plan import Reset, Snapshot
from kraftlog.spark.session import arrow_table
from kraftlog.spark.sink import NotVisible, Parts, recording
from kraftlog.spark.timelines import fold_bucket
from kraftlog.spark.weights import deal


def _sizes(inv: Inventory, keep: Collection[int] | None = None) -> dict[int, int]:
    """File id -> bytes, of the readable files (those ``keep`` holds)."""
    return {f.file_id: f.bytes for f in inv.readable if keep is None or f.file_id in keep}


def _meta(inv: Inventory) -> dict[int, FileMeta]:
    return {f.file_id: FileMeta(f.file_id, f.cluster_id, f.node_id, f.log_dir, f.file, f.kind, inv.seen.get(f.file_id))
            for f in inv.readable}


#: Input bytes per Spark task a pass aims at (``tasks``).
TASK_BYTES = 64 << 20
#: Tasks of a pass at least, where there is that much to deal out: on small inputs, enough for
#: a few cores to end together.
MIN_TASKS = 8


def tasks(total_bytes: int) -> int:
    """Spark tasks for a pass over ``total_bytes`` of input: one per ``TASK_BYTES``, at least
    ``MIN_TASKS``. Sized by what is read, not by the cores a cluster has when the pass starts
    (dynamic allocation starts from none), so that the same input is split the same way everywhere."""
    return max(MIN_TASKS, -(-total_bytes // TASK_BYTES))


#: What a Spark task returns: its notes, and a ``part`` note per file it wrote (see ``sink.recording``).
NOTES = "file_id long, kind string, body string"


def _over_groups(spark: SparkSession, weights: dict[int, int], work, count: int | None = None) -> list[Note]:
    """``work(group, tasks)`` for task ids dealt into ``count`` groups of about equal weight
    (``tasks`` of the total weight, by default), one Spark task per group, in parallel; the notes
    they return and a ``part`` note for every file they wrote, collected. DataFrame functions only
    (a range of group ids mapped by ``mapInArrow``): the same on classic Spark and Spark Connect."""
    if not weights:
        return []
    groups = deal(weights, count or tasks(sum(weights.values())))

    def run(batches):
        for batch in batches:
            for g in batch.column(0).to_pylist():
                with _rare_collections(), recording() as parts:
                    notes = list(work(g, groups[g]))
                notes += [(g, "part", json.dumps({**p, "task": g})) for p in parts]
                yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(
                    zip(*notes, strict=True) if notes else ([], [], []), (pa.int64(), pa.string(), pa.string()),
                    strict=True)], names=["file_id", "kind", "body"])

    try:
        got = arrow_table(spark.range(len(groups), numPartitions=len(groups)).mapInArrow(run, NOTES))
    except Exception as e:  # a task that could not read a part another wrote: that line, not a stack trace
        seen = re.search(r"part written by task .*", str(e))
        if seen is None:
            raise
        raise NotVisible(seen.group(0)) from None
    return list(zip(*(got.column(c).to_pylist() for c in ("file_id", "kind", "body")), strict=True))


def _over_tasks(spark: SparkSession, weights: dict[int, int], work, count: int | None = None) -> list[Note]:
    """``work(task)`` for every task id, as ``_over_groups`` deals them."""
    return _over_groups(spark, weights, lambda _, tasks: [n for task in tasks for n in work(task)], count)


#: Whether this Python worker's objects were frozen (``freeze_imports``).
_frozen = False


def freeze_imports() -> None:
    """Once per Python worker, before its first task's work: what is alive then (the modules it
    imported) is left out of every later collection (``gc.freeze``). pyspark's daemon runs a full
    collection after each task of a reused worker (``pyspark/daemon.py``), which otherwise walks
    all those objects every time: 40 ms a task, more than a second of CPU a run."""
    global _frozen
    if not _frozen:
        gc.freeze()
        _frozen = True


@contextmanager
def _rare_collections():
    """A task makes millions of short-lived objects that reference counting frees: a cyclic
    collection every 700 allocations (CPython's default) walks the growing live heap for nothing,
    a third of a fold's time and a tenth of a decode's (and after the task, the daemon's full
    collection walks the worker's imports: ``freeze_imports``)."""
    freeze_imports()
    with rare_collections((100_000, 50, 100)):
        yield


def _read(meta: FileMeta) -> Source:
    """The file (a local path or a URI), read through the storage layer in windows (``walk.WINDOW``),
    so a task's memory does not grow with the size of what it reads; never mapped, since a file
    truncated under a map kills the worker (SIGBUS). It is checked against what discovery saw when
    first read and again at the end: a file gone, replaced, changed or unreadable is an
    ``unreadable`` note of the pass (see ``decode``), never a crash."""
    return Source(meta.file, meta.seen)


def read(spark: SparkSession, inv: Inventory, root: str, run_id: str, limits: Limits,
         records: set[int], redact: bool = True) -> list[Note]:
    """Pass one over every readable file: ``batches`` (all copies), and the staged records of the
    segments ``records`` names."""
    meta = _meta(inv)

    def group(g: int, tasks: list[int]) -> list[Note]:
        batches = Parts(root, "batches", BATCHES, f"g{g}")  # one file per cluster, not per input file
        notes = [n for i in tasks for n in read_file(meta[i], _read(meta[i]), batches, root, run_id, limits,
                                                        i in records, redact)]
        batches.close()
        return notes

    return _over_groups(spark, _sizes(inv), group)


def decode(spark: SparkSession, inv: Inventory, want: dict[int, list[tuple[int, int]]], root: str,
           limits: Limits, redact: bool = True) -> list[Note]:
    """The staged records of segments pass one did not decode, at the offsets each supplies."""
    meta = _meta(inv)
    return _over_tasks(spark, _sizes(inv, want), lambda i: decode_file(meta[i], _read(meta[i]), want[i], root,
                                                                        limits, redact))


def seeds(spark: SparkSession, inv: Inventory, snapshots: list[Snapshot], root: str, buckets: int,
          limits: Limits, redact: bool = True) -> list[Note]:
    """The records of the snapshots timelines start from, as events."""
    meta = _meta(inv)
    at = {s.file_id: s for s in snapshots}
    return _over_tasks(spark, _sizes(inv, at), lambda i: seed_file(
        meta[i], _read(meta[i]), at[i].end_offset - 1, at[i].timestamp, root, buckets, limits, redact))


def finish(spark: SparkSession, inv: Inventory, want: dict[int, list[tuple[int, int]]], root: str, run_id: str,
           names: dict[str, str], txns: dict[str, list[tuple[int, int | None, int | None, str]]],
           ranges: dict[str, list[tuple[int, int]]], redact: bool, times: list[int], buckets: int) -> list[Note]:
    """The ``records`` table and the timelines' events from the staged records each file supplies."""
    meta = _meta(inv)

    def group(g: int, tasks: list[int]) -> list[Note]:
        records, events = Parts(root, "records", RECORDS, f"g{g}"), staged_events(root, f"g{g}")
        notes = [n for i in tasks for n in finish_records(
            meta[i], root, run_id, want[i], names, txns.get(meta[i].cluster_id, []),
            ranges.get(meta[i].cluster_id, []), redact, times, buckets, records, events)]
        records.close()
        events.close()
        return notes

    return _over_groups(spark, _sizes(inv, want), group)


def timelines(spark: SparkSession, root: str, buckets: int, events: dict[int, list[dict]],
              resets: dict[str, list[Reset]], epochs: dict[str, list[tuple[int, int, int]]], names: dict[str, str],
              redact: bool, run_id: str, per_fold: int) -> list[Note]:
    """Every timeline table, one task per bucket of events, at most ``per_fold`` events of it at
    once (``fold_bucket``); ``events``: the staged parts of each bucket, as the tasks that wrote them
    reported them."""
    weights = {b: 1 + sum(p["bytes"] for p in events.get(b, [])) for b in range(buckets)}
    return _over_tasks(spark, weights, lambda b: [(b, "timeline", json.dumps(
        fold_bucket(root, b, events.get(b, []), buckets, resets, epochs, names, redact, run_id, per_fold)))],
        buckets)


def by_kind(notes: list[Note]) -> dict[str, list[tuple[int, object]]]:
    """Notes grouped by kind, bodies parsed: kind -> [(file_id, body)]."""
    out = defaultdict(list)
    for file_id, kind, body in notes:
        out[kind].append((file_id, json.loads(body)))
    return out
