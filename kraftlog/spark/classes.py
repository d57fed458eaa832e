"""The driver JVM's class-data-sharing archive: write it once, and embedded sessions start faster.

    python -m kraftlog.spark.classes [--archive FILE] [--force]
    python -m kraftlog.spark.classes --remove

A Spark driver loads and verifies about ten thousand classes before its first job; Java maps them
from an archive instead when given one (``-XX:SharedArchiveFile``). This runs the job once on a
small generated cluster with the JVM told to archive every class it loaded at
exit (``-XX:ArchiveClassesAtExit``), and puts the archive where ``session`` looks for it (see
``session.class_archive``: one per pyspark install and Java). Without an archive, sessions start
as before. It is about 112 MiB and takes a run of the job to write (20-45 s on two shared cores),
which a session's start-up gain (10 s of 21 s under load) repays after about four sessions
(``scripts/bench_class_archive.py``), so ``scripts/setup.sh`` writes it only when asked
(``KRAFTLOG_CLASS_ARCHIVE=1``). ``--remove`` deletes every archive this wrote for any pyspark and Java.
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path

from pyspark import SparkContext

from kraftlog.spark.job import Options, run
from kraftlog.spark.session import class_archive, driver_options, session
from kraftlog.synth import ClusterSpec, generate
from kraftlog.synth.versions import parse_path

#: A small cluster that still rolls segments, takes snapshots and writes every record type 4.1 does.
_CLUSTER = ClusterSpec(name="classes", seed="kraftlog-classes", metadata_versions=tuple(parse_path("4.1")),
                       start_ms=1_735_689_600_000, duration_ms=20 * 60_000, events_per_hour=120,
                       max_records_per_batch=8, segment_bytes=64 << 10, snapshot_bytes=56 << 10,
                       snapshot_interval_ms=5 * 60_000)


def write_archive(target: Path) -> None:
    """Run the job once in this process with a JVM that archives its classes into ``target``
    when it exits, and wait for that. Needs a process with no Spark session yet."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with tempfile.TemporaryDirectory(prefix="kraftlog-classes-") as tmp:
        generate(Path(tmp) / "log", [_CLUSTER])
        spark = session("local[2]", "kraftlog-classes",
                        {"spark.driver.extraJavaOptions": driver_options(archive_at_exit=partial)})
        run(spark, Options(inputs=[f"{tmp}/log"], output=f"{tmp}/out"))
        jvm = SparkContext._gateway.proc  # spark-submit's exec'd JVM, which exits when its stdin closes
        spark.stop()
        jvm.stdin.close()
        jvm.wait(timeout=300)
    if not partial.is_file() or partial.stat().st_size == 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"the JVM (exit code {jvm.returncode}) wrote no class archive")
    partial.replace(target)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kraftlog.spark.classes", description=__doc__.split("\n\n")[0])
    p.add_argument("--archive", type=Path, help="where to write it (default: where sessions look for it)")
    p.add_argument("--force", action="store_true", help="write it again even if it exists")
    p.add_argument("--remove", action="store_true",
                   help="delete the archives written for every pyspark and Java (in the folder of the default one)")
    args = p.parse_args(argv)
    target = args.archive or class_archive()
    if target is None:
        print("kraftlog.spark.classes: no java found (JAVA_HOME or PATH); nothing done", file=sys.stderr)
        return 1
    if args.remove:
        if args.archive or args.force:
            p.error("--remove takes no other option")
        return _remove(target)
    if target.exists() and not args.force:
        print(f"kraftlog.spark.classes: {target} exists (--force writes it again)")
        return 0
    try:
        write_archive(target)
    except Exception as e:
        print(f"kraftlog.spark.classes: no archive written ({type(e).__name__}: {e}); sessions start without one",
              file=sys.stderr)
        return 1
    print(f"kraftlog.spark.classes: wrote {target} ({target.stat().st_size >> 20} MiB)")
    return 0


def _remove(default: Path) -> int:
    """Delete what ``write_archive`` wrote beside ``default``: files with its names only."""
    folder = default.parent
    written = [a for a in [*folder.glob("spark-driver-*.jsa"), *folder.glob(".spark-driver-*.jsa.*.tmp")]
               if a.is_file()]
    freed = sum(a.stat().st_size for a in written)
    for archive in written:
        archive.unlink()
    print(f"kraftlog.spark.classes: removed {len(written)} archive(s), {freed >> 20} MiB, from {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
