"""The timeline tables, one task per bucket of events: each entity's events of the bucket with
their routed rows filled in, sorted by key and effective offset, folded (``fold``) and written as
the entity's table, one Parquet file per bucket and cluster."""

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from kraftlog.schema.entity import CONFIG_RESOURCE_TYPES
from kraftlog.spark import entities as E
from kraftlog.spark.events import EVENTS, bucket_of, epoch_starts, expand
from kraftlog.spark.fold import EVENT_COLUMNS, Entity, fold_function
from kraftlog.spark.plan import Reset
from kraftlog.spark.sink import Sink, filesystem

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


def _sorted(entity: Entity, rows: pa.Table) -> pa.Table:
    keys = ["cluster_id", *entity.key_names, "eff_offset", "offset", "seq"]
    return rows.select(["cluster_id", *entity.key_names, *EVENT_COLUMNS]).sort_by([(k, "ascending") for k in keys])


def fold_bucket(root: str, bucket: int, buckets: int, resets: dict[str, list[Reset]],
                epochs: dict[str, list[tuple[int, int, int]]], names: dict[str, str], redact: bool,
                run_id: str) -> dict[str, int]:
    """Every timeline of one bucket written; returns rows written per table. ``epochs``: each
    cluster's leader epochs (epoch, first offset, its ms)."""
    fs, base = filesystem(root)
    folder = f"{base}/events/bucket={bucket}"
    exists = fs.get_file_info(folder).type == pafs.FileType.Directory
    events = pq.read_table(folder, filesystem=fs, schema=EVENTS) if exists else EVENTS.empty_table()
    counts = {}
    for entity in E.ENTITIES:
        rows = events.filter(pc.equal(events.column("entity"), entity.table))
        if entity is E.CONTROLLER:
            rows = pa.concat_tables([rows, *(epoch_starts(c, starts) for c, starts in sorted(epochs.items())
                                             if bucket_of(c, "", buckets) == bucket)])
        rows = _sorted(entity, expand(entity, rows, names))
        sinks: dict[str, Sink] = {}
        for folded in fold_function(entity, resets, redact)(iter(rows.to_batches())):
            clusters = folded.column("cluster_id")
            for cluster in pc.unique(clusters).to_pylist():
                if cluster not in sinks:
                    sinks[cluster] = Sink(root, entity.table, history_schema(entity), f"b{bucket}", cluster)
                sinks[cluster].write(_written(entity, folded.filter(pc.equal(clusters, cluster)), run_id))
        counts[entity.table] = sum(sink.close() for sink in sinks.values())
    return counts
