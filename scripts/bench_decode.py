#!/usr/bin/env python3
"""Decode throughput of metadata log files: kraftlog beside kafka-python, on the same bytes.

kraftlog's runs read each file (CRC checked) and decode every record into a typed
``MetadataRecord`` / ``ControlRecord`` without rendering anything, in two ways: ``kraftlog`` walks
``Batch`` and ``Record`` objects (the CLI's path); ``kraftlog-columnar`` walks the file into numpy
columns and decodes each distinct value once (the Spark job's path: a quiet log is mostly
identical NoOp batches). kafka-python's run parses the
same files with ``MemoryRecords`` / ``DefaultRecordBatch`` (CRC checked, key and value read) and
stops there: it has no metadata schema, so the ratio understates what kraftlog does per record.
aiokafka's run reads the batches with its Cython reader (``aiokafka.record._crecords``, CRC
checked) and decodes each record's value with kraftlog's schema: what a C record reader plus
kraftlog's schema costs per record (skipped when aiokafka is not installed). The columnar and
aiokafka runs do the same work: every byte CRC-checked, every record's offset, timestamp, key and
value read, every record's value decoded by ``decode_metadata`` (``decode_control``), the columnar
run once per distinct value of a walk, aiokafka's once per record through the same cache of recent
values; the order the runs take does not change their figures.
Each run is timed in CPU seconds of this process (so that other load on the machine counts less), best-of
``--repeat``, with the files in the page cache.

Usage: scripts/bench_decode.py FILE... [--repeat N] [--old TREE]...
Prints three JSON lines (four with aiokafka): kraftlog's two runs, then kafka-python's with ``ratio`` and
``ratio_columnar`` = kraftlog records/s over kafka-python records/s; then aiokafka's, with the same
ratios over its records/s.

``--old TREE`` (a checkout of kraftlog, any number of them) also times the object path of each tree
against this one's, side by side: each tree's pass runs in its own process (importing that tree's
kraftlog), the trees taking turns ``--rounds`` times, best CPU time of all; one more line per tree
(``parser`` ``kraftlog@TREE``, this tree first) with ``ratio`` = this tree's records/s over its.
With ``--repeat 1`` each pass is its process's first, as in one CLI run: decoders generated and
value caches empty (later passes find the values of the pass before cached).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kraftlog.files.reader import Region, read_log_file
from kraftlog.schema import decode_control, decode_metadata

HERE = Path(__file__).resolve().parents[1]  # this tree


def kraftlog_pass(paths: list[str]) -> tuple[int, int]:
    """(records, records that failed to decode)."""
    records = errors = 0
    for path in paths:
        for batch in read_log_file(path):
            if isinstance(batch, Region):
                continue
            errors += not batch.is_valid
            control = batch.is_control
            for r in batch.records:
                rec = decode_control(r.key, r.value) if control else decode_metadata(r.value)
                errors += rec.error is not None
            records += len(batch.records)
    return records, errors


def columnar_pass(paths: list[str]) -> tuple[int, int]:
    """(records, records that failed to decode), each distinct (value, control) decoded once."""
    import numpy as np

    from kraftlog.files.walk import walk
    from kraftlog.wire.batch import CONTROL_BIT

    records = errors = 0
    for path in paths:
        with open(path, "rb") as f:
            buf = f.read()
        for w in walk(buf):
            errors += int((~w.crc_valid).sum())
            control = ((w.header["attributes"] & CONTROL_BIT) != 0)[w.rec_batch]
            counts = np.bincount(w.rec_kv * 2 + control)  # codes below 2 * len(w.kv)
            distinct = np.flatnonzero(counts)
            for k, n in zip(distinct.tolist(), counts[distinct].tolist(), strict=True):
                key, value = w.kv[k >> 1]
                rec = decode_control(key, value) if k & 1 else decode_metadata(value)
                errors += n * (rec.error is not None)
            records += len(w.rec_offset)
    return records, errors


def kafka_python_pass(paths: list[str]) -> tuple[int, int]:
    from kafka.record import MemoryRecords

    records = errors = 0
    for path in paths:
        with open(path, "rb") as f:
            memory = MemoryRecords(f.read())
        while (batch := memory.next_batch()) is not None:
            errors += not batch.validate_crc()
            for record in batch:
                record.key, record.value  # noqa: B018 - the parse is the point
                records += 1
    return records, errors


def aiokafka_pass(paths: list[str]) -> tuple[int, int]:
    """(records, records that failed to decode): aiokafka's C batch reader, kraftlog's schema."""
    from aiokafka.record._crecords import MemoryRecords as CMemoryRecords

    records = errors = 0
    for path in paths:
        with open(path, "rb") as f:
            memory = CMemoryRecords(f.read())
        while (batch := memory.next_batch()) is not None:
            errors += not batch.validate_crc()
            control = batch.is_control_batch
            for record in batch:
                rec = decode_control(record.key, record.value) if control else decode_metadata(record.value)
                errors += rec.error is not None
                records += 1
    return records, errors


def timed(run: Callable[[list[str]], tuple[int, int]], paths: list[str], repeat: int) -> tuple[int, int, float]:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        records, errors = run(paths)
        best = min(best, time.process_time() - start)
    return records, errors, best


def figures(parser: str, paths: list[str], size: int, records: int, errors: int, seconds: float) -> dict:
    return {"files": len(paths), "bytes": size, "records": records, "seconds": round(seconds, 4),
            "records_per_s": round(records / seconds), "mb_per_s": round(size / 1e6 / seconds, 2),
            "errors": errors, "parser": parser}


def trees(paths: list[str], size: int, old: list[str], repeat: int, rounds: int) -> list[dict]:
    """The object pass of this tree and of each ``old`` tree, each in a process of its own that
    imports that tree's kraftlog (only what every version has: ``read_log_file``, the decoders),
    taking turns; best CPU seconds over all rounds and repeats."""
    roots = [str(HERE), *(str(Path(t).resolve()) for t in old)]
    best: dict[str, tuple[int, int, float]] = {}
    for _ in range(rounds):
        for root in roots:
            env = {**os.environ, "PYTHONPATH": root}
            out = subprocess.run([sys.executable, __file__, "--object-pass", "--repeat", str(repeat), *paths],
                                 env=env, cwd=root, check=True, capture_output=True, text=True).stdout
            records, errors, seconds = json.loads(out)
            if root not in best or seconds < best[root][2]:
                best[root] = records, errors, seconds
    lines = [figures(f"kraftlog@{root}", paths, size, *best[root]) for root in roots]
    for line in lines:
        line["ratio"] = round(lines[0]["records_per_s"] / line["records_per_s"], 2)
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", metavar="FILE")
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    ap.add_argument("--old", action="append", default=[], metavar="TREE",
                    help="a kraftlog checkout whose object path to time beside this one's (repeatable)")
    ap.add_argument("--rounds", type=int, default=3, help="turns each tree takes with --old (default 3)")
    ap.add_argument("--object-pass", action="store_true", help=argparse.SUPPRESS)  # a tree's process (--old)
    args = ap.parse_args(argv)
    if args.object_pass:
        print(json.dumps(timed(kraftlog_pass, args.files, args.repeat)))
        return 0
    size = sum(os.path.getsize(p) for p in args.files)
    ours = figures("kraftlog", args.files, size, *timed(kraftlog_pass, args.files, args.repeat))
    columnar = figures("kraftlog-columnar", args.files, size, *timed(columnar_pass, args.files, args.repeat))
    theirs = figures("kafka-python", args.files, size, *timed(kafka_python_pass, args.files, args.repeat))
    theirs["ratio"] = round(ours["records_per_s"] / theirs["records_per_s"], 2)
    theirs["ratio_columnar"] = round(columnar["records_per_s"] / theirs["records_per_s"], 2)
    lines = [ours, columnar, theirs]
    try:
        import aiokafka.record._crecords  # noqa: F401
    except ImportError:
        pass
    else:
        c = figures("aiokafka+kraftlog-schema", args.files, size, *timed(aiokafka_pass, args.files, args.repeat))
        c["ratio"] = round(ours["records_per_s"] / c["records_per_s"], 2)
        c["ratio_columnar"] = round(columnar["records_per_s"] / c["records_per_s"], 2)
        lines.append(c)
    if args.old:
        lines += trees(args.files, size, args.old, args.repeat, args.rounds)
    for line in lines:
        print(json.dumps(line))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
