"""One row per (cluster, offset) out of several nodes' copies of a log, and where the copies disagree.

Copies are ranked the way Raft compares logs (``files.copies.copy_order``, the rule the CLI uses
too): the leader epoch of the last batch, then the last offset. The best copy supplies every offset it holds; another copy supplies only offsets no better
copy holds, and nothing from the first offset where it disagrees with the copy chosen there (an
uncommitted tail, which a follower would truncate). Copies are compared by digests of blocks of
offsets (``decode.BLOCK_OFFSETS``); only blocks whose digests differ are compared offset by offset.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from kraftlog.files.copies import copy_order, minus
from kraftlog.files.logdir import read_leader_epoch_checkpoint
from kraftlog.files.walk import overlaps
from kraftlog.spark.decode import BLOCK_OFFSETS
from kraftlog.spark.discover import Inventory


@dataclass(frozen=True, slots=True)
class FileSummary:
    """A readable file as the scan found it."""

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


def summaries(files: list[tuple[int, dict]]) -> dict[int, FileSummary]:
    """From the scan's ``file`` notes."""
    return {i: FileSummary(i, **{**body, "runs": [tuple(r) for r in body["runs"]]}) for i, body in files}


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
        copies.sort(key=lambda c: copy_order(*newest.get(c.copy_id, (None, None)), c.node_id, c.log_dir))
        out.update((c.copy_id, i) for i, c in enumerate(copies))
    return out


def likely_first(inv: Inventory) -> set[int]:
    """Per cluster, the copy ``ranks`` will most likely put first, from what discovery saw: the
    last epoch of its leader-epoch-checkpoint, then its newest segment. Its records are decoded in
    the first pass; another copy's only where it turns out to supply offsets."""
    newest: dict[int, tuple] = {}
    for f in inv.readable:
        if f.kind == "segment":
            newest[f.copy_id] = max(newest.get(f.copy_id, (-1, -1)), (f.name_offset, f.bytes))
    best: dict[str, tuple[tuple, int]] = {}
    for c in inv.copies:
        epochs = f"{c.metadata_dir}/leader-epoch-checkpoint" if c.metadata_dir else None  # a path or URI
        try:
            epoch = max((e for e, _ in read_leader_epoch_checkpoint(epochs)), default=-1) if epochs else -1
        except OSError:
            epoch = -1
        score = (epoch, *newest.get(c.copy_id, (-1, -1)), -c.copy_id)
        if c.cluster_id not in best or score > best[c.cluster_id][0]:
            best[c.cluster_id] = (score, c.copy_id)
    return {copy_id for _, copy_id in best.values()}


def block_mismatches(inv: Inventory, blocks: list[tuple[int, dict]]) -> list[tuple[str, int]]:
    """(cluster_id, block) where the copies holding the block do not hold the same batches."""
    copy_of = {f.file_id: f.copy_id for f in inv.files}
    cluster_of = {c.copy_id: c.cluster_id for c in inv.copies}
    per_copy: dict[tuple[int, int], list[int]] = {}
    for file_id, b in blocks:
        acc = per_copy.setdefault((copy_of[file_id], b["block"]), [0, b["lo"], b["hi"], 0])
        acc[0] ^= b["digest"]
        acc[1], acc[2], acc[3] = min(acc[1], b["lo"]), max(acc[2], b["hi"]), acc[3] + b["batches"]
    variants = defaultdict(set)
    for (copy, block), acc in per_copy.items():
        variants[(cluster_of[copy], block)].add(tuple(acc))
    held = Counter((cluster_of[copy], block) for copy, block in per_copy)
    return sorted(k for k, v in variants.items() if held[k] > 1 and len(v) > 1)


#: The ``divergence`` table, as ``divergence`` selects it.
DIVERGENCE = StructType([
    StructField("cluster_id", StringType()), StructField("offset", LongType(), False),
    StructField("chosen_node_id", IntegerType()), StructField("chosen_log_dir", StringType()),
    StructField("chosen_epoch", IntegerType()),
    StructField("copies", ArrayType(StructType([
        StructField("copy_id", IntegerType()), StructField("node_id", IntegerType()),
        StructField("log_dir", StringType()), StructField("file", StringType()),
        StructField("leader_epoch", IntegerType()), StructField("batch_crc", LongType()),
        StructField("batch_base_offset", LongType()), StructField("batch_last_offset", LongType()),
        StructField("agrees", BooleanType()),
    ]), False), False),
])


def divergence(spark: SparkSession, batches: DataFrame, inv: Inventory, rank: dict[int, int],
               mismatches: list[tuple[str, int]]) -> DataFrame:
    """A row per (cluster, offset) that copies hold with different bytes or leader epochs, from the
    batches of the blocks whose digests differ."""
    copies = F.broadcast(spark.createDataFrame([(c.log_dir, c.copy_id, rank[c.copy_id]) for c in inv.copies],
                                               "log_dir string, copy_id int, rank int"))
    blocks = F.broadcast(spark.createDataFrame(mismatches, "cluster_id string, block long"))
    rows = batches.filter(F.col("file_kind") == "segment") \
        .withColumn("block", F.floor(F.col("base_offset") / BLOCK_OFFSETS)) \
        .join(blocks, ["cluster_id", "block"], "left_semi").join(copies, "log_dir") \
        .withColumn("offset", F.explode(F.sequence("base_offset", "last_offset"))) \
        .withColumnRenamed("leader_epoch", "epoch")
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


def unrelated(inv: Inventory, files: dict[int, FileSummary], rank: dict[int, int],
              cut: dict[int, int]) -> dict[int, str]:
    """Copy id -> why it is another log than its cluster's best copy: it differs from it at the
    first offset both hold (no batch in common), as two clusters that share a cluster id do. Such a
    copy is kept apart: it supplies no offset and no snapshot."""
    runs: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for f in inv.readable:
        if f.kind == "segment" and f.file_id in files:
            runs[f.copy_id] += files[f.file_id].runs
    best = {c.cluster_id: c for c in inv.copies if rank[c.copy_id] == 0}
    out = {}
    for c in inv.copies:
        ref = best[c.cluster_id]
        if c.copy_id not in cut or c is ref:
            continue
        common = [max(a, x) for a, b in runs[c.copy_id] for x, y in runs[ref.copy_id] if max(a, x) <= min(b, y)]
        if common and cut[c.copy_id] <= min(common):
            same = " and the same node id" if c.node_id == ref.node_id else ""
            out[c.copy_id] = (f"another log than node {ref.node_id} ({ref.log_dir}) under the same cluster id{same}: "
                              f"they differ from the first offset both hold ({min(common)}); kept apart, it "
                              f"supplies nothing")
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
                for a, b in minus(lo, min(hi, limit), held):
                    out.append((f.file_id, a, b))
                    held.append((a, b))
                    held.sort()
    return out


def supplies(want: dict[int, list[tuple[int, int]]], file_id: int, offset: int) -> bool:
    """Whether the file supplies the offset (``want`` as ``wanted`` gives it)."""
    at = np.asarray([offset])
    return bool(overlaps(at, at, want.get(file_id, []))[0])


def wanted(supplied: list[tuple[int, int, int]]) -> dict[int, list[tuple[int, int]]]:
    """File id -> the sorted offset intervals it supplies."""
    out = defaultdict(list)
    for file_id, lo, hi in sorted(supplied):
        out[file_id].append((lo, hi))
    return dict(out)
