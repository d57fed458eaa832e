"""Offset coverage of a node's copy, whether its state can be rebuilt, and where copies differ."""

import filecmp
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kraftlog.files.logdir import FileScan, NodeDir
from kraftlog.files.paths import LogFile
from kraftlog.files.reader import Limits, Region, read_log_file


@dataclass(slots=True)
class Coverage:
    log_start: int | None = None
    log_end: int | None = None  # last offset present in the log
    gaps: list[tuple[int, int]] = field(default_factory=list)  # missing offsets, inclusive
    overlaps: list[tuple[int, int]] = field(default_factory=list)
    rebuildable: bool = False
    rebuild_from: LogFile | None = None  # the snapshot to start from; None = the log from offset 0
    reason: str = ""


def coverage(node: NodeDir, scans: dict[LogFile, FileScan]) -> Coverage:
    """Offsets the segments cover, and the latest clean snapshot the log continues without a gap."""
    c = Coverage()
    end = None
    for seg in node.segments:
        s = scans[seg]
        if s.first_offset is None:
            continue
        if c.log_start is None:
            c.log_start = s.first_offset
        elif s.first_offset > end + 1:
            c.gaps.append((end + 1, s.first_offset - 1))
        elif s.first_offset <= end:
            c.overlaps.append((s.first_offset, min(end, s.last_offset)))
        c.gaps.extend((a, b - 1) for a, b in s.discontinuities if b > a)
        end = s.last_offset if end is None else max(end, s.last_offset)
    c.log_end = end
    last_gap_end = max((b for _, b in c.gaps), default=-1)
    # a snapshot past the log's end proves offsets existed that no segment holds
    held = max((s.offset - 1 for s in node.snapshots if scans[s].clean and scans[s].batches), default=-1)
    if end is not None and held > end:
        c.gaps.append((end + 1, held))
    for snap in reversed(node.snapshots):
        s = scans[snap]
        if not s.clean or s.batches == 0:
            continue
        # the log must continue from the snapshot's end offset with no gap after it
        if end is None or snap.offset > end or (c.log_start <= snap.offset and snap.offset > last_gap_end):
            c.rebuildable, c.rebuild_from = True, snap
            c.reason = f"snapshot {snap.path.name}" + (
                f" then the log to offset {end}" if end is not None and end >= snap.offset else " (no log after it)")
            return c
    if c.log_start == 0 and not c.gaps:
        c.rebuildable, c.reason = True, f"the log from offset 0 to {end}"
    elif c.log_start is None:
        c.reason = "no segments and no usable snapshot"
    else:
        c.reason = (f"the log starts at {c.log_start}" if c.log_start else "the log has gaps") + \
            " and no clean snapshot precedes it"
    return c


@dataclass(slots=True)
class Divergence:
    node: str
    reference: str
    offset: int | None  # first offset where the copies differ; None = they agree where both have data
    detail: str
    agreed: int = 0  # identical batches both hold before ``offset``: none means they share no history


def _batch_keys(node: NodeDir, limits: Limits, left_out: set[str]) -> Iterator[tuple[int, int, int, int]]:
    for seg in node.segments:
        if seg.path.name in left_out:
            continue
        for item in read_log_file(seg.path, limits, records=False):
            if not isinstance(item, Region) and item.is_valid:  # damage, not another history
                yield item.base_offset, item.last_offset, item.partition_leader_epoch, item.crc


def _same_files(a: NodeDir, b: NodeDir) -> set[str]:
    """Names of the segments both copies hold byte for byte (compared at C speed: their batches agree
    without being walked)."""
    theirs = {s.path.name: s.path for s in b.segments}
    return {seg.path.name for seg in a.segments
            if seg.path.name in theirs and identical(seg.path, theirs[seg.path.name])}


def identical(a: Path, b: Path) -> bool:
    """Whether two files hold the same bytes; an unreadable one is walked like any other segment,
    where the reader reports it."""
    try:
        return filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def compare_copies(reference: NodeDir, other: NodeDir, limits: Limits = Limits()) -> Divergence:
    """Walk both copies' batches in offset order (streaming) to the first batch that differs; segments
    both hold byte for byte are not walked. A batch failing its CRC is left out (damage, which
    ``scan_file`` reports, not a different history). A file that cannot be read leaves them uncompared."""
    try:
        return _first_difference(reference, other, limits)
    except OSError as e:
        return Divergence(other.name, reference.name, None, f"not compared: {e.filename}: {e.strerror}")


def _first_difference(reference: NodeDir, other: NodeDir, limits: Limits) -> Divergence:
    same = _same_files(reference, other)
    a, b = _batch_keys(reference, limits, same), _batch_keys(other, limits, same)
    x, y = next(a, None), next(b, None)
    agreed = sum(1 for seg in reference.segments if seg.path.name in same and seg.path.stat().st_size)
    while x is not None and y is not None:
        if x == y:
            agreed += 1
            x, y = next(a, None), next(b, None)
        elif x[0] < y[0] and x[1] < y[0]:
            x = next(a, None)
        elif y[0] < x[0] and y[1] < x[0]:
            y = next(b, None)
        else:
            at = max(x[0], y[0])
            what = []
            if (x[0], x[1]) != (y[0], y[1]):
                what.append(f"batch {x[0]}-{x[1]} vs {y[0]}-{y[1]}")
            if x[2] != y[2]:
                what.append(f"leader epoch {x[2]} vs {y[2]}")
            if x[3] != y[3] and (x[0], x[1]) == (y[0], y[1]):
                what.append("different bytes (CRC)")
            return Divergence(other.name, reference.name, at, ", ".join(what), agreed)
    return Divergence(other.name, reference.name, None, "the copies agree where both hold data", agreed)
