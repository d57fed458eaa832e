#!/usr/bin/env python3
"""``history --topic``'s cost per change, in one process, on logs of different cluster sizes.

Each log is read once into memory (``log_entries``' blocks, the decode left out). Then, ``--repeat``
times and log after log, three histories are replayed in lockstep from the same starting point, as
``history`` runs them (``history.collected_apart``): one of ``--topic``, one of a topic no log holds (the
same replay, nothing shown), and that one again following a topic id no topic has (Kafka's reserved
``Uuid.ZERO_UUID``): the same replay and the same per-record work of telling a followed topic's records
apart (``_Matcher.walk``), nothing shown. Figures per change shown, with ``time.process_time``:

- ``direct``: only the work a change costs, timed where it is done: ``_Changes.after`` (called at each
  change: the record redacted, the topic held, and every 256 changes the rendering and the write) and
  the last ``_Changes.flush``. The collections the garbage collector makes while it runs are in it
  (``direct_collections``: their share).
- ``difference``: every entry is handed to each history (``_Changes.take``, the order turning), each
  timed; the sum of ``--topic``'s less that of the absent topic that follows an id: what the changes cost
  (paired entry by entry so load that drifts weighs on both alike, but the replay's own cost is in both
  sums, so it is the noisier figure).
- ``difference_absent``: the same, less the absent topic that follows no id (what ``scripts/bench_cli.py``'s
  ``history per change`` measures, less the decode and the process): it also holds what following a topic
  costs per record read, which a larger cluster's log has more of per change.

The images must end equal as each history keeps them (else the script exits 1): a history leaves other topics'
changes out (``image.KeptTopics``), so a partition is compared by its placement (``_kept``).

Usage: scripts/bench_history.py LOGDIR [LOGDIR ...] [--topic T] [--repeat N]
Prints one JSON line per log: changes, records, both figures per repeat (sorted) and their medians, in
ms per change.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kraftlog.cli import history, main, target  # noqa: E402
from kraftlog.files.records import Block, ReadProblems  # noqa: E402
from kraftlog.state.rebuild import earliest_base, log_entries, starting_point  # noqa: E402
from kraftlog.state.replay import rare_full_collections  # noqa: E402

ABSENT = "kraftlog-bench-absent"
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID (clients/.../common/Uuid.java): never a topic's id


def prepared(logdir: Path, topic: str):
    """(the args of ``history LOGDIR --topic T``, the log, its entries read once)."""
    args = main.build_parser().parse_args(["history", str(logdir), "--topic", topic, "--format", "jsonl"])
    log = target.open_log(args)
    image, start, _ = starting_point(log, None, None, earliest_base(log), main.limits_of(args), ReadProblems())
    entries = list(log_entries(log, start, main.limits_of(args), ReadProblems(), runs="blocks"))
    return args, log, entries


class _Collections:
    """CPU seconds the garbage collector spends, summed (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.spent, self._start = 0.0, 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.spent += time.process_time() - self._start


def one_pair(args, log, entries, sink, collections: _Collections) -> tuple[float, float, float, float, float, int]:
    """(CPU seconds of ``args.topic``'s history, of the absent topic's following an id, of the absent topic's, of
    the changes alone (``direct``), of the collections in those, changes shown)."""
    with history.collected_apart() as freeze:
        return _run(args, log, entries, sink, collections, freeze)


def _run(args, log, entries, sink, collections: _Collections, freeze) -> tuple[float, float, float, float, float, int]:
    sides = []
    for topic, followed in ((args.topic, None), (ABSENT, ZERO_UUID), (ABSENT, None)):
        a = argparse.Namespace(**{**vars(args), "topic": topic})
        image = starting_point(log, None, None, earliest_base(log), main.limits_of(a), ReadProblems())[0]
        match = history._Matcher(a, image)
        if followed is not None:
            match.topic_ids.add(followed)
        sides.append(history._Changes(a, image, match, sink, freeze))
    clock = time.process_time
    direct = [0.0, 0.0]  # CPU, collections in it

    def timed(work, *args) -> None:
        t, g = clock(), collections.spent
        work(*args)
        direct[0] += clock() - t
        direct[1] += collections.spent - g

    after = sides[0].after
    sides[0].after = functools.partial(timed, after)
    cpu = [0.0, 0.0, 0.0]
    orders = [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    for n, e in enumerate(entries):
        for k in orders[n % 3]:
            t = clock()
            sides[k].take(e)
            cpu[k] += clock() - t
    for k in (2, 1, 0):
        t = clock()
        timed(sides[k].flush) if k == 0 else sides[k].flush()
        cpu[k] += clock() - t
    if not _kept(sides[0].image) == _kept(sides[1].image) == _kept(sides[2].image):
        raise SystemExit(f"{args.path}: the histories' images differ")
    return cpu[0], cpu[1], cpu[2], direct[0], direct[1], sides[0].shown


def _kept(image) -> dict:
    """The image as every history keeps it: its partitions' replicas and directories, not their ISR, leaders and
    epochs (``image.KeptTopics``: those of topics not followed are left out)."""
    view = image.to_json()
    for topic in view["topics"].values():
        topic["partitions"] = {k: (p["replicas"], p["directories"]) for k, p in topic["partitions"].items()}
    return view


def main_(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logdirs", nargs="+", type=Path, help="__cluster_metadata-0 folders")
    ap.add_argument("--topic", default="inventory")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    logs = [prepared(d, args.topic) for d in args.logdirs]
    figures: list[dict[str, list[float]]] = [{"direct": [], "direct_collections": [], "difference": [],
                                              "difference_absent": []} for _ in logs]
    shown = [0] * len(logs)
    collections = _Collections()
    gc.callbacks.append(collections)
    with rare_full_collections(), open(os.devnull, "w") as sink:
        for _ in range(args.repeat):
            for k, (a, log, entries) in enumerate(logs):
                cpu, followed, none, direct, collected, shown[k] = one_pair(a, log, entries, sink, collections)
                for name, seconds in (("direct", direct), ("direct_collections", collected),
                                      ("difference", cpu - followed), ("difference_absent", cpu - none)):
                    figures[k][name].append(seconds * 1000 / max(shown[k], 1))
    gc.callbacks.remove(collections)
    for k, (a, _, entries) in enumerate(logs):
        row = {"logdir": str(a.path), "topic": args.topic, "changes": shown[k],
               "records": sum(len(e) if type(e) is Block else 1 for e in entries)}
        for name, ms in figures[k].items():
            row[f"{name}_ms"] = round(statistics.median(ms), 4)
            row[f"{name}_repeats_ms"] = [round(m, 4) for m in sorted(ms)]
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
