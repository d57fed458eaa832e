#!/usr/bin/env python3
"""Regenerate ``fixtures/`` from kraftlog's own generator: the same bytes on every run.

    .venv/bin/python scripts/make_fixtures.py            # rewrite fixtures/
    .venv/bin/python scripts/make_fixtures.py --out DIR  # write them elsewhere (tests compare)

Small clusters, dense in events, with small segments and snapshot thresholds so that a few
minutes of simulated time show rolls, snapshots and every record type their versions write.
"""

import argparse
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from kraftlog.synth import TRUTH_FILE, ClusterSpec, generate
from kraftlog.synth.versions import parse_path

REPO = Path(__file__).resolve().parent.parent
START_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z
MINUTE = 60_000

_BASE = ClusterSpec(name="", seed="", metadata_versions=(), start_ms=START_MS, duration_ms=0, brokers=3,
                    topics=3, partitions=3, max_records_per_batch=8, segment_bytes=128 << 10,
                    snapshot_bytes=96 << 10, snapshot_interval_ms=15 * MINUTE)


def _spec(name: str, mv: str, minutes: int, **kw) -> ClusterSpec:
    return replace(_BASE, name=name, seed=f"fixture/{name}", metadata_versions=tuple(parse_path(mv)),
                   duration_ms=minutes * MINUTE, **kw)


#: fixture folder -> its clusters (one: the folder is the cluster; several: a fleet).
FIXTURES = {
    "single-node": [_spec("single-node", "4.0", 60, events_per_hour=150)],
    "three-nodes": [_spec("three-nodes", "3.9", 20, controllers=3, nodes=3, diverge=True, events_per_hour=150,
                          segment_bytes=64 << 10, snapshot_bytes=48 << 10)],
    "fleet": [
        _spec("cluster-3.3", "3.3-IV1", 20, events_per_hour=120, segment_bytes=64 << 10, snapshot_bytes=56 << 10),
        _spec("cluster-3.7", "3.7", 20, events_per_hour=120, segment_bytes=64 << 10, snapshot_bytes=56 << 10),
        _spec("cluster-4.1", "4.1", 20, controllers=3, kraft_version=1, events_per_hour=120,
              segment_bytes=64 << 10, snapshot_bytes=56 << 10),
    ],
}


def build(out: Path) -> list[str]:
    """Write every fixture folder and the README under ``out``; returns README lines."""
    lines = ["# Fixtures", "",
             "Written by `scripts/make_fixtures.py` with kraftlog's generator (`kraftlog.synth`); run it",
             "again to get the same bytes. Each cluster folder has `ground-truth.json`: what the simulation",
             "intended, offset by offset (see `kraftlog/synth/truth.py`).", "",
             "| fixture | cluster | metadata.version | nodes | offsets | log bytes |", "|---|---|---|---|---:|---:|"]
    for folder, specs in FIXTURES.items():
        for spec, s in zip(specs, generate(out / folder, specs), strict=True):
            where = folder if len(specs) == 1 else f"{folder}/{spec.name}"
            nodes = ", ".join(map(str, s["nodes"])) + (f" (node {s['divergingNode']} diverges)" if s["divergingNode"] else "")
            lines.append(f"| `{where}` | {s['clusterId']} | {', '.join(s['metadataVersions'])}"
                         f"{' kraft.version 1' if s['kraftVersion'] else ''} | {nodes} | 0..{s['endOffset'] - 1} "
                         f"| {s['logBytes']} |")
    lines += ["", f"Ground truth: `{TRUTH_FILE}` beside the node folders (or inside the log dir of a single node)."]
    (out / "README.md").write_text("\n".join(lines) + "\n")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "fixtures")
    args = parser.parse_args()
    for name in [*FIXTURES, "README.md"]:
        target = args.out / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    args.out.mkdir(parents=True, exist_ok=True)
    print("\n".join(build(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
