"""The timeline tables, one task per bucket of events: each entity's events of the bucket with
their routed rows filled in, sorted by key and effective offset, folded (``fold``) and written as
the entity's table, one Parquet file per bucket and cluster."""

from collections.abc import Iterator
from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kraftlog.schema.entity import CONFIG_RESOURCE_TYPES
from kraftlog.spark import entities as E
from kraftlog.spark.events import EVENTS, bucket_of, epoch_starts, expand, runs
from kraftlog.spark.fold import EVENT_COLUMNS, Entity, fold_function
from kraftlog.spark.partition_fold import Fold
from kraftlog.spark.plan import Reset
from kraftlog.spark.sink import Parts, read_staged_parts, staged_batches
from kraftlog.spark.weights import deal

_MS = pa.timestamp("ms", tz="UTC")
#: Columns a timeline row has after its key, before its state.
_HEAD = [("valid_from_offset", pa.int64()), ("valid_from_time", _MS), ("valid_to_offset", pa.int64()),
         ("valid_to_time", _MS), ("change", pa.string()), ("changed", pa.list_(pa.string())),
         ("change_offset", pa.int64()), ("change_records", pa.list_(pa.string())), ("ended_by", pa.string())]


def history_schema(entity: Entity) -> pa.Schema:
    """``entity``'s table as written (``cluster_id`` is its partition folder)."""
    extra = [("resource_type", pa.string())] if entity is E.CONFIG else []
    return pa.schema([*entity.keys, *_HEAD, *entity.state, *extra, ("run_id", pa.string())])


def _written(entity: Entity, folded: pa.RecordBatch, run_id: str) -> pa.RecordBatch:
    """Fold rows (ms since the epoch) as table rows (times, resource type names, run id)."""
    n = folded.num_rows
    cols = {name: folded.column(name) for name in folded.schema.names}
    cols["valid_from_time"] = cols["valid_from_ms"].cast(_MS)
    cols["valid_to_time"] = cols["valid_to_ms"].cast(_MS)
    if entity is E.CONFIG:
        ids = cols["resource_type_id"]
        names = pa.array([CONFIG_RESOURCE_TYPES.get(i, str(i)) if i is not None else None for i in ids.to_pylist()],
                         pa.string())
        cols["resource_type"] = names
    cols["run_id"] = pa.repeat(pa.scalar(run_id), n)
    schema = history_schema(entity)
    return pa.RecordBatch.from_arrays([cols[f.name] for f in schema], schema=schema)


def _codes(column: pa.Array) -> np.ndarray:
    """Sort codes of a key column: equal values, equal codes (their order does not matter)."""
    if pa.types.is_string(column.type):
        column = pc.dictionary_encode(column).indices
    return pc.fill_null(column, -1).to_numpy(zero_copy_only=False)


def _ordered(entity: Entity, events: pa.Table, names: dict[str, str]) -> pa.Table:
    """``entity``'s events of the bucket, routed rows filled in, sorted by key and effective offset
    (``fold_function``'s input); the event columns are copied once, in their final order."""
    at = np.flatnonzero(pc.equal(events.column("entity"), entity.table).to_numpy(zero_copy_only=False))
    index, keys = expand(entity, events, at, names)
    take = pa.array(index)
    cluster = events.column("cluster_id").take(take).combine_chunks()
    by = [events.column(c).take(take).to_numpy() for c in ("seq", "offset", "eff_offset")]
    order = np.lexsort([*by, *(_codes(keys[k]) for k in reversed(entity.key_names)), _codes(cluster)])
    final = pa.array(index[order])
    return pa.table({"cluster_id": cluster.take(pa.array(order)),
                     **{k: keys[k].take(pa.array(order)) for k in entity.key_names},
                     **{c: events.column(c).take(final) for c in EVENT_COLUMNS}})


def _folded(entity: Entity, rows: pa.Table, resets: dict[str, list[Reset]], redact: bool
            ) -> Iterator[pa.RecordBatch]:
    """Timeline rows of ``entity`` from its ordered events: partitions as columns where they can be
    (``partition_fold``), every other timeline record by record."""
    if entity is E.PARTITION and rows.num_rows:
        columns = Fold(entity, rows, resets)
        yield columns.folded()
        rows = columns.left_to_replay()
    yield from fold_function(entity, resets, redact)(iter(rows.to_batches()))


#: A Python worker's memory by default (``kraftlog-spark --worker-memory``), and the least it may be
#: (the decode passes hold up to about 0.5 GB on an event-dense log: 64 MiB windows of records, decoded).
WORKER_MEMORY, MIN_WORKER_MEMORY = 1 << 30, 768 << 20
#: What a Python worker holds besides a fold's events: the interpreter, pyarrow, Spark's worker, what
#: the allocators keep of the passes before, the fold's output being written.
WORKER_BASE_BYTES = 384 << 20
#: A fold's peak memory per event of its bucket: the staged rows, their sorted copy per entity, the
#: columnar partition fold's arrays and each distinct payload parsed. Measured on a bucket of the
#: event-dense generated log (``fold_bucket`` alone, peak RSS): 1.65 KB an event, 180 k to 1.35 M
#: events a fold, on payloads of some 150 bytes; a log of bigger records (long replica lists) weighs more.
FOLD_BYTES_PER_EVENT = 2048


def events_per_fold(worker_memory: int) -> int:
    """Events one fold takes at once so that a worker stays within ``worker_memory`` bytes: a bucket
    with more is folded in parts (``fold_bucket``). Checked with ``scripts/bench_spark.py``
    (``python_worker_peak_rss_mb``) on an event-dense log and the NoOp-heavy bench fleet."""
    return max(1, (worker_memory - WORKER_BASE_BYTES) // FOLD_BYTES_PER_EVENT)


def fold_bucket(root: str, bucket: int, parts: list[dict], buckets: int, resets: dict[str, list[Reset]],
                epochs: dict[str, list[tuple[int, int, int]]], names: dict[str, str], redact: bool,
                run_id: str, per_fold: int) -> dict[str, int]:
    """Every timeline of one bucket written; returns rows written per table. ``parts``: the
    bucket's staged events as reported (``sink.recording``); ``epochs``: each cluster's leader
    epochs (epoch, first offset, its ms). A bucket of more than ``per_fold`` events is folded in
    parts of at most that many (``_split``), each read on its own from the staged files."""
    starts = pa.concat_tables([EVENTS.empty_table(), *(epoch_starts(c, s) for c, s in sorted(epochs.items())
                                                       if bucket_of(c, "", buckets) == bucket)])
    if sum(p["rows"] for p in parts) + starts.num_rows <= per_fold:
        return _fold_events(root, f"b{bucket}", pa.concat_tables([read_staged_parts(root, parts, EVENTS), starts]),
                            resets, names, redact, run_id)
    keys, split_of = _split(np.concatenate([_hashes(b) for b in chain(staged_batches(root, parts), starts.to_batches())]),
                            per_fold)
    counts = dict.fromkeys((e.table for e in E.ENTITIES), 0)
    for split in range(int(split_of.max(initial=0)) + 1):
        def keep(rows, split=split):
            h = _hashes(rows)
            mine = h < 0  # a row of every key
            mine[~mine] = split_of[np.searchsorted(keys, h[~mine])] == split
            return rows.filter(pa.array(mine))

        events = pa.concat_tables([read_staged_parts(root, parts, EVENTS, keep),
                                   pa.Table.from_batches([keep(b) for b in starts.to_batches()], EVENTS)])
        for table, n in _fold_events(root, f"b{bucket}-{split}", events, resets, names, redact, run_id).items():
            counts[table] += n
        del events
    return counts


def _hashes(rows: pa.RecordBatch) -> np.ndarray:
    """Each row's ``route_hash`` (-1: a row of every key)."""
    return pc.fill_null(rows.column("route_hash"), -1).to_numpy(zero_copy_only=False)


def _split(hashes: np.ndarray, per_fold: int) -> tuple[np.ndarray, np.ndarray]:
    """A bucket's keys (their route hashes, sorted) and the part of the bucket each is folded in:
    dealt by their events, heaviest first, into as few parts as hold at most ``per_fold`` events
    each with the rows of every key (a topic's records) that each part has too. A key with more
    events than that is a part of its own: a key's events are folded together."""
    keys, events = np.unique(hashes[hashes >= 0], return_counts=True)
    if not len(keys):
        return keys, np.zeros(0, np.int64)
    room = max(1, per_fold - int((hashes < 0).sum()))
    weights = dict(enumerate(events.tolist()))
    most = max(room, int(events.max(initial=0)))
    count = -(-int(events.sum()) // room)
    while True:
        groups = deal(weights, count)
        if max(sum(events[g]) for g in groups) <= most or count >= len(keys):
            break
        count += 1
    split_of = np.zeros(len(keys), np.int64)
    for i, g in enumerate(groups):
        split_of[g] = i
    return keys, split_of


def _fold_events(root: str, part: str, events: pa.Table, resets: dict[str, list[Reset]], names: dict[str, str],
                 redact: bool, run_id: str) -> dict[str, int]:
    """Every timeline of ``events`` written, into files named ``part``; returns rows written per table."""
    # one chunk per column: taking rows out of the many chunks of many files costs more than the copy
    events = events.combine_chunks()
    counts = {}
    for entity in E.ENTITIES:
        rows = _ordered(entity, events, names)
        parts = Parts(root, entity.table, history_schema(entity), part)
        for folded in _folded(entity, rows, resets, redact):
            # rows come in key order, cluster first: each cluster's are a slice, not a filter
            clusters = pc.dictionary_encode(folded.column("cluster_id"))
            codes = clusters.indices.to_numpy(zero_copy_only=False)
            for lo, hi in runs(codes):
                cluster = clusters.dictionary[codes[lo]].as_py()
                parts.of(cluster).write(_written(entity, folded.slice(lo, hi - lo), run_id))
        counts[entity.table] = parts.close()
    return counts
