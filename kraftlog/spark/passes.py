"""The job's passes, as Spark tasks that write their tables' Parquet themselves and return only
notes: over the input files (``binaryFile`` rows into ``mapInArrow`` functions, see ``decode``),
then over the staged records of each file and the buckets of events (see ``timelines``)."""

import json
import re
from collections import defaultdict

from pyspark.sql import SparkSession

from kraftlog.files.reader import Limits
from kraftlog.spark.decode import FileMeta, Note, finish_records, read_file, seed_file
from kraftlog.spark.discover import Inventory, local_path
from kraftlog.spark.plan import Reset, Snapshot
from kraftlog.spark.timelines import fold_bucket

NOTES = "file_id int, kind string, body string"


def hadoop_path(path: str) -> str:
    """A local path as Hadoop takes it: ``file:`` and the path as is, glob characters escaped."""
    return "file:" + re.sub(r"([\\{}\[\]*?])", r"\\\1", path)


def _meta(inv: Inventory) -> dict[int, FileMeta]:
    return {f.file_id: FileMeta(f.file_id, f.cluster_id, f.node_id, f.log_dir, f.file, f.kind) for f in inv.readable}


def _notes_batch(notes: list[Note]):
    import pyarrow as pa

    ids, kinds, bodies = zip(*notes, strict=True) if notes else ((), (), ())
    return pa.RecordBatch.from_arrays([pa.array(ids, pa.int32()), pa.array(kinds, pa.string()),
                                       pa.array(bodies, pa.string())], names=["file_id", "kind", "body"])


def _over_files(spark: SparkSession, files: dict[str, FileMeta], work) -> list[Note]:
    """``work(meta, bytes)`` on every file, in parallel; the notes it returns, collected."""
    if not files:
        return []

    def run(batches):
        for batch in batches:
            contents = batch.column("content")
            for i, path in enumerate(batch.column("path").to_pylist()):
                yield _notes_batch(work(files[local_path(path)], contents[i].as_py()))

    content = spark.read.format("binaryFile").load([hadoop_path(p) for p in files]).select("path", "content")
    return [tuple(r) for r in content.mapInArrow(run, NOTES).collect()]


def read(spark: SparkSession, inv: Inventory, root: str, run_id: str, limits: Limits) -> list[Note]:
    """Pass one over every readable file: ``batches`` (all copies) and the segments' staged records."""
    meta = _meta(inv)
    return _over_files(spark, {m.file: m for m in meta.values()},
                       lambda m, buf: read_file(m, buf, root, run_id, limits))


def seeds(spark: SparkSession, inv: Inventory, snapshots: list[Snapshot], root: str, buckets: int,
          limits: Limits) -> list[Note]:
    """The records of the snapshots timelines start from, as events."""
    meta = _meta(inv)
    at = {s.file_id: s for s in snapshots}
    files = {meta[i].file: meta[i] for i in at}
    return _over_files(spark, files, lambda m, buf: seed_file(m, buf, at[m.file_id].end_offset - 1,
                                                              at[m.file_id].timestamp, root, buckets, limits))


def _over_tasks(spark: SparkSession, tasks: list[int], work) -> list[Note]:
    """``work(task)`` for every task id, in parallel; the notes it returns, collected."""
    if not tasks:
        return []

    def run(batches):
        for batch in batches:
            yield _notes_batch([n for i in batch.column("task").to_pylist() for n in work(i)])

    frame = spark.createDataFrame([(i,) for i in tasks], "task int")
    frame = frame.repartition(min(len(tasks), spark.sparkContext.defaultParallelism * 2))
    return [tuple(r) for r in frame.mapInArrow(run, NOTES).collect()]


def finish(spark: SparkSession, inv: Inventory, want: dict[int, list[tuple[int, int]]], root: str, run_id: str,
           names: dict[str, str], txns: dict[str, list[tuple[int, int | None, int | None, str]]],
           ranges: dict[str, list[tuple[int, int]]], redact: bool, times: list[int], buckets: int) -> list[Note]:
    """The ``records`` table and the timelines' events from the staged records each file supplies."""
    meta = _meta(inv)
    return _over_tasks(spark, sorted(want), lambda i: finish_records(
        meta[i], root, run_id, want[i], names, txns.get(meta[i].cluster_id, []), ranges.get(meta[i].cluster_id, []),
        redact, times, buckets))


def timelines(spark: SparkSession, root: str, buckets: int, resets: dict[str, list[Reset]],
              epochs: dict[str, list[tuple[int, int, int]]], names: dict[str, str], redact: bool,
              run_id: str) -> list[Note]:
    """Every timeline table, one task per bucket of events."""
    return _over_tasks(spark, list(range(buckets)), lambda b: [(b, "timeline", json.dumps(
        fold_bucket(root, b, buckets, resets, epochs, names, redact, run_id)))])


def by_kind(notes: list[Note]) -> dict[str, list[tuple[int, object]]]:
    """Notes grouped by kind, bodies parsed: kind -> [(file_id, body)]."""
    out = defaultdict(list)
    for file_id, kind, body in notes:
        out[kind].append((file_id, json.loads(body)))
    return out
