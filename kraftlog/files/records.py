"""A file's records as typed entries in log order: what replay and the commands consume."""

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from kraftlog.files.paths import LogFile
from kraftlog.files.reader import Limits, Region, read_log_file
from kraftlog.schema import ControlRecord, MetadataRecord, decode_control, decode_metadata


def unreadable(path: os.PathLike, e: OSError) -> str:
    """One line naming a file kraftlog could not open or read, and why (permission denied, a directory
    where a file should be, an I/O error)."""
    return f"{path}: cannot read: {e.strerror or e}"


class Entry(NamedTuple):
    """One decoded record where the log holds it: offset, and its batch's time and leader epoch."""

    record: MetadataRecord | ControlRecord
    offset: int
    timestamp: int
    epoch: int


@dataclass(slots=True)
class ReadProblems:
    """What could not be read while producing entries, so that nothing is dropped silently."""

    messages: list[str] = field(default_factory=list)
    stopped_at: int | None = None  # the offset of a batch that failed its CRC, where reading stopped

    def add(self, lf: LogFile, message: str) -> None:
        self.messages.append(f"{lf.path.name}: {message}")


def iter_entries(
    lf: LogFile, limits: Limits = Limits(), problems: ReadProblems | None = None, start: int = -1,
    stop_at_invalid: bool = False, until: int | None = None,
) -> Iterator[Entry]:
    """Decoded records of one file with ``start`` <= offset (<= ``until``: nothing after it is read);
    unreadable parts go to ``problems``, and so does a file that cannot be opened or read to its end
    (without ``problems`` that raises ``OSError``).

    ``stop_at_invalid``: end at the first batch that fails its CRC, as Kafka truncates a log there
    on recovery (``problems.stopped_at`` says where; ``problems`` is then required)."""
    try:
        for item in read_log_file(lf.path, limits, skip_before=start):
            if isinstance(item, Region):
                if problems is not None:
                    problems.add(lf, f"{item.length} bytes at {item.position} skipped ({item.reason}: {item.detail})")
                continue
            if until is not None and item.base_offset > until:
                return
            if item.last_offset < start:
                continue  # wholly before what is asked: not read, so its damage is not this answer's
            if problems is not None:
                if not item.is_valid and stop_at_invalid:
                    problems.add(lf, f"batch at {item.position} (offset {item.base_offset}) fails its CRC: Kafka "
                                 f"truncates the log there on recovery, so reading stops (--apply-invalid goes on)")
                    problems.stopped_at = item.base_offset
                    return
                if not item.is_valid:
                    problems.add(lf, f"batch at {item.position} (offset {item.base_offset}) fails its CRC")
                if item.error:
                    problems.add(lf, f"batch at {item.position} (offset {item.base_offset}): {item.error}")
            control, epoch = item.is_control, item.partition_leader_epoch
            for r in item.records:
                if r.offset < start:
                    continue
                rec = decode_control(r.key or b"", r.value or b"") if control else decode_metadata(r.value or b"")
                yield Entry(rec, r.offset, r.timestamp, epoch)
    except OSError as e:
        if problems is None:
            raise
        problems.messages.append(unreadable(lf.path, e))
