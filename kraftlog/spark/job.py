"""The whole job: discover, decode, deduplicate copies, drop aborted transactions, fold timelines,
cut views, write every table to staging and publish it with a manifest."""

import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pyspark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kraftlog import __version__
from kraftlog.files.reader import Limits
from kraftlog.spark import copies, entities, events, tables, views
from kraftlog.spark.discover import Inventory, discover
from kraftlog.spark.fold import history
from kraftlog.spark.output import Output, new_run_id
from kraftlog.spark.plan import Plan, Snapshot, plan
from kraftlog.spark.read import decoded
from kraftlog.spark.transactions import MARKERS, tag, transactions
from kraftlog.state.rebuild import parse_time
from kraftlog.wire.crc import IMPLEMENTATION as CRC_IMPLEMENTATION

#: Snapshot-equivalent views: table -> the timeline it is cut from.
VIEWS = {"state_topics": entities.TOPIC, "state_partitions": entities.PARTITION, "state_brokers": entities.BROKER,
         "state_configs": entities.CONFIG, "state_features": entities.FEATURE}


@dataclass
class Options:
    inputs: list[str]
    output: str
    at_offsets: list[int] = field(default_factory=list)
    at_times: list[str] = field(default_factory=list)  # ISO-8601 (UTC unless it says) or epoch ms
    every_checkpoint: bool = False
    redact: bool = True
    limits: Limits = field(default_factory=Limits)


class Stages:
    """Wall time per stage, for the manifest and the benchmark."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0) + time.perf_counter() - start, 3)


def _snapshots(inv: Inventory, summary: dict, rank: dict[int, int]) -> dict[str, list[Snapshot]]:
    """Each cluster's clean snapshots, one per end offset (from the best-ranked copy holding it)."""
    best: dict[tuple[str, int], tuple[int, Snapshot]] = {}
    for f in inv.readable:
        s = summary.get(f.file_id)
        if f.kind != "snapshot" or s is None or not s.clean or not s.batches:
            continue
        candidate = (rank[f.copy_id], Snapshot(f.name_offset, f.file_id, s.snapshot_timestamp))
        best[(f.cluster_id, f.name_offset)] = min(best.get((f.cluster_id, f.name_offset), candidate), candidate,
                                                  key=lambda x: x[0])
    out = defaultdict(list)
    for (cluster, _), (_, snap) in sorted(best.items()):
        out[cluster].append(snap)
    return out


def _plans(inv: Inventory, supplied: list[tuple[int, int, int]], snaps: dict[str, list[Snapshot]]) -> dict[str, Plan]:
    cluster_of = {f.file_id: f.cluster_id for f in inv.files}
    covered = defaultdict(list)
    for file_id, lo, hi in sorted(supplied, key=lambda x: x[1]):
        runs = covered[cluster_of[file_id]]
        if runs and runs[-1][1] + 1 >= lo:
            runs[-1] = (runs[-1][0], max(runs[-1][1], hi))
        else:
            runs.append((lo, hi))
    return {c: plan(covered.get(c, []), snaps.get(c, [])) for c in {c.cluster_id for c in inv.copies}}


def _points(spark: SparkSession, opts: Options, clusters: set[str], written_records: DataFrame,
            snaps: dict[str, list[Snapshot]], names: dict[int, str]) -> DataFrame:
    rows = [(c, n, f"offset {n}") for c in clusters for n in opts.at_offsets]
    if opts.at_times:
        rows += views.time_points(written_records, [(t, parse_time(t)) for t in opts.at_times])
    if opts.every_checkpoint:
        rows += [(c, s.end_offset - 1, f"checkpoint {names[s.file_id]}") for c, ss in snaps.items() for s in ss]
    return views.points(spark, rows)


def run(spark: SparkSession, opts: Options) -> dict:
    """Run the job; returns the manifest written beside the tables."""
    run_id, started = new_run_id(), datetime.now(UTC)
    out = Output(spark, opts.output, run_id)
    stages = Stages()
    try:
        with stages("discover"):
            inv = discover(opts.inputs)
            files = F.broadcast(inv.dataframe(spark)).cache()
        with stages("decode"):
            dec = out.write("_decoded", decoded(spark, inv, opts.limits), by_cluster=False)
            summary = copies.summaries(dec)
        with stages("copies"):
            rank = copies.ranks(inv, summary)
            rank_df = spark.createDataFrame(sorted(rank.items()), "copy_id int, rank int")
            mismatched = spark.createDataFrame(copies.block_mismatches(dec, files).collect(),
                                               "cluster_id string, block long")
            divergent = out.write("divergence", copies.divergence(dec, files, mismatched, rank_df))
            supplied = copies.suppliers(inv, summary, rank, copies.cuts(divergent))
        with stages("records"):
            names = tables.topic_names(dec, files).cache()
            chosen = tables.located_records(copies.chosen_records(spark, dec, supplied), files, names)
            markers = chosen.filter(F.col("record_type").isin(*MARKERS)) \
                .select("cluster_id", "offset", "timestamp", "record_type", "payload").collect()
            records = tag(spark, chosen, transactions(markers))
            written = out.write("records", tables.records_table(records, opts.redact))
        with stages("timelines"):
            snaps = _snapshots(inv, summary, rank)
            plans = _plans(inv, supplied, snaps)
            resets = {c: p.resets for c, p in plans.items()}
            replayed = events.replay_events(spark, records, dec, plans).cache()
            timelines = {}
            for entity in entities.ENTITIES:
                source = events.controller_events(records) if entity is entities.CONTROLLER \
                    else events.entity_events(entity, replayed, names)
                h = history(entity, source, resets, opts.redact)
                if entity is entities.CONFIG:
                    h = h.withColumn("resource_type", views.resource_type_name("resource_type_id"))
                with stages(entity.table):
                    timelines[entity.table] = out.write(entity.table, h)
            replayed.unpersist()
        with stages("views"):
            file_names = {f.file_id: f.file.rsplit("/", 1)[-1] for f in inv.files}
            at = _points(spark, opts, {c.cluster_id for c in inv.copies}, written, snaps, file_names).cache()
            state = {name: views.view(timelines[e.table], e, at) for name, e in VIEWS.items()}
            counts = state["state_partitions"].groupBy("cluster_id", "at_offset", "topic_id").count() \
                .withColumnRenamed("count", "partitions")
            state["state_topics"] = state["state_topics"].join(counts, ["cluster_id", "at_offset", "topic_id"], "left") \
                .fillna(0, ["partitions"])
            state["state_configs"] = state["state_configs"].withColumn(
                "resource_type", views.resource_type_name("resource_type_id"))
            for name, df in state.items():
                out.write(name, df)
        with stages("files"):
            seeds = {s.file_id: f"seeds the timelines at offset {s.end_offset - 1}"
                     for p in plans.values() for s in p.seeds}
            out.write("files", tables.files_table(spark, inv.dataframe(spark), summary, seeds))
            out.write("batches", tables.batches_table(dec, files))
            unreplayable = [(c, lo, hi) for c, p in plans.items() for lo, hi in p.unreplayable]
            out.write("problems", tables.problems_table(spark, dec, files, inv, unreplayable))
            out.drop("_decoded")
        manifest = _manifest(spark, out, opts, inv, rank, plans, stages, run_id, started)
        out.write_manifest(manifest)
        out.publish()
        return manifest
    except BaseException:
        out.abandon()
        raise


TABLES = ("files", "batches", "problems", "divergence", "records", *(e.table for e in entities.ENTITIES), *VIEWS)


def _manifest(spark: SparkSession, out: Output, opts: Options, inv: Inventory, rank: dict[int, int],
              plans: dict[str, Plan], stages: Stages, run_id: str, started: datetime) -> dict:
    counts = {t: out.counts[t] for t in TABLES}
    clusters = {}
    for c in sorted({c.cluster_id for c in inv.copies}):
        p = plans[c]
        clusters[c] = {
            "copies": [{"node_id": x.node_id, "log_dir": x.log_dir, "rank": rank[x.copy_id]}
                       for x in sorted(inv.copies, key=lambda x: rank[x.copy_id]) if x.cluster_id == c],
            "replayed_offsets": [list(r) for r in p.ranges],
            "seeds": [s.end_offset - 1 for s in p.seeds],
            "unreplayable_offsets": [list(r) for r in p.unreplayable],
        }
    return {
        "run_id": run_id,
        "started": started.isoformat(),
        "finished": datetime.now(UTC).isoformat(),
        "inputs": opts.inputs,
        "options": {"at_offsets": opts.at_offsets, "at_times": opts.at_times,
                    "every_checkpoint": opts.every_checkpoint, "redact": opts.redact,
                    "max_batch_bytes": opts.limits.max_batch_bytes, "max_decompressed": opts.limits.max_decompressed},
        "versions": {"kraftlog": __version__, "pyspark": pyspark.__version__, "python": sys.version.split()[0],
                     "crc32c": CRC_IMPLEMENTATION},
        "master": spark.sparkContext.master,
        "counts": counts,
        "stage_seconds": stages.seconds,
        "clusters": clusters,
    }
