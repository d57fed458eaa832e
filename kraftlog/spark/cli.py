"""The Spark job's command line: copied KRaft ``__cluster_metadata`` log directories -> Parquet tables.

    kraftlog-spark --input PATH [PATH...] --output OUT [--mode replace|append]
        [--at-offset N ...] [--at-time T ...] [--every-checkpoint] [--report FILE] [--overwrite] [--wait-lock S]

also ``python -m kraftlog.spark ...`` (an embedded ``local[*]`` session; ``--master`` to override,
``--remote sc://...`` or ``SPARK_REMOTE`` for Spark Connect), and ``spark-submit
jobs/kraft_metadata.py ...`` on a cluster (the submitter's master). Entered through
``kraftlog.spark.__main__``, which says in one line when the ``spark`` extra is missing. The work
is in ``kraftlog.spark.job``; this module only reads the command line.
"""

import argparse
import json
import os
import sys

from pyspark.sql import SparkSession

from kraftlog.files.reader import DEFAULT_MAX_BATCH_BYTES, Limits
from kraftlog.spark.discover import InputError
from kraftlog.spark.guard import OutputLocked, UnsafeOutput, check_output, check_report, claim, one_line
from kraftlog.spark.job import MODES, Options, run
from kraftlog.spark.session import NoConnect, NoJava, session
from kraftlog.spark.sink import NotVisible
from kraftlog.state.rebuild import parse_time
from kraftlog.wire.codecs import DEFAULT_MAX_DECOMPRESSED

PROG = "kraftlog-spark"


def _time_text(text: str) -> str:
    """An ``--at-time`` checked before Spark starts (the views label it as given)."""
    try:
        parse_time(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--input", nargs="+", required=True, metavar="PATH",
                   help="log dirs, __cluster_metadata-0 folders, or folders holding many nodes' log dirs")
    p.add_argument("--output", required=True, metavar="OUT",
                   help="folder of Parquet tables, replaced when done if it is an earlier kraftlog output (or empty); "
                   "or an object-store URI (s3://, s3a://, ...) of Delta Lake tables, each replaced in one Delta "
                   "commit; never an input, inside one or holding one")
    p.add_argument("--mode", choices=MODES, default="replace",
                   help="replace: OUT holds this run's rows only (default). append: OUT's tables keep the rows of "
                   "the runs it holds and get this run's (a daily archive); every row has its run's run_id, "
                   "_manifest.json lists the runs (\"runs\") and names the newest (\"run_id\"). OUT must be a "
                   "kraftlog output whose tables have this version's columns, or not exist yet (else exit 2)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace OUT even if it is a folder kraftlog did not write (never a file, never an input; "
                   "not with --mode append)")
    p.add_argument("--wait-lock", type=float, default=0, metavar="SECONDS",
                   help="if another run is writing OUT, wait up to SECONDS for it to end (default: refuse, exit 1)")
    p.add_argument("--at-offset", type=int, action="append", default=[], metavar="N",
                   help="snapshot-equivalent views at offset N in every cluster (repeatable)")
    p.add_argument("--at-time", type=_time_text, action="append", default=[], metavar="T",
                   help="views after every record with timestamp <= T (ISO-8601, UTC unless it says; or epoch ms)")
    p.add_argument("--every-checkpoint", action="store_true",
                   help="views at each checkpoint's last contained offset (end offset - 1)")
    p.add_argument("--report", metavar="FILE",
                   help="also write the HTML timeline report (as `kraftlog report`) of each cluster's "
                   "first-ranked copy to FILE, or with several clusters one file each beside it "
                   "(out/r.html -> out/r-<cluster_id>.html); a FILE inside OUT is published with the tables. "
                   "Read and written on the driver, which reads the inputs for discovery already; never inside "
                   "an input. Exit 1 if a report fails (the tables are published all the same)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--master", help="Spark master (default: local[*], or what spark-submit was given)")
    where.add_argument("--remote", metavar="URL",
                       help="run through Spark Connect at URL (sc://host:port); also SPARK_REMOTE")
    p.add_argument("--no-redact", action="store_true", help="write secret config values and SCRAM keys as they are")
    p.add_argument("--max-batch-bytes", type=int, default=DEFAULT_MAX_BATCH_BYTES)
    p.add_argument("--max-decompressed", type=int, default=DEFAULT_MAX_DECOMPRESSED)
    p.add_argument("--debug", action="store_true",
                   help="a failed run prints its full traceback (also KRAFTLOG_DEBUG=1), not only the reason")
    args = p.parse_args(argv)
    try:
        check_output(args.output, args.input, args.overwrite, args.mode == "append")
        if args.report:
            check_report(args.report, args.input)
    except UnsafeOutput as e:
        p.exit(2, f"{p.prog}: error: {e}\n")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    try:  # the output is locked before Spark starts; ``run`` takes this claim as its own
        with claim(args.output, args.input, args.overwrite, args.report, args.wait_lock, args.mode == "append"):
            before = SparkSession.getActiveSession()  # one a caller made (a notebook, tests) is not ours to stop
            spark = session(args.master, PROG, remote=args.remote)
            try:
                manifest = run(spark, Options(
                    inputs=args.input, output=args.output, at_offsets=args.at_offset, at_times=args.at_time,
                    every_checkpoint=args.every_checkpoint, redact=not args.no_redact,
                    limits=Limits(args.max_batch_bytes, args.max_decompressed), report=args.report,
                    overwrite=args.overwrite, mode=args.mode))
            except BaseException:
                if spark is not before:
                    spark.stop()  # Spark's own lines of the failure come before the one line that says why
                raise
    except (InputError, UnsafeOutput, NoJava, NoConnect) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except (OutputLocked, NotVisible) as e:  # nothing published: the previous output, if any, is as it was
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing published to {args.output}", file=sys.stderr)
        return 130
    except Exception as e:  # nothing published: the previous output, if any, is as it was
        if args.debug or os.environ.get("KRAFTLOG_DEBUG"):
            raise
        print(f"{PROG}: error: {one_line(e, args.output)} (the run failed; --debug for the traceback)",
              file=sys.stderr)
        return 1
    print(json.dumps({k: manifest[k] for k in ("run_id", "counts", "stage_seconds", "reports")}, indent=2))
    failed = {c: r["error"] for c, r in manifest["reports"].items() if "error" in r}
    for cluster, error in failed.items():
        print(f"{PROG}: no report for cluster {cluster} ({error}); the tables are published in "
              f"{args.output}", file=sys.stderr)
    return 1 if failed else 0

