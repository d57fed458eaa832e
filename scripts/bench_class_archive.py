#!/usr/bin/env python3
"""Does the driver's class archive pay? Its start-up gain beside its set-up cost; one JSON line.

    .venv/bin/python scripts/bench_class_archive.py [--pairs 5] [--master local[1]] [--no-write]

Times ``pairs`` paired Spark session start-ups in child processes, with the archive and without
(``XDG_CACHE_HOME`` pointed at an empty folder), the order alternating within pairs so that load
from other processes falls on both: from the child's first line to its first job's result, and the
child's whole life (JVM exit included). Then, unless ``--no-write``, writes an archive into a
temporary folder as ``python -m kraftlog.spark.classes`` does, and times that. Needs the archive
where sessions look for it (``python -m kraftlog.spark.classes``) for the runs with it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from kraftlog.spark.session import class_archive

PROBE = """import time; t0 = time.perf_counter()
import sys
from kraftlog.spark.session import session
spark = session(sys.argv[1], "bench-class-archive")
spark.range(1).count()
print(time.perf_counter() - t0)
spark.stop()
"""


def _start(master: str, env: dict[str, str]) -> tuple[float, float]:
    """(seconds to the first job's result, seconds of the child's life)."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PROBE, master], env=env, capture_output=True, text=True,
                          timeout=600, check=True)
    return float(proc.stdout.split()[-1]), time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--master", default="local[1]")
    p.add_argument("--no-write", action="store_true", help="do not time writing an archive")
    args = p.parse_args()
    archive = class_archive()
    if archive is None or not archive.is_file():
        print(f"bench_class_archive: no archive at {archive}; run python -m kraftlog.spark.classes first",
              file=sys.stderr)
        return 1
    runs: dict[str, list[tuple[float, float]]] = {"with": [], "without": []}
    with tempfile.TemporaryDirectory(prefix="kraftlog-bench-cds-") as tmp:
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
        bare = {**env, "XDG_CACHE_HOME": tmp}
        for i in range(args.pairs):
            for kind in (("with", "without") if i % 2 == 0 else ("without", "with")):
                runs[kind].append(_start(args.master, env if kind == "with" else bare))
        write_s = None
        if not args.no_write:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "kraftlog.spark.classes", "--archive", f"{tmp}/probe.jsa"],
                           env=env, check=True, capture_output=True, timeout=900)
            write_s = time.perf_counter() - t0

    def median(kind: str, i: int) -> float:
        return round(statistics.median(r[i] for r in runs[kind]), 2)

    gain = median("without", 0) - median("with", 0)
    print(json.dumps({
        "master": args.master, "pairs": args.pairs, "archive_mib": archive.stat().st_size >> 20,
        "first_job_s": {"with": median("with", 0), "without": median("without", 0)},
        "process_s": {"with": median("with", 1), "without": median("without", 1)},
        "runs": runs, "gain_s": round(gain, 2), "write_s": None if write_s is None else round(write_s, 1),
        "sessions_to_pay_back": None if write_s is None or gain <= 0 else round(write_s / gain),
        "load_avg": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
