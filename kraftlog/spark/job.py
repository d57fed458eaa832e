"""The whole job: discover, read every copy, choose which copy supplies each offset, write those
records, fold timelines without aborted transactions, cut views, and publish every table with a
manifest, and, if asked, each cluster's HTML timeline report. The passes write the big tables
themselves (see ``passes``); Spark writes the small ones and cuts the views."""

import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StringType, StructField

from kraftlog import __version__
from kraftlog.files import storage
from kraftlog.files.logdir import load_node
from kraftlog.files.reader import Limits
from kraftlog.report import collect, write_report
from kraftlog.spark import copies, entities, guard, passes, tables, views
from kraftlog.spark.decode import BATCHES, RECORDS
from kraftlog.spark.discover import Inventory, discover, local_path
from kraftlog.spark.events import EVENTS_TABLE
from kraftlog.spark.output import Output, open_output
from kraftlog.spark.plan import Plan, Snapshot, plan
from kraftlog.spark.session import workers_started
from kraftlog.spark.sink import NotVisible
from kraftlog.spark.timelines import WORKER_MEMORY, events_per_fold, history_schema
from kraftlog.spark.transactions import Marker, transactions
from kraftlog.state.rebuild import parse_time
from kraftlog.wire.crc import IMPLEMENTATION as CRC_IMPLEMENTATION

#: Log records per bucket of timeline events, at most (a quarter of a log's records are events, or fewer).
EVENTS_PER_BUCKET = 4_000_000
#: Log records per bucket at least, however few events a fold takes (``timelines.events_per_fold``):
#: below that, a task per bucket costs more than folding a bucket in parts.
MIN_RECORDS_PER_BUCKET = 1 << 18
#: Log records per event a bucket is sized for: a third of the records are events (the bench fleet's
#: logs hold 26 %), so that a bucket's events fit one fold, not read again for each part of it.
RECORDS_PER_EVENT = 3
#: What a run does to the tables of the output it writes: replace them, or add its rows to them.
MODES = ("replace", "append")
TABLES = ("files", "batches", "problems", "divergence", "records", *(e.table for e in entities.ENTITIES),
          *views.VIEWS)


def _with_cluster(schema) -> object:
    s = from_arrow_schema(schema)
    return s.add(StructField("cluster_id", StringType(), True))


@dataclass
class Options:
    inputs: list[str]
    output: str
    at_offsets: list[int] = field(default_factory=list)
    at_times: list[str] = field(default_factory=list)  # ISO-8601 (UTC unless it says) or epoch ms
    every_checkpoint: bool = False
    redact: bool = True
    limits: Limits = field(default_factory=Limits)
    report: str | None = None  # HTML file on the driver's filesystem; one per cluster when there are several
    overwrite: bool = False  # replace an existing output kraftlog did not write (see ``guard``)
    mode: str = "replace"  # or "append": the output keeps the rows of the runs it holds (see ``output``)
    worker_memory: int = WORKER_MEMORY  # bytes a Python worker may hold (``timelines.events_per_fold``)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r}: one of {', '.join(MODES)}")


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


def _snapshots(inv: Inventory, summary: dict, rank: dict[int, int], apart: set[int]) -> dict[str, list[Snapshot]]:
    """Each cluster's clean snapshots, one per end offset (from the best-ranked copy holding it; none
    from a copy ``apart``, another log under the same cluster id)."""
    best: dict[tuple[str, int], tuple[int, Snapshot]] = {}
    for f in inv.readable:
        s = summary.get(f.file_id)
        if f.kind != "snapshot" or s is None or not s.clean or not s.batches or f.copy_id in apart:
            continue
        candidate = (rank[f.copy_id], Snapshot(f.name_offset, f.file_id, s.snapshot_timestamp))
        key = (f.cluster_id, f.name_offset)
        best[key] = min(best.get(key, candidate), candidate, key=lambda x: x[0])
    out = defaultdict(list)
    for (cluster, _), (_, snap) in sorted(best.items()):
        out[cluster].append(snap)
    return out


def _buckets(summary: dict, per_fold: int) -> int:
    """Buckets of timeline events, from the size of the logs and the events a fold takes at once
    (``per_fold``): one per ``RECORDS_PER_EVENT * per_fold`` log records (between
    ``MIN_RECORDS_PER_BUCKET`` and ``EVENTS_PER_BUCKET``), at least ``passes.MIN_TASKS``, so that a
    bucket is folded whole, its staged events read once. Not from the cores a cluster has: the same
    input is bucketed the same way everywhere."""
    per_bucket = min(EVENTS_PER_BUCKET, max(MIN_RECORDS_PER_BUCKET, RECORDS_PER_EVENT * per_fold))
    return max(passes.MIN_TASKS, -(-sum(s.records for s in summary.values()) // per_bucket))


def _check_decoded(out: Output, want: dict[int, list]) -> None:
    """Every file that supplies records has its staged records reported and visible to the driver
    (``finish_records`` reads them by file id), before the pass that reads them."""
    decoded = {int(p["part"]) for p in out.check("decoded")}
    missing = sorted(set(want) - decoded)
    if missing:
        raise NotVisible(f"no task reported the staged records of input file {missing[0]} (of {len(missing)} "
                         "files): a task's report is lost")


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


def choose(inv: Inventory, summary: dict, rank: dict[int, int], cut: dict[int, int]
           ) -> tuple[dict[int, list[tuple[int, int]]], dict[str, list[Snapshot]], dict[str, Plan]]:
    """From the copies' ranks and where each diverges from the copy chosen (``cut``): which segment
    supplies which offsets (``copies.wanted``), each cluster's snapshots and plan. A copy that is
    another log under the same cluster id supplies nothing, and is a problem of ``inv``."""
    apart = copies.unrelated(inv, summary, rank, cut)
    inv.problems += apart.items()
    supplied = copies.suppliers(inv, summary, rank, cut | dict.fromkeys(apart, -1))
    snaps = _snapshots(inv, summary, rank, set(apart))
    return copies.wanted(supplied), snaps, _plans(inv, supplied, snaps)


def supplied_notes(notes: dict[str, list], late: dict[str, list], want: dict[int, list[tuple[int, int]]]) -> None:
    """The record notes of pass one and of the late decode, kept where the file supplies the offset:
    what a copy holds beyond the offsets it supplies is another copy's to tell."""
    notes |= {kind: [(i, n) for i, n in notes[kind] + late[kind] if copies.supplies(want, i, n["offset"])]
              for kind in ("marker", "topic", "undecodable", "batch-error")}


def context(inv: Inventory, notes: dict[str, list], seeded: dict[str, list]
            ) -> tuple[dict[str, list[tuple[int, int | None, int | None, str]]], dict[str, str]]:
    """What every ``records`` row depends on beyond its file: each cluster's metadata transactions
    (begin, end, end timestamp, state; sorted) and the topic names by id (of the log and the seeds)."""
    cluster_of = {f.file_id: f.cluster_id for f in inv.files}
    txns = defaultdict(list)
    for cluster, begin, end, end_ts, state in transactions(Marker(cluster_of[i], **m) for i, m in notes["marker"]):
        txns[cluster].append((begin, end, end_ts, state))
    names = {n["topic_id"]: n["name"] for _, n in notes["topic"] + seeded["topic"]}
    return {c: sorted(t) for c, t in txns.items()}, names


def _points(opts: Options, inv: Inventory, plans: dict[str, Plan], decoded: list[tuple[int, dict]],
            snaps: dict[str, list[Snapshot]]) -> list[tuple[str, int, str]]:
    """(cluster_id, at_offset, label) for every view requested."""
    clusters = sorted({c.cluster_id for c in inv.copies})
    rows = [(c, n, f"offset {n}") for c in clusters for n in opts.at_offsets]
    cluster_of = {f.file_id: f.cluster_id for f in inv.files}
    last = {c: max((hi for _, hi in p.ranges + p.unreplayable), default=None) for c, p in plans.items()}
    for k, text in enumerate(opts.at_times):
        later: dict[str, int] = {}
        for file_id, body in decoded:
            c, first = cluster_of[file_id], body["later"][k]
            if first is not None and first < later.get(c, 1 << 62):
                later[c] = first
        rows += [(c, later[c] - 1 if c in later else last[c], f"time {text}") for c in clusters
                 if c in later or last[c] is not None]
    if opts.every_checkpoint:
        names = {f.file_id: f.file.rsplit("/", 1)[-1] for f in inv.files}
        # a 0-0 checkpoint (a dynamic quorum's bootstrap) holds no metadata: there is no state before offset 0
        rows += [(c, s.end_offset - 1, f"checkpoint {names[s.file_id]}") for c, ss in snaps.items() for s in ss
                 if s.end_offset > 0]
    return sorted(set(rows))


def report_file(report: str, cluster_id: str, clusters: int) -> Path:
    """``report`` itself for one cluster; for several, ``<stem>-<cluster_id><suffix>`` beside it. Kafka's
    cluster ids are base64url; anything else (from a copied meta.properties) must not name another folder."""
    path = Path(local_path(report))
    if clusters == 1:
        return path
    return path.with_name(f"{path.stem}-{re.sub(r'[^A-Za-z0-9_-]', '_', cluster_id)}{path.suffix}")


def _reports(opts: Options, inv: Inventory, rank: dict[int, int],
             place: Callable[[Path], Path] = lambda path: path) -> dict[str, dict]:
    """Each cluster's report (``kraftlog report``'s page) of the copy ranked first, read on the driver as
    discovery was, and written where ``place`` says (see ``Output.place``). A report that fails is
    recorded with its error and the tables are published all the same."""
    clusters = sorted({c.cluster_id for c in inv.copies})
    out = {}
    for cluster in clusters:
        best = min((c for c in inv.copies if c.cluster_id == cluster), key=lambda c: rank[c.copy_id])
        path = report_file(opts.report, cluster, len(clusters))
        entry = {"path": str(path), "node_id": best.node_id, "log_dir": best.log_dir}
        try:
            node = load_node(storage.resolve(best.log_dir),  # a URI stays one (Path would make s3:// s3:/)
                             storage.resolve(best.metadata_dir) if best.metadata_dir else None)
            model = collect(node, limits=opts.limits, redact=opts.redact)
            written = place(path)
            written.parent.mkdir(parents=True, exist_ok=True)
            entry |= {"bytes": write_report(model, written), "problems": model.problems.total}
        except Exception as e:
            entry["error"] = f"{type(e).__name__}: {e}"
        out[cluster] = entry
    return out


def run(spark: SparkSession, opts: Options) -> dict:
    """Run the job; returns the manifest written beside the tables. The output is checked and locked
    first (``guard.claim``, which the command line took already before starting Spark)."""
    with guard.claim(opts.output, opts.inputs, opts.overwrite, opts.report, append=opts.mode == "append") as claim:
        return _run(spark, opts, claim)


def _run(spark: SparkSession, opts: Options, claim: guard.Claim) -> dict:
    run_id, started = claim.run_id, datetime.now(UTC)
    out = open_output(spark, opts.output, run_id, append=opts.mode == "append")
    stages = Stages()
    try:
        out.check_appendable(TABLES)
        with stages("discover"):
            inv = discover(opts.inputs)
        with stages("read"):
            workers_started()
            first = copies.likely_first(inv)
            eager = {f.file_id for f in inv.readable if f.copy_id in first}
            notes = passes.by_kind(passes.read(spark, inv, out.root, run_id, opts.limits, eager, opts.redact))
            out.reported(notes["part"])
            summary = copies.summaries(notes["file"])
            out.staged("batches", _with_cluster(BATCHES), sum(s.batches for s in summary.values()))
        with stages("copies"):
            rank = copies.ranks(inv, summary)
            mismatched = copies.block_mismatches(inv, notes["block"])
            if mismatched:
                cut = copies.cuts(out.write("divergence", copies.divergence(spark, out.frame("batches"), inv, rank,
                                                                            mismatched)))
            else:  # no query when every block that several copies hold agrees
                out.empty("divergence", copies.DIVERGENCE)
                cut = {}
            want, snaps, plans = choose(inv, summary, rank, cut)
            buckets = _buckets(summary, events_per_fold(opts.worker_memory))
        with stages("decode"):  # the segments of other copies, where they supply offsets
            late = passes.by_kind(passes.decode(spark, inv, {i: w for i, w in want.items() if i not in eager},
                                                out.root, opts.limits, opts.redact))
            out.reported(late["part"])
            _check_decoded(out, want)
            supplied_notes(notes, late, want)
        with stages("seeds"):
            seeded = passes.by_kind(passes.seeds(spark, inv, [s for p in plans.values() for s in p.seeds], out.root,
                                                 buckets, opts.limits, opts.redact))
            out.reported(seeded["part"])
        with stages("records"):
            cluster_of = {f.file_id: f.cluster_id for f in inv.files}
            txns, names = context(inv, notes, seeded)
            finished = passes.by_kind(passes.finish(
                spark, inv, want, out.root, run_id, names, txns,
                {c: p.ranges for c, p in plans.items()}, opts.redact, [parse_time(t) for t in opts.at_times],
                buckets))
            out.reported(finished["part"])
            out.staged("records", _with_cluster(RECORDS), sum(n["records"] for _, n in finished["finished"]))
        with stages("timelines"):
            epochs: dict[tuple[str, int], tuple[int, int]] = {}
            for i, e in finished["epoch"]:
                key = (cluster_of[i], e["epoch"])
                epochs[key] = min(epochs.get(key, (e["offset"], e["timestamp"])), (e["offset"], e["timestamp"]))
            starts = defaultdict(list)
            for (c, e), (o, t) in sorted(epochs.items()):
                starts[c].append((e, o, t))
            events = defaultdict(list)
            for part in out.check(EVENTS_TABLE):
                events[part["value"]].append(part)
            written = passes.by_kind(passes.timelines(spark, out.root, buckets, events,
                                                      {c: p.resets for c, p in plans.items()}, starts, names,
                                                      opts.redact, run_id, events_per_fold(opts.worker_memory)))
            out.reported(written["part"])
            for e in entities.ENTITIES:
                out.staged(e.table, _with_cluster(history_schema(e)), sum(n[e.table] for _, n in written["timeline"]))
        with stages("views"):
            points = _points(opts, inv, plans, finished["finished"], snaps)
            if points:
                histories = {e.table: out.frame(e.table) for e in entities.ENTITIES}
                for name, df in views.views(histories, views.points(spark, points).cache()).items():
                    out.write(name, df)
            else:  # no query, so a run without points uses no Spark SQL at all
                for name in views.VIEWS:
                    out.empty(name, views.schema(name))
        with stages("files"):
            seeds = {s.file_id: f"seeds the timelines at offset {s.end_offset - 1}"
                     for p in plans.values() for s in p.seeds}
            out.rows("files", tables.file_rows(inv, summary, seeds), tables.FILES)
            unreplayable = [(c, lo, hi) for c, p in plans.items() for lo, hi in p.unreplayable]
            found = {kind: notes[kind] + seeded[kind] for kind in tables.PROBLEM_NOTES}
            out.rows("problems", tables.problem_rows(inv, found, unreplayable), tables.PROBLEMS_SCHEMA)
            for tmp in ("decoded", EVENTS_TABLE):
                out.drop(tmp)
        reports = {}
        if opts.report:
            with stages("report"):
                reports = _reports(opts, inv, rank, out.place)
        manifest = _manifest(spark, out, opts, inv, rank, plans, stages, run_id, started, reports)
        manifest["removed_stale"] = claim.removed  # earlier runs' staging folders
        manifest["runs"] = [*runs(out.earlier), run_entry(manifest)]
        out.write_manifest(manifest)
        out.publish()
        return manifest
    except BaseException:
        out.abandon()
        raise


def run_entry(manifest: dict) -> dict:
    """What the manifest's ``runs`` says of one run: its id, times, inputs and the rows it wrote."""
    entry = {k: manifest[k] for k in ("run_id", "started", "finished", "inputs", "counts")}
    if "delta_versions" in manifest:
        entry["delta_versions"] = manifest["delta_versions"]
    return entry


def runs(manifest: dict | None) -> list[dict]:
    """The runs whose rows an output holds, oldest first, by its manifest (one written before
    manifests listed them holds its own run's rows only)."""
    if manifest is None:
        return []
    return manifest.get("runs") or [run_entry(manifest)]


def _manifest(spark: SparkSession, out: Output, opts: Options, inv: Inventory, rank: dict[int, int],
              plans: dict[str, Plan], stages: Stages, run_id: str, started: datetime, reports: dict[str, dict]) -> dict:
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
        "inputs": [local_path(i) for i in opts.inputs],
        "mode": opts.mode,
        "options": {"at_offsets": opts.at_offsets, "at_times": opts.at_times,
                    "every_checkpoint": opts.every_checkpoint, "redact": opts.redact, "report": opts.report,
                    "max_batch_bytes": opts.limits.max_batch_bytes, "max_decompressed": opts.limits.max_decompressed,
                    "worker_memory": opts.worker_memory},
        "versions": {"kraftlog": __version__, "pyspark": pyspark.__version__, "python": sys.version.split()[0],
                     "crc32c": CRC_IMPLEMENTATION},
        "master": spark.conf.get("spark.master", None),
        "input_bytes": sum(f.bytes for f in inv.readable),
        "counts": {t: out.counts[t] for t in TABLES},
        "stage_seconds": stages.seconds,
        "clusters": clusters,
        "reports": reports,  # cluster id -> path, bytes, node_id, log_dir, problems (or error)
    }

