#!/usr/bin/env python3
"""Time ``kraftlog generate`` writing a ~1 GiB metadata log; print one JSON line.

    .venv/bin/python scripts/bench_generate.py [--max-bytes 1GiB] [--out DIR] [--keep]

The cluster is a mid-sized one living for months (9 brokers, 60 topics of ~10 partitions, a
scenario every 5 minutes, a NoOp every 500 ms), stopped once its log reaches ``--max-bytes``.
The generation runs in a child process so that its peak RSS is measured alone.
"""

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARGS = ["--brokers", "9", "--topics", "60", "--partitions", "10", "--duration", "365d", "--seed", "bench",
        "--metadata-version", "3.9", "--events-per-hour", "12"]


def _bytes(root: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in root.rglob(pattern) if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-bytes", default="1GiB")
    parser.add_argument("--out", type=Path, help="where to write (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep what was written")
    args = parser.parse_args()
    base = args.out or Path(tempfile.mkdtemp(prefix="kraftlog-bench-"))
    out = base / "cluster"
    command = [sys.executable, "-m", "kraftlog.cli.main", "generate", str(out), *ARGS, "--max-bytes", args.max_bytes]
    start = time.perf_counter()
    subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    log_bytes = _bytes(out, "*.log")
    result = {
        "seconds": round(seconds, 1),
        "log_bytes": log_bytes,
        "snapshot_bytes": _bytes(out, "*.checkpoint"),
        "ground_truth_bytes": _bytes(out, "ground-truth.json"),
        "dir_bytes": _bytes(out, "*"),
        "log_mb_per_s": round(log_bytes / seconds / 1e6, 1),
        "dir_mb_per_s": round(_bytes(out, "*") / seconds / 1e6, 1),
        "peak_rss_mb": round(peak_kib / 1024, 1),
        "segments": len(list(out.rglob("*.log"))),
        "snapshots": len(list(out.rglob("*.checkpoint"))),
        "args": ARGS + ["--max-bytes", args.max_bytes],
    }
    print(json.dumps(result))
    if not args.keep:
        shutil.rmtree(out if args.out else base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
