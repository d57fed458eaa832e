"""The cluster image of a log (one copy, or several assembled: ``files.copies.Log``) at an offset or a time, starting from the best snapshot.

Kafka itself loads the latest snapshot and replays the log after it; to reach an earlier point we
take the latest clean snapshot at or below the target instead, so answering costs the log after
that snapshot, not the whole history.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from kraftlog.files.copies import Log
from kraftlog.files.logdir import NodeDir
from kraftlog.files.paths import LogFile, classify
from kraftlog.files.reader import Limits
from kraftlog.files.records import Block, Entry, ReadProblems, iter_entries, unreadable
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


class Unanswerable(ValueError):
    """A point whose state the log on disk cannot give truthfully (before anything on disk, inside
    a gap); the message names what is on disk, ``problems`` what could not be read on the way
    (often the reason: an unreadable segment leaves a gap)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


def as_log(source: NodeDir | Log) -> Log:
    return source if isinstance(source, Log) else Log.of(source)


def log_entries(source: NodeDir | Log, start: int, limits: Limits, problems: ReadProblems,
                apply_invalid: bool = True, runs: str | None = None) -> Iterator[Entry | Block]:
    """Records of the log from offset ``start`` on, noting a gap where offsets jump
    (``Log.entries``; ``apply_invalid=False`` stops at the first batch failing its CRC; ``runs="blocks"``:
    clean walks as ``Block`` columns)."""
    return as_log(source).entries(start, limits, problems, apply_invalid, runs)


def on_disk(log: Log) -> str:
    """What the log holds, for a message that refuses a point."""
    where = ", ".join(str(n.metadata_dir or n.log_dir) for n in log.copies)
    segs = sum(len(n.segments) for n in log.copies)
    what = [f"segments from offset {log.first_offset}" if segs else "no segments"]
    what.append("snapshots ending at offsets " + ", ".join(str(s.offset) for s in log.snapshots)
                if log.snapshots else "no snapshots")
    return f"{where} holds {' and '.join(what)}"


def base_snapshot(
    source: NodeDir | Log, offset: int | None, time_ms: int | None, base: str | Path, limits: Limits,
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
    for candidate in reversed(as_log(source).snapshots):
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
    source: NodeDir | Log, offset: int | None, time_ms: int | None, base: str | Path, limits: Limits,
    problems: ReadProblems
) -> tuple[ClusterImage, int, str]:
    """The image replay starts from, the first log offset to apply, and how to say so. Files of the
    copies that could not be read are problems: the answer may lack what they hold."""
    log = as_log(source)
    problems.messages.extend(log.unreadable())
    snap = base_snapshot(log, offset, time_ms, base, limits, problems)
    if snap is not None:
        image = load_checkpoint(snap, limits, problems)
        start, described = snap.offset, f"snapshot {snap.path.name}"
    else:
        image = ClusterImage.empty()
        first = log.first_offset or 0
        start, described = first, f"the log from offset {first}"
        if first > 0:
            problems.messages.append(f"the log starts at offset {first}; records before it are missing")
    return image, start, described


def earliest_base(source: NodeDir | Log) -> str | Path | None:
    """Where a walk of the whole log starts: offset 0 when the log has it ("none"), else the first
    snapshot the log continues from; None when neither is on disk."""
    log = as_log(source)
    first = log.first_offset
    if first == 0:
        return "none"
    later = [s for s in log.snapshots if first is None or s.offset >= first]
    return later[0].path if later else None


def rebuild(
    source: NodeDir | Log,
    *,
    offset: int | None = None,
    time_ms: int | None = None,
    base: str | Path = "auto",
    limits: Limits = Limits(),
    apply_invalid: bool = True,
) -> Rebuilt:
    """State after every record with offset <= ``offset`` (or timestamp <= ``time_ms``; neither: the
    end of the log).

    ``base``: "auto" = the latest snapshot at or below the target, "none" = the log from its first
    offset, or the path of a ``.checkpoint`` to start from. ``apply_invalid=False``: the log ends at
    the first batch that fails its CRC. Raises ``Unanswerable`` for a point before anything on disk,
    and one inside a gap (offsets no segment holds while a later record or snapshot shows they
    existed). Past the end of the log the state is the end's, with a note."""
    log = as_log(source)
    if not log.pieces and not log.snapshots:
        raise Unanswerable(f"nothing to replay: {on_disk(log)}", log.unreadable())
    problems = ReadProblems()
    image, start, described = starting_point(log, offset, time_ms, base, limits, problems)
    from_snapshot = image.provenance.offset >= 0
    result: ReplayResult = replay(log.entries(start, limits, problems, apply_invalid, runs="blocks"), image,
                                  until=offset, until_time=time_ms)
    point = f"offset {offset}" if offset is not None else "the end of the log" if time_ms is None else f"time {time_ms}"
    if not from_snapshot and result.records == 0:
        raise Unanswerable(f"{point} is before anything on disk: {on_disk(log)}", problems.messages)
    built = Rebuilt(result.image, described, result.records, problems)
    reached = result.image.provenance.offset
    if offset is not None and reached < offset and result.image.transaction is None:
        later = [s.offset for s in log.snapshots if s.offset - 1 > offset]
        if problems.stopped_at is not None:
            pass  # the log ends at the invalid batch: said in problems
        elif result.last_read > offset or later:
            found = result.last_read if result.last_read > offset else f"snapshot ending at offset {later[0]}"
            raise Unanswerable(f"offset {offset} is on no segment: the log read jumps from offset {reached} to "
                               f"{found}; {on_disk(log)}", problems.messages)
        else:  # as the Spark job's views: past the end, the state at the end, with a note
            built.notes.append(f"the log ends at offset {reached}, before the requested offset {offset}")
    if time_ms is not None and problems.stopped_at is None and result.last_read <= reached:
        later = [s.offset for s in log.snapshots if s.offset - 1 > reached]
        if later:  # the log ran out before the time, and a snapshot shows it went on
            raise Unanswerable(f"time {time_ms} is after the last record read (offset {reached}) and the log "
                               f"went on to the snapshot ending at offset {later[0]}: the records in between "
                               f"are on no segment; {on_disk(log)}", problems.messages)
    return built
