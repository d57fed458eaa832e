#!/usr/bin/env python3
"""Whole-log commands, old code beside new, on the same log: records per CPU-second and identical output.

Each command runs as its own process (``python -m kraftlog.cli.main``) once with ``--old`` on
``PYTHONPATH`` and once with ``--new``, alternating, best CPU time (user + sys, from ``wait4``) of
``--repeat``; the columnar decode (``scripts/bench_decode.py``'s ``columnar_pass``, the Spark job's
path) runs the same way on the log's segments, so every ratio is taken in one run on one machine.
stdout of old and new must be byte-identical (the report's HTML too) and so must the exit status;
a difference is printed and the script exits 1.

Usage: scripts/bench_cli.py LOGDIR --old TREE [--new TREE] [--repeat N] [--only NAME,...]
       [--history-topic T]
Prints one JSON line per command: records, old/new CPU seconds, records/CPU-s, speedup, and each
side's ratio to the columnar decode. ``history per change`` is the CPU of ``history --topic T``
less that of a history of a topic the log does not hold (the same walk and replay, nothing shown),
per change shown, taken in pairs run back to back (the median pair, and every pair): run it on
generated clusters of one length and different sizes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_COLUMNAR = """
import sys
sys.path.insert(0, {scripts!r})
from bench_decode import columnar_pass
records, errors = columnar_pass(sys.argv[1:])
print(records)
"""


def commands(logdir: Path, segments: list[str], topic: str, last: int, out: Path) -> dict[str, list[str]]:
    """name -> argv after ``kraftlog``; ``{out}`` is a file whose bytes count as output."""
    return {
        "dump --stats": ["dump", "--stats", *segments],
        "dump --format jsonl": ["dump", "--format", "jsonl", *segments],
        "dump (text)": ["dump", *segments],
        "inspect": ["inspect", str(logdir), "--format", "json"],
        "report": ["report", str(logdir), "-o", str(out)],
        "replay --base none": ["replay", str(logdir), "--base", "none", "--offset", str(last)],
        "history --topic": ["history", str(logdir), "--topic", topic, "--format", "jsonl"],
    }


def per_change(trees: dict[str, str], logdir: Path, topic: str, repeat: int,
               out: Path) -> tuple[dict[str, list[float]], int]:
    """(side -> ms of CPU per change ``history --topic`` shows, one figure per pair; changes). Each side
    runs the shown and an absent topic in ``repeat`` pairs, one right after the other, the sides
    alternating: load that drifts over the run then weighs on both runs of a pair alike, not on one
    block of runs (which has given negative costs)."""
    argv = ["-m", "kraftlog.cli.main", "history", str(logdir), "--format", "jsonl", "--topic"]
    pairs: dict[str, list[float]] = {side: [] for side in trees}
    changes = 0
    for _ in range(repeat):
        for side, tree in trees.items():
            shown, _, _, _, _, changes = run(tree, [*argv, topic], out)
            none = run(tree, [*argv, "kraftlog-bench-absent"], out)[0]
            pairs[side].append((shown - none) * 1000 / max(changes, 1))
    return pairs, changes


def run(tree: str, argv: list[str], out: Path) -> tuple[float, int, str, bytes, int, int]:
    """(CPU seconds, exit status, sha256 of stdout and of ``out`` if written, stdout's first KiB, peak
    RSS in KiB, lines of stdout)."""
    env = dict(os.environ, PYTHONPATH=tree)
    out.unlink(missing_ok=True)
    with tempfile.TemporaryFile() as stdout:
        p = subprocess.Popen([sys.executable, *argv], stdout=stdout, stderr=subprocess.DEVNULL, env=env,
                             cwd=tempfile.gettempdir())  # not a tree: ``-m`` puts the cwd first on sys.path
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        digest, lines = hashlib.sha256(), 0
        while chunk := stdout.read(1 << 20):  # the bench's own memory stays small: children inherit it
            digest.update(chunk)
            lines += chunk.count(b"\n")
        stdout.seek(0)
        text = stdout.read(1 << 10)
    if out.exists():  # the report says when it was made, to the minute: not a difference
        digest.update(re.sub(rb" on \d{4}-\d\d-\d\d \d\d:\d\d UTC;", b"", out.read_bytes()))
    return usage.ru_utime + usage.ru_stime, p.returncode, digest.hexdigest(), text, usage.ru_maxrss, lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logdir", type=Path, help="a __cluster_metadata-0 folder")
    ap.add_argument("--old", required=True, help="tree whose kraftlog is the old code (a git worktree)")
    ap.add_argument("--new", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--only", help="comma-separated command names (default: all)")
    ap.add_argument("--history-topic", default="topic-0")
    args = ap.parse_args(argv)
    segments = sorted(str(p) for p in args.logdir.glob("*.log"))
    scripts = str(Path(__file__).resolve().parent)
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.html"
        best = float("inf")
        for _ in range(args.repeat):
            cpu, _, _, text, _, _ = run(args.new, ["-c", _COLUMNAR.format(scripts=scripts), *segments], out)
            best = min(best, cpu)
        records = int(text)
        sys.path.insert(0, args.new)
        from kraftlog.files.logdir import scan_file
        from kraftlog.files.paths import classify
        last = max(scan_file(classify(p)).last_offset for p in segments)
        columnar = records / best
        print(json.dumps({"command": "columnar decode", "records": records, "cpu_s": round(best, 3),
                          "records_per_cpu_s": round(columnar)}), flush=True)
        wanted = set(args.only.split(",")) if args.only else None
        for name, cmd in commands(args.logdir, segments, args.history_topic, last, out).items():
            if wanted is not None and name not in wanted:
                continue
            argv_ = ["-m", "kraftlog.cli.main", *cmd]
            times = {"old": float("inf"), "new": float("inf")}
            rss = {"old": 0, "new": 0}
            seen: dict[str, tuple[int, str]] = {}
            for _ in range(args.repeat):
                for side, tree in (("old", args.old), ("new", args.new)):
                    cpu, rc, digest, _, peak, _ = run(tree, argv_, out)
                    times[side] = min(times[side], cpu)
                    rss[side] = max(rss[side], peak)
                    seen[side] = (rc, digest)
            same = seen["old"] == seen["new"]
            status |= not same
            print(json.dumps({
                "command": name, "records": records, "identical": same, "exit": seen["new"][0],
                "old_cpu_s": round(times["old"], 3), "new_cpu_s": round(times["new"], 3),
                "old_records_per_cpu_s": round(records / times["old"]),
                "new_records_per_cpu_s": round(records / times["new"]),
                "speedup": round(times["old"] / times["new"], 2),
                "old_vs_columnar": round(records / times["old"] / columnar, 2),
                "new_vs_columnar": round(records / times["new"] / columnar, 2),
                "old_peak_rss_mb": round(rss["old"] / 1024), "new_peak_rss_mb": round(rss["new"] / 1024),
            }), flush=True)
        if wanted is None or "history per change" in wanted:
            pairs, changes = per_change({"old": args.old, "new": args.new}, args.logdir, args.history_topic,
                                        args.repeat, out)
            row = {"command": "history per change", "logdir": str(args.logdir), "changes": changes}
            for side, ms in pairs.items():  # the median pair; the spread says how far to trust it
                row[f"{side}_ms"] = round(statistics.median(ms), 4)
                row[f"{side}_pairs_ms"] = [round(m, 4) for m in sorted(ms)]
            print(json.dumps(row), flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
