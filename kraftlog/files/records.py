"""A file's records as typed entries in log order: what replay and the commands consume."""

import functools
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from kraftlog.files.paths import LogFile
from kraftlog.files.reader import Limits, Region, read_log_file
from kraftlog.files.walk import walk_file
from kraftlog.schema import ControlRecord, MetadataRecord, decode_control, decode_metadata
from kraftlog.schema.metadata import BY_TYPE_NAME
from kraftlog.wire.batch import CONTROL_BIT, LOG_OVERHEAD

NO_OP = "NO_OP_RECORD"
#: ``runs`` value asking for every metadata record of a clean walk as ``Records`` columns.
COLUMNS = "columns"
_NO_OP_API_KEY = BY_TYPE_NAME[NO_OP].api_key


def unreadable(path: os.PathLike, e: OSError) -> str:
    """One line naming a file kraftlog could not open or read, and why (permission denied, a directory
    where a file should be, an I/O error)."""
    return f"{path}: cannot read: {e.strerror or e}"


def is_no_op(rec: Any) -> bool:
    """A NoOpRecord that decoded, told by its api key (most of a quiet log: replaying it only advances
    the image, ``ClusterImage.pass_over``)."""
    return type(rec) is MetadataRecord and rec.api_key == _NO_OP_API_KEY and rec.error is None


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


class _Run:
    """What runs of records of consecutive offsets have in common: ``offsets`` and the rest as columns."""

    __slots__ = ()
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def last(self) -> int:
        return int(self.offsets[-1])


@dataclass(frozen=True, slots=True)
class NoOps(_Run):
    """Records of consecutive offsets, each a NoOpRecord of the same bytes (``value``), as columns:
    replaying them only advances the image, so they need not become objects. ``entries()`` gives
    them one by one where a consumer must take them so (inside a metadata transaction)."""

    value: bytes
    offsets: np.ndarray
    timestamps: np.ndarray
    epochs: np.ndarray

    def part(self, lo: int, hi: int | None = None) -> "NoOps":
        """Records ``lo``..``hi`` (a slice) of the run."""
        return NoOps(self.value, self.offsets[lo:hi], self.timestamps[lo:hi], self.epochs[lo:hi])

    def entries(self) -> Iterator[Entry]:
        for offset, timestamp, epoch in zip(self.offsets.tolist(), self.timestamps.tolist(), self.epochs.tolist(),
                                            strict=True):
            yield Entry(decode_metadata(self.value), offset, timestamp, epoch)


@dataclass(frozen=True, slots=True)
class Records(_Run):
    """Metadata records of consecutive offsets as columns: record ``i`` is ``decoded[kv[i]]`` (the
    walk's distinct values, each decoded once and shared: never changed by its callers).
    ``entries()`` gives them one by one."""

    decoded: list[MetadataRecord | None]
    kv: np.ndarray
    offsets: np.ndarray
    timestamps: np.ndarray
    epochs: np.ndarray

    def part(self, lo: int, hi: int | None = None) -> "Records":
        """Records ``lo``..``hi`` (a slice) of the run."""
        return Records(self.decoded, self.kv[lo:hi], self.offsets[lo:hi], self.timestamps[lo:hi],
                       self.epochs[lo:hi])

    def entries(self) -> Iterator[Entry]:
        return map(_new_entry, zip(map(self.decoded.__getitem__, self.kv.tolist()), self.offsets.tolist(),
                                   self.timestamps.tolist(), self.epochs.tolist(), strict=True))


def iter_items(
    lf: LogFile, limits: Limits = Limits(), problems: ReadProblems | None = None, start: int = -1,
    stop_at_invalid: bool = False, until: int | None = None, columns: bool = False,
) -> Iterator[Entry | NoOps | Records]:
    """``iter_entries``, with runs of NoOpRecords as ``NoOps`` (``columns``: runs of metadata records
    of consecutive offsets as ``Records``, control records as entries), read by the columnar walk
    (``files.walk``) where the file is local and every batch up to ``until`` is whole, CRC-valid and
    readable; at the first walk of batches that is not (a region, a CRC mismatch, a batch error),
    the reader takes over from where the last clean walk ended, so problems are the reader's."""
    if not isinstance(lf.path, Path):  # a store's file: the reader's way
        yield from iter_entries(lf, limits, problems, start, stop_at_invalid, until)
        return
    resume = yield from _walked(lf, limits, start, until, columns)
    if resume is not None:
        yield from iter_entries(lf, limits, problems, start, stop_at_invalid, until, at=resume)


def _walked(lf: LogFile, limits: Limits, start: int, until: int | None, columns: bool = False):
    """The clean walks' items; returns the position the reader takes over at (None: the file is done)."""
    end = 1 << 62 if until is None else until
    want = None if start <= 0 and until is None else [(max(start, 0), end)]
    resume = 0
    walks = walk_file(lf.path, limits, want)
    try:
        while True:
            try:
                w = next(walks, None)
            except OSError:  # the reader meets it again, and says what it is
                return resume
            if w is None:
                return None
            h = w.header
            base = h["baseOffset"]
            stop = int(np.argmax(base > end)) if until is not None and (base > end).any() else w.count
            limit = int(w.positions[stop]) if stop < w.count else 1 << 62
            if (any(r.position < limit for r in w.regions) or not w.crc_valid[:stop].all()
                    or w.errors[:stop].count(None) != stop):
                return resume
            if stop < w.count:
                yield from _items(w, stop, start, columns)
                return None
            yield from _items(w, stop, start, columns)
            if w.count:
                resume = int(w.positions[-1]) + int(h["batchLength"][-1]) + LOG_OVERHEAD
    finally:
        walks.close()  # the file, at once


class _Recent:
    """Record values -> their decoded records, across walks and files: a log repeats its ISR changes and
    leader elections, and a decoded record is never changed by its callers (``decode_metadata``), so one
    object serves each. Bounded: two generations of ``size`` values each; a value found in the old one
    moves to the new, and the old is dropped when the new is full (about the most recent values)."""

    def __init__(self, size: int = 1 << 14, value_bytes: int = 512) -> None:
        self.size, self.value_bytes = size, value_bytes
        self.new: dict[bytes, MetadataRecord] = {}
        self.old: dict[bytes, MetadataRecord] = {}

    def decode(self, value: bytes) -> MetadataRecord:
        rec = self.new.get(value)
        if rec is not None:
            return rec
        rec = self.old.pop(value, None)
        if rec is None:
            rec = decode_metadata(value)
            if len(value) > self.value_bytes:
                return rec
        if len(self.new) >= self.size:
            self.old, self.new = self.new, {}
        self.new[value] = rec
        return rec


_RECENT = _Recent()


def _items(w, stop: int, start: int, columns: bool = False) -> Iterator[Entry | NoOps | Records]:
    """The records of a clean walk's first ``stop`` batches at or after ``start``; a metadata value is
    decoded once (``_Recent``)."""
    keep = (w.rec_batch < stop) & (w.rec_offset >= start)
    batch, offsets, timestamps, kv = w.rec_batch[keep], w.rec_offset[keep], w.rec_timestamp[keep], w.rec_kv[keep]
    if not len(batch):
        return
    h = w.header
    control = ((h["attributes"] & CONTROL_BIT) != 0)[batch]
    epochs = h["partitionLeaderEpoch"][batch].astype(np.int64)
    decoded: dict[int, MetadataRecord] = {}  # kv index -> its record
    no_op = np.zeros(len(w.kv), bool)
    for k in np.unique(kv[~control]).tolist():
        rec = decoded[k] = _RECENT.decode(w.kv[k][1] or b"")
        no_op[k] = is_no_op(rec)
    if columns:
        yield from _columns(w, decoded, control, kv, offsets, timestamps, epochs)
        return
    run_key = np.where(no_op[kv] & ~control, kv, -1)
    same = (run_key[1:] == run_key[:-1]) & (offsets[1:] == offsets[:-1] + 1) & (run_key[1:] >= 0)
    starts = np.flatnonzero((run_key >= 0) & np.concatenate([[True], ~same]))
    ends = (np.flatnonzero((run_key >= 0) & np.concatenate([~same, [True]])) + 1).tolist()
    single = np.flatnonzero(run_key < 0)  # the records outside runs, as entries made one by one in C: made
    # ahead, a walk's entries would be thousands of young objects for the garbage collector to visit
    recs = [_control(*w.kv[k]) if c else decoded[k]
            for k, c in zip(kv[single].tolist(), control[single].tolist(), strict=True)]
    entries = map(_new_entry, zip(recs, offsets[single].tolist(), timestamps[single].tolist(),
                                  epochs[single].tolist(), strict=True))
    at = 0
    for a, z, cut in zip(starts.tolist(), ends, np.searchsorted(single, starts).tolist(), strict=True):
        yield from itertools.islice(entries, cut - at)
        yield NoOps(w.kv[int(kv[a])][1], offsets[a:z], timestamps[a:z], epochs[a:z])
        at = cut
    yield from entries


_new_entry = functools.partial(tuple.__new__, Entry)  # Entry(*fields), without a Python call


def _columns(w, decoded: dict[int, MetadataRecord], control: np.ndarray, kv: np.ndarray, offsets: np.ndarray,
             timestamps: np.ndarray, epochs: np.ndarray) -> Iterator[Entry | Records]:
    """The walk's metadata records as ``Records`` runs, cut at control records (entries) and where
    offsets jump."""
    values = [decoded.get(k) for k in range(len(w.kv))]
    cut = np.flatnonzero(control[1:] | control[:-1] | (offsets[1:] != offsets[:-1] + 1)) + 1
    for a, z in zip([0, *cut.tolist()], [*cut.tolist(), len(kv)], strict=True):
        if control[a]:
            yield Entry(_control(*w.kv[int(kv[a])]), int(offsets[a]), int(timestamps[a]), int(epochs[a]))
        else:
            yield Records(values, kv[a:z], offsets[a:z], timestamps[a:z], epochs[a:z])


def _control(key: bytes | None, value: bytes | None) -> ControlRecord:
    return decode_control(key or b"", value or b"")


def iter_entries(
    lf: LogFile, limits: Limits = Limits(), problems: ReadProblems | None = None, start: int = -1,
    stop_at_invalid: bool = False, until: int | None = None, at: int = 0,
) -> Iterator[Entry]:
    """Decoded records of one file with ``start`` <= offset (<= ``until``: nothing after it is read);
    unreadable parts go to ``problems``, and so does a file that cannot be opened or read to its end
    (without ``problems`` that raises ``OSError``).

    ``stop_at_invalid``: end at the first batch that fails its CRC, as Kafka truncates a log there
    on recovery (``problems.stopped_at`` says where; ``problems`` is then required). ``at``: where the
    reader starts (``read_log_file``)."""
    try:
        for item in read_log_file(lf.path, limits, skip_before=start, at=at):
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
