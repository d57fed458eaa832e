"""``kraftlog report``: one node's log as a self-contained HTML page of timelines."""

import sys

from kraftlog.cli import main, progress, target
from kraftlog.files.paths import read_by


def add_parser(sub) -> None:
    p = sub.add_parser(
        "report", help="write an HTML timeline report of the cluster's log (controller, brokers, partitions, ...)",
        description="Walk the metadata log (every copy under PATH assembled, or one node's with --node) once, "
        "replaying it, and write one HTML file with the charts a responder needs: controller leadership and Raft "
        "epochs, broker lanes, partition health (offline, leader on a fenced broker, under min ISR, "
        "under-replicated, ELR; over time and at the end), partition leader changes and ISR size, ISR storms, "
        "topics, config and ACL changes, feature levels and the log's "
        "composition. The file needs no network to view; times are UTC and hovering a mark shows its "
        "offset. Exit 1 when the log had problems (the report lists them).")
    target.add_node_args(p)
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    p.add_argument("--buckets", type=int, default=None, metavar="N",
                   help="most time buckets in the charts (default 240); the bucket width follows the log's span")


@progress.shown("path")
def run(args) -> int:
    from kraftlog.report import collect, write_report
    from kraftlog.report.collect import MAX_BUCKETS
    from kraftlog.state.rebuild import on_disk

    if args.buckets is not None and args.buckets < 10:
        raise main.UsageError("--buckets must be at least 10")
    if (given := read_by(args.output, [args.path])) is not None:
        raise main.UsageError(f"--output {args.output} is inside the input {given} (or its log dir); "
                              "reading never writes into an input")
    limits = main.limits_of(args)
    log = target.open_log(args)
    if not log.pieces and not log.snapshots:
        for line in log.unreadable():  # often the reason: named first
            print(f"kraftlog: problem: {line}", file=sys.stderr)
        raise main.Refused(f"nothing to report: {on_disk(log)}")
    model = collect(log, limits=limits, max_buckets=args.buckets or MAX_BUCKETS, redact=not args.no_redact,
                    apply_invalid=args.apply_invalid)
    size = write_report(model, args.output)
    print(f"kraftlog: wrote {args.output} ({size / 2**20:.1f} MiB): offsets {model.first_offset}..{model.last_offset}, "
          f"{model.records:,} records from {model.base}", file=sys.stderr)
    for problem in model.problems:
        print(f"kraftlog: problem: {problem}", file=sys.stderr)
    if model.problems.omitted:
        print(f"kraftlog: ... and {model.problems.omitted} more problems", file=sys.stderr)
    return 1 if model.problems.total else 0
