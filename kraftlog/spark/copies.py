"""One row per (cluster, offset) out of several nodes' copies of a log, and where the copies disagree.

Copies are ranked the way Raft compares logs: the leader epoch of the last batch, then the last
offset. The best copy supplies every offset it holds; another copy supplies only offsets no better
copy holds, and nothing from the first offset where it disagrees with the copy chosen there (an
uncommitted tail, which a follower would truncate). Copies are compared by digests of blocks of
offsets (``decode.BLOCK_OFFSETS``); only blocks whose digests differ are compared record by record.
"""

from collections import defaultdict
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from kraftlog.spark.decode import BLOCK, BLOCK_OFFSETS, FILE, RECORD
from kraftlog.spark.discover import Inventory

SUPPLIERS_SCHEMA = StructType([
    StructField("file_id", IntegerType(), False),
    StructField("lo", LongType(), False),
    StructField("hi", LongType(), False),
])


@dataclass(frozen=True, slots=True)
class FileSummary:
    """A readable file's decoded summary (the ``file`` row of the decode stage)."""

    file_id: int
    runs: list[tuple[int, int]]  # contiguous offsets, in file order
    batches: int
    records: int
    first_offset: int | None
    last_offset: int | None
    first_timestamp: int | None
    last_timestamp: int | None
    last_epoch: int | None
    invalid_batches: int
    skipped_bytes: int
    snapshot_timestamp: int | None

    @property
    def clean(self) -> bool:
        return not self.invalid_batches and not self.skipped_bytes


def summaries(decoded: DataFrame) -> dict[int, FileSummary]:
    rows = decoded.filter(F.col("row_kind") == FILE).select(
        "file_id", "runs", "batches", "records", "first_offset", F.col("last_offset_in_file").alias("last_offset"),
        "first_timestamp", "last_timestamp", "last_epoch", "invalid_batches", "skipped_bytes",
        "snapshot_timestamp").collect()
    return {r.file_id: FileSummary(**{**r.asDict(), "runs": [(x.lo, x.hi) for x in r.runs]}) for r in rows}


def ranks(inv: Inventory, files: dict[int, FileSummary]) -> dict[int, int]:
    """Copy id -> rank within its cluster (0 = the copy Raft would keep)."""
    newest: dict[int, tuple[int, int]] = {}
    for f in inv.readable:
        s = files.get(f.file_id)
        if f.kind == "segment" and s is not None and s.last_offset is not None:
            newest[f.copy_id] = max(newest.get(f.copy_id, (-1, -1)), (s.last_epoch, s.last_offset))
    out: dict[int, int] = {}
    by_cluster = defaultdict(list)
    for c in inv.copies:
        by_cluster[c.cluster_id].append(c)
    for copies in by_cluster.values():
        copies.sort(key=lambda c: (*(-x for x in newest.get(c.copy_id, (-1, -1))),
                                   c.node_id if c.node_id is not None else 1 << 31, c.log_dir))
        out.update((c.copy_id, i) for i, c in enumerate(copies))
    return out


def _segment_rows(decoded: DataFrame, files: DataFrame) -> DataFrame:
    segments = files.filter(F.col("kind") == "segment").select("file_id", "copy_id", "cluster_id", "node_id",
                                                                 "log_dir", "file")
    return decoded.join(F.broadcast(segments), "file_id")


def block_mismatches(decoded: DataFrame, files: DataFrame) -> DataFrame:
    """(cluster_id, block) where the copies holding the block do not hold the same batches."""
    blocks = _segment_rows(decoded.filter(F.col("row_kind") == BLOCK), files)
    per_copy = blocks.groupBy("cluster_id", "copy_id", "block").agg(
        F.bit_xor("block_digest").alias("digest"), F.min("block_lo").alias("lo"), F.max("block_hi").alias("hi"),
        F.sum("block_batches").alias("n"))
    per_block = per_copy.groupBy("cluster_id", "block").agg(
        F.count("*").alias("copies"), F.count_distinct("digest", "lo", "hi", "n").alias("variants"))
    return per_block.filter((F.col("copies") > 1) & (F.col("variants") > 1)).select("cluster_id", "block")


def divergence(decoded: DataFrame, files: DataFrame, mismatches: DataFrame, rank: DataFrame) -> DataFrame:
    """A row per (cluster, offset) that copies hold with different bytes or leader epochs."""
    rows = _segment_rows(decoded.filter(F.col("row_kind") == RECORD), files) \
        .withColumn("block", F.floor(F.col("base_offset") / BLOCK_OFFSETS)) \
        .join(F.broadcast(mismatches), ["cluster_id", "block"], "left_semi") \
        .join(F.broadcast(rank), "copy_id")
    held = rows.groupBy("cluster_id", "offset").agg(F.sort_array(F.collect_list(F.struct(
        "rank", "copy_id", "node_id", "log_dir", "file", "epoch", "crc", "base_offset", "last_offset",
    ))).alias("held"))
    same = " AND ".join(f"c.{k} = held[0].{k}" for k in ("epoch", "crc", "base_offset", "last_offset"))
    chosen = F.col("held")[0]
    return held.filter(F.size(F.array_distinct(F.expr(
        "transform(held, c -> struct(c.epoch, c.crc, c.base_offset, c.last_offset))"))) > 1).select(
        "cluster_id", "offset",
        chosen["node_id"].alias("chosen_node_id"), chosen["log_dir"].alias("chosen_log_dir"),
        chosen["epoch"].alias("chosen_epoch"),
        F.expr(f"transform(held, c -> named_struct('copy_id', c.copy_id, 'node_id', c.node_id, "
               f"'log_dir', c.log_dir, 'file', c.file, 'leader_epoch', c.epoch, 'batch_crc', c.crc, "
               f"'batch_base_offset', c.base_offset, 'batch_last_offset', c.last_offset, "
               f"'agrees', {same}))").alias("copies"))


def cuts(divergent: DataFrame) -> dict[int, int]:
    """Copy id -> the first offset where it disagrees with the copy chosen there."""
    rows = divergent.select("offset", F.explode("copies").alias("c")).filter(~F.col("c.agrees")) \
        .groupBy("c.copy_id").agg(F.min("offset").alias("cut")).collect()
    return {r.copy_id: r.cut for r in rows}


def _minus(lo: int, hi: int, taken: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[lo, hi] without the (sorted, disjoint) intervals already taken."""
    out = []
    for a, b in taken:
        if b < lo or a > hi:
            continue
        if a > lo:
            out.append((lo, a - 1))
        lo = max(lo, b + 1)
        if lo > hi:
            return out
    out.append((lo, hi))
    return out


def suppliers(inv: Inventory, files: dict[int, FileSummary], rank: dict[int, int],
              cut: dict[int, int]) -> list[tuple[int, int, int]]:
    """(file_id, lo, hi): which segment file supplies which offsets of its cluster."""
    segments = defaultdict(list)
    for f in inv.readable:
        if f.kind == "segment" and f.file_id in files:
            segments[f.copy_id].append(f)
    out = []
    taken: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for copy in sorted(inv.copies, key=lambda c: rank[c.copy_id]):
        limit = cut.get(copy.copy_id, 1 << 62) - 1
        held = taken[copy.cluster_id]
        for f in sorted(segments[copy.copy_id], key=lambda f: f.name_offset):
            for lo, hi in files[f.file_id].runs:
                for a, b in _minus(lo, min(hi, limit), held):
                    out.append((f.file_id, a, b))
                    held.append((a, b))
                    held.sort()
    return out


def chosen_records(spark: SparkSession, decoded: DataFrame, supplied: list[tuple[int, int, int]]) -> DataFrame:
    """The record rows each (cluster, offset) takes: from the file that supplies that offset."""
    sup = F.broadcast(spark.createDataFrame(supplied, SUPPLIERS_SCHEMA))
    rec = decoded.filter(F.col("row_kind") == RECORD)
    return rec.join(sup, (rec.file_id == sup.file_id) & rec["offset"].between(sup.lo, sup.hi), "left_semi")
