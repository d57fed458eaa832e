"""``kraftlog generate``: synthetic KRaft metadata log directories with their ground truth."""

import argparse
import re
import sys
from pathlib import Path

from kraftlog.cli import main

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


def duration_ms(text: str) -> int:
    """``6h``, ``90m``, ``1d12h``, ``500ms``: milliseconds."""
    t = text.strip().lower()
    parts = _DURATION.findall(t)
    if not parts or "".join(n + u for n, u in parts) != t:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 6h, 90m, 1d12h)")
    return int(sum(float(n) * _UNITS_MS[u] for n, u in parts))


def add_parser(sub) -> None:
    p = sub.add_parser(
        "generate", help="write synthetic KRaft metadata log directories (and their ground truth)",
        description="Simulate a KRaft cluster over a span of time and write what its nodes' controllers "
        "would have written: per node a log dir with __cluster_metadata-0/ (rolled segments, .checkpoint "
        "snapshots, quorum-state, leader-epoch-checkpoint, partition.metadata), meta.properties and "
        "bootstrap.checkpoint, at the record versions each metadata.version writes. Events: controller "
        "elections, broker restarts and crashes, ISR storms, leader elections, reassignments, topic "
        "create/delete/re-create, configs, ACLs, SCRAM, quotas, delegation tokens, producer-id blocks, "
        "metadata transactions (committed and aborted), a NoOp every 500 ms. The same seed gives the same "
        "bytes. ground-truth.json beside each cluster says what the simulation intended, offset by offset.")
    p.add_argument("out", metavar="OUT", type=Path,
                   help="new or empty folder: the log dir itself for one node of one cluster, else "
                   "node-<id>/ per node, and <cluster>/ per cluster of a fleet")
    p.add_argument("--brokers", type=int, default=3, metavar="B")
    p.add_argument("--controllers", type=int, metavar="C", help="voters (default 3 with 3+ brokers, else 1)")
    p.add_argument("--dedicated-controllers", action="store_true",
                   help="controllers are nodes of their own (ids B+1..B+C) instead of combined broker,controller nodes")
    p.add_argument("--topics", type=int, default=5, metavar="T", help="topics created at the start")
    p.add_argument("--partitions", type=int, default=3, metavar="P", help="partitions per topic (about)")
    p.add_argument("--replication-factor", type=int, metavar="R", help="default: min(3, B)")
    p.add_argument("--duration", type=duration_ms, default="1h", metavar="SPAN", help="simulated time, e.g. 6h (default 1h)")
    p.add_argument("--start", default="2025-01-01T00:00:00Z", metavar="TIME", help="simulated start (ISO-8601 or epoch ms)")
    p.add_argument("--seed", default="0", metavar="S")
    p.add_argument("--metadata-version", default="3.9", metavar="MV[,MV...]",
                   help="a release (3.3 .. 4.1), a name (3.3-IV1) or a level; A..B formats at A and upgrades "
                   "through each release to B; a comma-separated list is dealt out over --clusters (default 3.9)")
    p.add_argument("--kraft-version", type=int, choices=(0, 1), default=0,
                   help="1: a dynamic quorum (KRaftVersion and Voters control records; needs 3.9+)")
    p.add_argument("--nodes", type=int, default=1, metavar="N", help="node copies to write, voters first (default 1)")
    p.add_argument("--diverge", action="store_true",
                   help="the last written voter leads an epoch whose tail never commits, then dies (needs 3+ voters)")
    p.add_argument("--clusters", type=int, default=1, metavar="K", help="a fleet of K clusters (default 1)")
    p.add_argument("--events-per-hour", type=float, default=30.0, metavar="N", help="scenario rate (default 30)")
    p.add_argument("--segment-bytes", type=main.parse_size, default=8 << 20, metavar="SIZE",
                   help="metadata.log.segment.bytes (default 8MiB)")
    p.add_argument("--snapshot-bytes", type=main.parse_size, default=20 << 20, metavar="SIZE",
                   help="metadata.log.max.record.bytes.between.snapshots (default 20MiB)")
    p.add_argument("--snapshot-interval", type=duration_ms, default="1h", metavar="SPAN",
                   help="metadata.log.max.snapshot.interval.ms (default 1h)")
    p.add_argument("--max-records-per-batch", type=int, default=10_000, metavar="N",
                   help="the controller's records per batch of a non-atomic result (default 10000)")
    p.add_argument("--max-bytes", type=main.parse_size, metavar="SIZE",
                   help="stop the simulation early once a cluster's log holds this much")


def specs_of(args) -> list:
    """The cluster specs the arguments describe (raises ValueError on bad combinations)."""
    from kraftlog.state.rebuild import parse_time
    from kraftlog.synth import ClusterSpec, fleet
    from kraftlog.synth.versions import parse_path

    paths = [tuple(parse_path(item)) for item in args.metadata_version.split(",")]
    if args.clusters < 1:
        raise ValueError("--clusters must be at least 1")
    if args.clusters == 1 and len(paths) > 1:
        raise ValueError("several metadata versions need --clusters to deal them out to")
    controllers = args.controllers if args.controllers is not None else (3 if args.brokers >= 3 else 1)
    base = ClusterSpec(
        name=args.out.name, seed=str(args.seed), metadata_versions=paths[0], start_ms=parse_time(args.start),
        duration_ms=args.duration, brokers=args.brokers, controllers=controllers,
        combined=not args.dedicated_controllers, topics=args.topics, partitions=args.partitions,
        replication_factor=args.replication_factor or min(3, args.brokers), kraft_version=args.kraft_version,
        events_per_hour=args.events_per_hour, nodes=args.nodes, diverge=args.diverge,
        max_records_per_batch=args.max_records_per_batch, segment_bytes=args.segment_bytes,
        snapshot_bytes=args.snapshot_bytes, snapshot_interval_ms=args.snapshot_interval, max_bytes=args.max_bytes)
    return [base] if args.clusters == 1 else fleet(base, args.clusters, paths)


def run(args) -> int:
    from kraftlog.synth import TRUTH_FILE, generate

    try:
        specs = specs_of(args)
        summaries = generate(args.out, specs)
    except (ValueError, FileExistsError) as e:
        raise main.UsageError(str(e)) from None
    for spec, s in zip(specs, summaries, strict=True):
        where = args.out if len(specs) == 1 else args.out / spec.name
        print(f"{where}: cluster {s['clusterId']}, {', '.join(s['metadataVersions'])}, nodes {s['nodes']}; "
              f"offsets 0..{s['endOffset'] - 1}, {s['logBytes']} log bytes; truth in {where / TRUTH_FILE}",
              file=sys.stderr)
    return 0
