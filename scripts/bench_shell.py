#!/usr/bin/env python3
"""How long the shell's ``at`` takes on a big log, forward and backward, and the peak memory.

Opens one node's copy with the shell's ``Cursor`` (what ``at`` runs) and times a fixed walk:
the end of the log (what ``kraftlog shell PATH`` starts at), far back by offset and by time (from
the snapshot at or below), a short step forward (only the records in between), a long step
forward (from the next snapshot), and back to the end. Each move is checked against ``rebuild``
at the same point for the first and last move (equal images), so the figures are of right answers.

Usage: scripts/bench_shell.py LOGDIR   (e.g. one made by
``kraftlog generate /tmp/big --max-bytes 1GiB --duration 120d --seed big``)
Prints one JSON line per move: point, seconds, records applied, the image's offset, and the
process's peak RSS so far (MiB, ``resource.getrusage``).
"""

from __future__ import annotations

import argparse
import json
import resource
import time

from kraftlog.files.logdir import find_nodes
from kraftlog.state.cursor import END, Cursor, Point
from kraftlog.state.rebuild import rebuild


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir")
    args = parser.parse_args()
    node = find_nodes(args.logdir)[0]
    cursor = Cursor(node)
    started = time.perf_counter()
    end = cursor.move(END).image.provenance
    print(json.dumps({"move": "start at the end", "seconds": round(time.perf_counter() - started, 3),
                      "offset": end.offset,
                      "peakRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))
    last = end.offset
    first_time = rebuild(node, offset=0).image.provenance.timestamp
    walk = [
        ("back to 25% by offset", Point(offset=last // 4)),
        ("forward 1000 offsets", Point(offset=last // 4 + 1000)),
        ("forward to 50% by time", Point(time_ms=first_time + (end.timestamp - first_time) // 2)),
        ("forward 100 offsets", None),
        ("forward to 90% by offset", Point(offset=last * 9 // 10)),
        ("back to 10% by time", Point(time_ms=first_time + (end.timestamp - first_time) // 10)),
        ("to the end", END),
    ]
    for name, point in walk:
        if point is None:
            point = Point(offset=cursor.image.provenance.offset + 100)
        started = time.perf_counter()
        built = cursor.move(point)
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({"move": name, "seconds": round(seconds, 3), "recordsSinceBase": built.records,
                          "offset": built.image.provenance.offset, "from": built.base, "peakRssMiB": round(peak)}))
        if name in ("back to 25% by offset", "to the end"):
            expected = rebuild(node, offset=point.offset, time_ms=point.time_ms).image
            assert built.image.to_json() == expected.to_json(), name


if __name__ == "__main__":
    main()
