"""The job's passes over the input files, as Spark tasks: ``binaryFile`` rows into ``mapInArrow``
functions that decode them and write their tables' Parquet (``decode``), returning only notes."""

import json
import re
from collections import defaultdict

from pyspark.sql import SparkSession

from kraftlog.files.reader import Limits
from kraftlog.spark.decode import FileMeta, Note, decode_file, finish_records, scan_file
from kraftlog.spark.discover import Inventory, local_path

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


def scan(spark: SparkSession, inv: Inventory, root: str, run_id: str, limits: Limits) -> list[Note]:
    """Pass one over every readable file: ``batches`` (all copies) and ``snapshot_records``."""
    meta = _meta(inv)
    return _over_files(spark, {m.file: m for m in meta.values()},
                       lambda m, buf: scan_file(m, buf, root, run_id, limits))


def decode(spark: SparkSession, inv: Inventory, want: dict[int, list[tuple[int, int]]], root: str,
           times: list[int], limits: Limits) -> list[Note]:
    """Pass two over the segments that supply offsets: their records at those offsets."""
    meta = _meta(inv)
    files = {meta[i].file: meta[i] for i in want}
    return _over_files(spark, files, lambda m, buf: decode_file(m, buf, want[m.file_id], root, times, limits))


def finish(spark: SparkSession, inv: Inventory, file_ids: list[int], root: str, run_id: str,
           names: dict[str, str], txns: dict[str, list[tuple[int, int | None, str]]], redact: bool) -> list[Note]:
    """The ``records`` table from the staged records of each file, in parallel."""
    meta = _meta(inv)
    if not file_ids:
        return []

    def run(batches):
        for batch in batches:
            yield _notes_batch([(i, "records", json.dumps(finish_records(
                meta[i], root, run_id, names, txns.get(meta[i].cluster_id, []), redact)))
                for i in batch.column("file_id").to_pylist()])

    tasks = spark.createDataFrame([(i,) for i in file_ids], "file_id int")
    tasks = tasks.repartition(min(len(file_ids), spark.sparkContext.defaultParallelism * 2))
    return [tuple(r) for r in tasks.mapInArrow(run, NOTES).collect()]


def by_kind(notes: list[Note]) -> dict[str, list[tuple[int, object]]]:
    """Notes grouped by kind, bodies parsed: kind -> [(file_id, body)]."""
    out = defaultdict(list)
    for file_id, kind, body in notes:
        out[kind].append((file_id, json.loads(body)))
    return out
