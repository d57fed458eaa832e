"""The small physical tables, from what the passes over the files noted: ``files`` and ``problems``.
(``batches`` and ``records`` are written by the passes themselves, see ``decode``.)"""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from kraftlog.spark.copies import FileSummary
from kraftlog.spark.discover import Inventory

_SUMMARY = StructType([
    StructField("file_id", IntegerType(), False), StructField("batches", LongType(), True),
    StructField("records", LongType(), True), StructField("first_offset", LongType(), True),
    StructField("last_offset", LongType(), True), StructField("first_timestamp", LongType(), True),
    StructField("last_timestamp", LongType(), True), StructField("last_epoch", IntegerType(), True),
    StructField("invalid_batches", LongType(), True), StructField("skipped_bytes", LongType(), True),
    StructField("snapshot_timestamp", LongType(), True), StructField("seeds_replay", StringType(), True),
])
PROBLEMS_SCHEMA = StructType([
    StructField("cluster_id", StringType(), False), StructField("node_id", IntegerType(), True),
    StructField("log_dir", StringType(), True), StructField("file", StringType(), True),
    StructField("kind", StringType(), False), StructField("position", LongType(), True),
    StructField("length", LongType(), True), StructField("offset", LongType(), True),
    StructField("detail", StringType(), True),
])


def _time(ms: str) -> F.Column:
    return F.when(F.col(ms) > 0, F.timestamp_millis(F.col(ms)))


def files_table(spark: SparkSession, inv: Inventory, summary: dict[int, FileSummary], seeds: dict[int, str]) -> DataFrame:
    """Every file found, with what the scan found in it; ``seeds_replay`` says when a snapshot
    starts its cluster's timelines."""
    rows = [(s.file_id, s.batches, s.records, s.first_offset, s.last_offset, s.first_timestamp, s.last_timestamp,
             s.last_epoch, s.invalid_batches, s.skipped_bytes, s.snapshot_timestamp, seeds.get(s.file_id))
            for s in summary.values()]
    return inv.dataframe(spark).drop("copy_id").join(spark.createDataFrame(rows, _SUMMARY), "file_id", "left") \
        .withColumn("first_time", _time("first_timestamp")).withColumn("last_time", _time("last_timestamp")) \
        .drop("file_id")


#: Note kind -> problem kind.
PROBLEM_NOTES = {"region": None, "invalid": "invalid-batch", "batch-error": "batch-error",
                  "undecodable": "undecodable-record"}


def problem_rows(inv: Inventory, notes: dict[str, list[tuple[int, dict]]],
                 unreplayable: list[tuple[str, int, int]]) -> list[tuple]:
    """What could not be read or replayed: skipped bytes, invalid batches, batch and record decoding
    errors, log-dir problems, and log offsets no snapshot or earlier log makes replayable."""
    files = {f.file_id: f for f in inv.files}
    copies = {c.copy_id: c for c in inv.copies}
    rows = []
    for note, kind in PROBLEM_NOTES.items():
        for file_id, n in notes.get(note, []):
            f = files[file_id]
            detail = n.get("detail") if kind != "invalid-batch" else "the batch fails its CRC"
            rows.append((f.cluster_id, f.node_id, f.log_dir, f.file, kind or f"skipped-{n['reason']}",
                         n.get("position"), n.get("length"), n.get("offset"), detail))
    rows += [(copies[i].cluster_id, copies[i].node_id, copies[i].log_dir, None, "log-dir", None, None, None, m)
             for i, m in inv.problems]
    rows += [(c, None, None, None, "unreplayable", None, None, lo,
              f"offsets {lo}-{hi} precede every snapshot the log continues from: kept in records, not replayed")
             for c, lo, hi in unreplayable]
    return rows
