"""The cluster image of a node's copy at an offset or a time, starting from the best snapshot.

Kafka itself loads the latest snapshot and replays the log after it; to reach an earlier point we
take the latest clean snapshot at or below the target instead, so answering costs the log after
that snapshot, not the whole history.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from kraftlog.files.logdir import NodeDir
from kraftlog.files.paths import LogFile, classify
from kraftlog.files.reader import Limits
from kraftlog.files.records import Entry, ReadProblems, iter_entries, unreadable
from kraftlog.state.image import ClusterImage
from kraftlog.state.replay import ReplayResult, load_snapshot, replay


def parse_time(text: str) -> int:
    """Epoch milliseconds from an ISO-8601 time (UTC unless it says otherwise) or a number of ms."""
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not an ISO-8601 time or epoch milliseconds: {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)  # operators read logs in UTC
    return int(dt.timestamp() * 1000)


@dataclass(slots=True)
class Rebuilt:
    """An image and how it was reached."""

    image: ClusterImage
    base: str  # what replay started from, for people
    records: int  # log records applied after the base
    problems: ReadProblems = field(default_factory=ReadProblems)
    notes: list[str] = field(default_factory=list)  # worth saying, but nothing is wrong

    @property
    def open_transaction(self):
        return self.image.transaction


def snapshot_timestamp(lf: LogFile, limits: Limits = Limits()) -> int:
    """``lastContainedLogTimestamp`` of a snapshot's header (-1 when unreadable)."""
    for entry in iter_entries(lf, limits):
        if entry.record.type == "SNAPSHOT_HEADER" and entry.record.error is None:
            return entry.record.data.get("lastContainedLogTimestamp", -1)
        break
    return -1


def load_checkpoint(lf: LogFile, limits: Limits = Limits(), problems: ReadProblems | None = None) -> ClusterImage:
    """The image a ``.checkpoint`` holds (bootstrap.checkpoint: end offset 0, epoch 0)."""
    return load_snapshot(iter_entries(lf, limits, problems), lf.offset, lf.epoch)


def _until_time(entries: Iterable[Entry], time_ms: int) -> Iterator[Entry]:
    for e in entries:
        if e.timestamp > time_ms:
            return
        yield e


def log_entries(node: NodeDir, start: int, limits: Limits, problems: ReadProblems) -> Iterator[Entry]:
    """Records of every segment from offset ``start`` on, noting a gap where offsets jump.

    A segment whose successor is named at or below ``start`` holds only earlier offsets (a
    segment's name is its base offset, as Kafka has it), so it is not read at all."""
    expected = start
    segments = node.segments
    for i, seg in enumerate(segments):
        if i + 1 < len(segments) and segments[i + 1].offset <= start:
            continue
        for e in iter_entries(seg, limits, problems, start=start):
            if e.offset > expected >= 0 and e.offset != expected:
                problems.messages.append(f"offsets {expected}-{e.offset - 1} are missing from the log")
            expected = e.offset + 1
            yield e


def base_snapshot(
    node: NodeDir, offset: int | None, time_ms: int | None, base: str | Path, limits: Limits,
    problems: ReadProblems | None = None,
) -> LogFile | None:
    """The snapshot replay to the target starts from (None: the log's first offset).

    "auto": the latest readable snapshot at or below the target (its end offset - 1 <= ``offset``,
    its header's lastContainedLogTimestamp <= ``time_ms``); an unreadable one is a problem and an
    earlier snapshot, or the log, still gives a true answer; "none": no snapshot; else the given file."""
    if isinstance(base, Path) or base not in ("auto", "none"):
        snap = classify(base)
        if snap.kind != "snapshot":
            raise ValueError(f"--base must be auto, none, or a NNN-EEE.checkpoint file: {base}")
        return snap
    if base == "none":
        return None
    for candidate in reversed(node.snapshots):
        if offset is not None and candidate.offset - 1 > offset:
            continue
        try:
            if time_ms is not None and snapshot_timestamp(candidate, limits) > time_ms:
                continue
            with open(candidate.path, "rb"):
                pass
        except OSError as e:
            if problems is not None:
                problems.messages.append(unreadable(candidate.path, e))
            continue
        return candidate
    return None


def starting_point(
    node: NodeDir, offset: int | None, time_ms: int | None, base: str | Path, limits: Limits, problems: ReadProblems
) -> tuple[ClusterImage, int, str]:
    """The image replay starts from, the first log offset to apply, and how to say so. Files of the
    copy that could not be read are problems: the answer may lack what they hold."""
    problems.messages.extend(f"{path}: cannot read: {why}" for path, why in node.unreadable)
    snap = base_snapshot(node, offset, time_ms, base, limits, problems)
    if snap is not None:
        image = load_checkpoint(snap, limits, problems)
        start, described = snap.offset, f"snapshot {snap.path.name}"
    else:
        image = ClusterImage.empty()
        first = next((s.offset for s in node.segments), 0)
        start, described = first, f"the log from offset {first}"
        if first > 0:
            problems.messages.append(f"the log starts at offset {first}; records before it are missing")
    return image, start, described


def rebuild(
    node: NodeDir,
    *,
    offset: int | None = None,
    time_ms: int | None = None,
    base: str | Path = "auto",
    limits: Limits = Limits(),
) -> Rebuilt:
    """State after every record with offset <= ``offset`` (or timestamp <= ``time_ms``).

    ``base``: "auto" = the latest snapshot at or below the target, "none" = the log from its first
    offset, or the path of a ``.checkpoint`` to start from."""
    problems = ReadProblems()
    image, start, described = starting_point(node, offset, time_ms, base, limits, problems)
    entries: Iterable[Entry] = log_entries(node, start, limits, problems)
    if time_ms is not None:
        entries = _until_time(entries, time_ms)
    result: ReplayResult = replay(entries, image, until=offset)
    built = Rebuilt(result.image, described, result.records, problems)
    reached = result.image.provenance.offset
    if offset is not None and reached < offset and result.image.transaction is None:
        built.notes.append(f"the log ends at offset {reached}, before the requested offset {offset}")
    return built
