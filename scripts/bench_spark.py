#!/usr/bin/env python3
"""Time the Spark job end to end on a generated fleet; print one JSON line.

    .venv/bin/python scripts/bench_spark.py [--max-bytes 1GiB] [--clusters 4] [--input DIR]
        [--out DIR] [--keep] [--master local[2]]

Measures log records per second from the first file read to the last table and the manifest
written (``jobs/kraft_metadata.py``, Spark startup included), and how that time splits over the
job's stages (``stage_seconds`` of ``_manifest.json``). The target is 0.5 M records/s on local[2].

Without ``--input`` it first writes a fleet with ``kraftlog generate`` (``--clusters`` clusters
like ``bench_generate.py``'s, each capped at its share of ``--max-bytes``, since generate's cap is
per cluster) and times that separately; ``--keep`` keeps it, and ``--input`` reuses it. The job
runs in a child process so that its time and memory are its own.
"""

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kraftlog.cli.main import parse_size

REPO = Path(__file__).resolve().parent.parent
JOB = REPO / "jobs" / "kraft_metadata.py"
TARGET_RECORDS_PER_S = 500_000
#: bench_generate.py's cluster (months of NoOps, a scenario every 5 minutes), versions dealt out.
ARGS = ["--brokers", "9", "--topics", "60", "--partitions", "10", "--duration", "365d", "--seed", "bench",
        "--metadata-version", "3.9,4.0,3.7,4.1", "--events-per-hour", "12"]


def _bytes(root: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in root.rglob(pattern) if p.is_file())


def _inside_repo(path: Path) -> bool:
    return path.resolve().is_relative_to(REPO)


def generate(out: Path, clusters: int, max_bytes: int) -> tuple[float, list[str]]:
    """Write the fleet; returns the seconds it took and the arguments given."""
    args = [*ARGS, "--clusters", str(clusters), "--max-bytes", str(math.ceil(max_bytes / clusters))]
    command = [sys.executable, "-m", "kraftlog.cli.main", "generate", str(out), *args]
    start = time.perf_counter()
    subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, args


def _is_worker(pid: int) -> bool:
    """A Spark Python worker (``pyspark.daemon`` and the workers it forks, which keep its command line)."""
    try:
        return b"pyspark.daemon" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class TreeMemory:
    """Samples the RSS of a process and its descendants (driver, JVM, Python workers) each second."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_sum_kib = pid, 0
        self.hwm_kib: dict[str, int] = {}  # "comm" -> largest VmHWM seen for a process of that name
        self.worker_hwm_kib: dict[int, int] = {}  # pid of a Python worker (pyspark.daemon's forks) -> VmHWM
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _tree(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    stat = Path(f"/proc/{entry.name}/stat").read_text()
                except OSError:
                    continue
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
        out, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            out.append(pid)
            todo.extend(children.get(pid, []))
        return out

    def _sample(self) -> None:
        total = 0
        for pid in self._tree():
            try:
                status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                              if ":" in line)
            except OSError:
                continue
            if "VmRSS" not in status:
                continue
            total += int(status["VmRSS"].split()[0])
            name, hwm = status["Name"].strip(), int(status["VmHWM"].split()[0])
            self.hwm_kib[name] = max(self.hwm_kib.get(name, 0), hwm)
            if _is_worker(pid):
                self.worker_hwm_kib[pid] = max(self.worker_hwm_kib.get(pid, 0), hwm)
        self.peak_sum_kib = max(self.peak_sum_kib, total)

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            self._sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def run_job(fleet: Path, output: Path, master: str) -> tuple[float, int, TreeMemory]:
    """The job in a child process: wall seconds, the driver's ``ru_maxrss`` (KiB), sampled memory."""
    command = [sys.executable, str(JOB), "--input", str(fleet), "--output", str(output), "--master", master]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=sys.stderr)
    memory = TreeMemory(proc.pid)
    # wait4, not RUSAGE_CHILDREN: the generator's peak must not count as the job's
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    memory.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"bench_spark: the job failed with exit code {proc.returncode}")
    return seconds, usage.ru_maxrss, memory


def records_by_kind(output: Path) -> dict[str, int]:
    """``records_count`` of the ``batches`` table summed by file kind (segment, snapshot, ...)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    table = ds.dataset(output / "batches", format="parquet", partitioning="hive") \
        .to_table(columns=["file_kind", "records_count"])
    grouped = table.group_by("file_kind").aggregate([("records_count", "sum")])
    return {k: int(v) for k, v in zip(grouped["file_kind"].to_pylist(),
                                      pc.fill_null(grouped["records_count_sum"], 0).to_pylist(), strict=True)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-bytes", default="1GiB", help="log bytes of the whole fleet, at least (default 1GiB)")
    parser.add_argument("--clusters", type=int, default=4)
    parser.add_argument("--input", type=Path, help="a fleet generated before (kept with --keep): no generation")
    parser.add_argument("--out", type=Path, help="where to write the fleet and the tables (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the fleet and the tables written")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    max_bytes = parse_size(args.max_bytes)
    base = args.out or Path(tempfile.mkdtemp(prefix="kraftlog-bench-spark-"))
    if _inside_repo(base):
        parser.error(f"{base} is inside the repository; write elsewhere (e.g. /tmp)")
    base.mkdir(parents=True, exist_ok=True)
    fleet, output = args.input or base / "fleet", base / "tables"
    generation: dict = {}
    if args.input is None:
        seconds, gen_args = generate(fleet, args.clusters, max_bytes)
        generation = {"generate_seconds": round(seconds, 1), "generate_args": gen_args}
    log_bytes = _bytes(fleet, "*.log")

    job_seconds, driver_kib, memory = run_job(fleet, output, args.master)
    manifest = json.loads((output / "_manifest.json").read_text())
    by_kind = records_by_kind(output)
    records = manifest["counts"]["records"]
    stages = manifest["stage_seconds"]
    top = dict(stages)
    top["other (spark startup, manifest, publish)"] = round(job_seconds - sum(top.values()), 3)
    result = {
        "master": args.master,
        "clusters": len(manifest["clusters"]),
        "files": manifest["counts"]["files"],
        "input_bytes": manifest["input_bytes"],
        "log_bytes": log_bytes,
        "snapshot_bytes": _bytes(fleet, "*.checkpoint"),
        "log_records": records,
        "snapshot_records": by_kind.get("snapshot", 0),
        "records_decoded_incl_snapshots": records + by_kind.get("snapshot", 0),
        "job_seconds": round(job_seconds, 1),
        "records_per_s": round(records / job_seconds),
        "mb_per_s": round(manifest["input_bytes"] / job_seconds / 1e6, 2),
        "stage_seconds": top,
        "stage_share": {k: round(v / job_seconds, 3) for k, v in top.items()},
        "driver_peak_rss_mb": round(driver_kib / 1024, 1),
        "driver_peak_rss_note": "wait4 ru_maxrss of the driver python (or of a child it reaped, if larger)",
        "sampled_peak_rss_mb": {"job_tree_sum": round(memory.peak_sum_kib / 1024, 1),
                                **{k: round(v / 1024, 1) for k, v in sorted(memory.hwm_kib.items())}},
        # the budget ``--worker-memory`` holds: each Python worker's own high-water mark (VmHWM)
        "python_worker_peak_rss_mb": round(max(memory.worker_hwm_kib.values(), default=0) / 1024, 1),
        "python_workers": len(memory.worker_hwm_kib),
        "bench_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "counts": manifest["counts"],
        "target": {"target_records_per_s": TARGET_RECORDS_PER_S, "met": records / job_seconds >= TARGET_RECORDS_PER_S},
        **generation,
        "fleet": str(fleet),
        "fleet_below_max_bytes": args.input is None and log_bytes < max_bytes,
    }
    print(json.dumps(result))
    if args.keep:
        return 0
    shutil.rmtree(output)
    if args.input is None:
        shutil.rmtree(fleet)
    if args.out is None:
        shutil.rmtree(base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
