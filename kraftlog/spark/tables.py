"""The rows of the small physical tables, from what the passes over the files noted: ``files`` and
``problems`` (``Output.rows`` writes them; ``batches`` and ``records`` are written by the passes
themselves, see ``decode``)."""

from datetime import UTC, datetime

from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

from kraftlog.spark.copies import FileSummary
from kraftlog.spark.discover import FILES_SCHEMA, Inventory

FILES = StructType([
    *(f for f in FILES_SCHEMA.fields if f.name not in ("file_id", "copy_id")),
    StructField("batches", LongType(), True), StructField("records", LongType(), True),
    StructField("first_offset", LongType(), True), StructField("last_offset", LongType(), True),
    StructField("first_timestamp", LongType(), True), StructField("last_timestamp", LongType(), True),
    StructField("last_epoch", IntegerType(), True), StructField("invalid_batches", LongType(), True),
    StructField("skipped_bytes", LongType(), True), StructField("snapshot_timestamp", LongType(), True),
    StructField("seeds_replay", StringType(), True), StructField("first_time", TimestampType(), True),
    StructField("last_time", TimestampType(), True),
])
PROBLEMS_SCHEMA = StructType([
    StructField("cluster_id", StringType(), False), StructField("node_id", IntegerType(), True),
    StructField("log_dir", StringType(), True), StructField("file", StringType(), True),
    StructField("kind", StringType(), False), StructField("position", LongType(), True),
    StructField("length", LongType(), True), StructField("offset", LongType(), True),
    StructField("detail", StringType(), True),
])


def _time(ms: int | None) -> datetime | None:
    """Kafka's unset timestamps (-1, 0) are null times."""
    return datetime.fromtimestamp(ms / 1000, UTC) if ms is not None and ms > 0 else None


def file_rows(inv: Inventory, summary: dict[int, FileSummary], seeds: dict[int, str]) -> list[tuple]:
    """Every file found (``FILES``), with what the read found in it; ``seeds_replay`` says when a
    snapshot starts its cluster's timelines."""
    rows = []
    for f in inv.files:
        s = summary.get(f.file_id)
        found = (None,) * 10 if s is None else (
            s.batches, s.records, s.first_offset, s.last_offset, s.first_timestamp, s.last_timestamp, s.last_epoch,
            s.invalid_batches, s.skipped_bytes, s.snapshot_timestamp)
        rows.append((*f[2:], *found, seeds.get(f.file_id), _time(found[4]), _time(found[5])))
    return rows


#: Note kind -> problem kind.
PROBLEM_NOTES = {"region": None, "invalid": "invalid-batch", "batch-error": "batch-error",
                 "undecodable": "undecodable-record", "unreadable": "unreadable"}


def problem_rows(inv: Inventory, notes: dict[str, list[tuple[int, dict]]],
                 unreplayable: list[tuple[str, int, int]]) -> list[tuple]:
    """What could not be read or replayed: skipped bytes, invalid batches, batch and record decoding
    errors, log-dir problems, files that cannot be opened (``unreadable``), and log offsets no snapshot or earlier log makes replayable."""
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
    rows += [(f.cluster_id, f.node_id, f.log_dir, f.file, "unreadable", None, None, None, f.skip_reason)
             for f in inv.files if f.kind == "unreadable"]
    rows += [(c, None, None, None, "unreplayable", None, None, lo,
              f"offsets {lo}-{hi} precede every snapshot the log continues from: kept in records, not replayed")
             for c, lo, hi in unreplayable]
    return rows
