"""An image that moves along a node's log: forward by applying the records in between, anywhere
else from the snapshot ``rebuild`` would start from (``rebuild.base_snapshot``).

Invariant: the image is exactly what ``rebuild`` gives for the last point moved to. Forward moves
keep it because every record applied since the base is at or below the new target (for a time,
``max_timestamp`` <= the time: ``rebuild`` stops at the first record after the time).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from kraftlog.files.copies import Log
from kraftlog.files.logdir import NodeDir
from kraftlog.files.paths import LogFile
from kraftlog.files.reader import Limits
from kraftlog.files.records import Entry, ReadProblems
from kraftlog.state.image import ClusterImage
from kraftlog.state.rebuild import Rebuilt, Unanswerable, as_log, base_snapshot, log_entries, starting_point


@dataclass(frozen=True, slots=True)
class Point:
    """A target: an offset, a time (epoch ms), or the end of the log when both are None."""

    offset: int | None = None
    time_ms: int | None = None

    def admits(self, entry: Entry) -> bool:
        """Whether replay to this point applies ``entry`` (entries come in log order)."""
        if self.offset is not None:
            return entry.offset <= self.offset
        return self.time_ms is None or entry.timestamp <= self.time_ms


END = Point()


@dataclass(slots=True)
class _Position:
    image: ClusterImage
    base: str
    last_applied: int  # offset of the last log record applied (an open transaction's too)
    max_timestamp: int  # of every record applied since the base
    records: int  # applied since the base
    problems: ReadProblems


class Cursor:
    """One node's copy and the image at the last point moved to (None before the first move)."""

    def __init__(self, node: NodeDir | Log, limits: Limits = Limits()) -> None:
        self.node = as_log(node)
        self.limits = limits
        self._at: _Position | None = None
        self.point: Point = END  # the last point moved to

    @property
    def image(self) -> ClusterImage:
        if self._at is None:
            raise Unanswerable("no point chosen yet")
        return self._at.image

    @property
    def lost(self) -> bool:
        """True after a move was interrupted halfway: the next move starts afresh."""
        return self._at is None

    @property
    def last_applied(self) -> int:
        return -1 if self._at is None else self._at.last_applied

    def _start(self, point: Point, snap: LogFile | None) -> _Position:
        """A fresh position at ``snap``, the base ``rebuild`` would use for ``point``."""
        first = self.node.first_offset
        if snap is None and first != 0:
            where = "has no segments" if first is None else f"starts at offset {first}"
            raise Unanswerable(f"the log {where} and no snapshot lies at or below that point: "
                               "the state there is unknown")
        problems = ReadProblems()
        image, start, described = starting_point(self.node, point.offset, point.time_ms, "none" if snap is None else snap.path,
                                                 self.limits, problems)
        return _Position(image, described, start - 1, image.provenance.timestamp, 0, problems)

    def _continues(self, point: Point, snap: LogFile | None) -> bool:
        """Whether ``point`` is reached by applying records after the current position."""
        at = self._at
        if at is None:
            return False
        if snap is not None and snap.offset - 1 > at.last_applied:
            return False  # a snapshot lies ahead: start from it, as rebuild does
        if point.offset is not None:
            return point.offset >= at.last_applied
        return point.time_ms is None or at.max_timestamp <= point.time_ms

    def entries(self) -> Iterator[Entry]:
        """The log records after the current position, in log order (read problems noted)."""
        at = self._at
        assert at is not None
        for entry in log_entries(self.node, at.last_applied + 1, self.limits, at.problems):
            if entry.offset > at.last_applied:
                yield entry

    def apply(self, entry: Entry) -> None:
        """Apply the next record of ``entries()``."""
        at = self._at
        assert at is not None
        at.image.apply(entry.record, entry.offset, entry.timestamp, entry.epoch)
        at.last_applied = entry.offset
        at.max_timestamp = max(at.max_timestamp, entry.timestamp)
        at.records += 1

    def move(self, point: Point) -> Rebuilt:
        """Move to ``point``; refused (Unanswerable, the cursor unmoved) where the log cannot say."""
        previous = self._at
        try:
            snap = base_snapshot(self.node, point.offset, point.time_ms, "auto", self.limits)
            if not self._continues(point, snap):
                self._at = self._start(point, snap)
            following = None
            for entry in self.entries():
                if not point.admits(entry):
                    following = entry
                    break
                self.apply(entry)
        except Unanswerable:
            raise
        except BaseException:
            self._at = None  # stopped halfway (an interrupt): not the image of any point
            raise
        image, last = self._at.image, self._at.last_applied
        if image.provenance.offset < 0 and image.transaction is None:
            self._at = previous
            raise Unanswerable("no record of the log lies at or before that point")
        if following is not None and following.offset > last + 1 and (point.offset is None or point.offset > last):
            self._at = previous
            raise Unanswerable(f"offsets {last + 1}-{following.offset - 1} are missing from the log and the "
                               "point lies among them: the state there is unknown")
        self.point = point
        return self.rebuilt(point)

    def rebuilt(self, point: Point) -> Rebuilt:
        """The current image with how it was reached, as ``rebuild`` says it."""
        at = self._at
        assert at is not None
        built = Rebuilt(at.image, at.base, at.records, at.problems)
        reached = at.image.provenance.offset
        if point.offset is not None and reached < point.offset and at.image.transaction is None:
            built.notes.append(f"the log ends at offset {reached}, before the requested offset {point.offset}")
        return built
