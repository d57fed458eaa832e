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
from kraftlog.files.walk import Interned, distinct, walk_file
from kraftlog.schema import ControlRecord, MetadataRecord, decode_control, decode_metadata
from kraftlog.schema.metadata import BY_TYPE_NAME
from kraftlog.wire.batch import CONTROL_BIT, LOG_OVERHEAD

NO_OP = "NO_OP_RECORD"
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


@dataclass(frozen=True, slots=True)
class Block:
    """Records of consecutive offsets from one clean walk, as columns: record ``i`` is
    ``decoded[kv[i]]`` at ``offsets[i]``, with its batch's time and leader epoch. ``active`` marks the
    records that are not NoOpRecords, the ones replay must apply (the others only advance the image),
    so a quiet log's NoOps never become objects. ``entries()`` gives them one by one."""

    decoded: list  # kv index -> its record (shared by a walk's blocks)
    kv: np.ndarray
    offsets: np.ndarray
    timestamps: np.ndarray
    epochs: np.ndarray
    active: np.ndarray  # bool per record

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def last(self) -> int:
        return int(self.offsets[-1])

    def part(self, lo: int, hi: int | None = None) -> "Block":
        """Records ``lo``..``hi`` (a slice) of the block."""
        return Block(self.decoded, self.kv[lo:hi], self.offsets[lo:hi], self.timestamps[lo:hi], self.epochs[lo:hi],
                     self.active[lo:hi])

    def entry(self, i: int) -> Entry:
        return Entry(self.decoded[int(self.kv[i])], int(self.offsets[i]), int(self.timestamps[i]),
                     int(self.epochs[i]))

    def entries(self) -> Iterator[Entry]:
        return map(_new_entry, zip(map(self.decoded.__getitem__, self.kv.tolist()), self.offsets.tolist(),
                                   self.timestamps.tolist(), self.epochs.tolist(), strict=True))


def iter_items(
    lf: LogFile, limits: Limits = Limits(), problems: ReadProblems | None = None, start: int = -1,
    stop_at_invalid: bool = False, until: int | None = None,
) -> Iterator[Entry | Block]:
    """``iter_entries``, with a clean walk's records as ``Block`` columns, read by the columnar walk
    (``files.walk``) where the file is local and every batch up to ``until`` is whole, CRC-valid and
    readable; at the first walk of batches that is not (a region, a CRC mismatch, a batch error), the
    reader takes over from where the last clean walk ended, so problems are the reader's."""
    if not isinstance(lf.path, Path):  # a store's file: the reader's way
        yield from iter_entries(lf, limits, problems, start, stop_at_invalid, until)
        return
    resume = yield from _walked(lf, limits, start, until)
    if resume is not None:
        yield from iter_entries(lf, limits, problems, start, stop_at_invalid, until, at=resume)


def _walked(lf: LogFile, limits: Limits, start: int, until: int | None):
    """The clean walks' blocks; returns the position the reader takes over at (None: the file is done)."""
    end = 1 << 62 if until is None else until
    want = None if start <= 0 and until is None else [(max(start, 0), end)]
    resume = 0
    interned, values = Interned(), _Values()
    walks = walk_file(lf.path, limits, want, interned=interned)
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
            blocks = list(_blocks(w, stop, start, values))
            done = stop < w.count
            if w.count:
                resume = int(w.positions[-1]) + int(h["batchLength"][-1]) + LOG_OVERHEAD
            # the walk's columns are not held while its blocks are replayed, nor while the next walk is made
            # (a command's memory: one walk's columns, or its blocks, beside what it builds)
            del w, h, base
            yield from blocks
            del blocks
            if done:
                return None
    finally:
        walks.close()  # the file, at once


class _Values:
    """The records of a file's metadata values (its walks' ``Interned`` pairs, by index), each decoded
    once per file (``decode_metadata``, whose cache shares a record across files), and which are NoOps:
    a file's walks are windows of it, and most values of one come again in the next ones."""

    __slots__ = ("kv", "records", "done", "no_op")

    def __init__(self) -> None:
        self.kv: list | None = None  # the pairs the records are of
        self.records = np.zeros(0, object)  # by index into ``kv`` (where ``done``)
        self.done = np.zeros(0, bool)
        self.no_op = np.zeros(0, bool)  # ``is_no_op``

    def of(self, kv: list, ids: np.ndarray) -> tuple[list, np.ndarray]:
        """The records of the values of ``kv`` at ``ids`` (a null value decodes as an empty one), and
        which are NoOps."""
        if kv is not self.kv:  # new pairs (``Interned`` started again)
            self.kv, self.records, self.done, self.no_op = kv, np.zeros(0, object), np.zeros(0, bool), np.zeros(0, bool)
        if len(kv) > len(self.done):
            grown = max(len(kv), 2 * len(self.done))
            self.records, self.done, self.no_op = (np.concatenate([a, np.zeros(grown - len(a), a.dtype)])
                                                   for a in (self.records, self.done, self.no_op))
        need = ids[~self.done[ids]]
        if len(need):
            new = [decode_metadata(kv[i][1] or b"") for i in need.tolist()]
            self.records[need] = np.fromiter(new, object, len(new))
            self.no_op[need] = list(map(is_no_op, new))
            self.done[need] = True
        return self.records[ids].tolist(), self.no_op[ids]


def _blocks(w, stop: int, start: int, values: _Values) -> Iterator[Block]:
    """The records of a clean walk's first ``stop`` batches at or after ``start``, as ``Block`` columns cut
    where offsets jump (a block's offsets are consecutive). A metadata value is decoded once per file
    (``values``), and its record shared across files (``decode_metadata``'s cache); ``decoded`` holds the
    walk's values the records name (its metadata records, then its control records), nothing else."""
    keep = (w.rec_batch < stop) & (w.rec_offset >= start)
    if keep.all():
        keep = slice(None)  # the walk's columns themselves, not copies
    batch, offsets = w.rec_batch[keep], w.rec_offset[keep]
    if not len(batch):
        return
    n = len(w.kv)
    control = ((w.header["attributes"] & CONTROL_BIT) != 0)[batch]
    # a control record's value at n + its kv index; ``slots``: the values the records name, metadata first
    # (``decoded`` in this order)
    slots, kv = distinct(w.rec_kv[keep] + n * control, 2 * n)
    metadata, controls = slots[slots < n], slots[slots >= n] - n
    records, no_op_values = values.of(w.kv, metadata)
    decoded = records + [_control(*w.kv[k]) for k in controls.tolist()]
    no_op = np.zeros(len(slots), bool)
    no_op[:len(records)] = no_op_values
    active = ~no_op[kv]
    timestamps = w.rec_timestamp[keep]
    epochs = w.header["partitionLeaderEpoch"][batch].astype(np.int64)
    cuts = [0, *(np.flatnonzero(offsets[1:] != offsets[:-1] + 1) + 1).tolist(), len(batch)]
    for a, z in itertools.pairwise(cuts):
        yield Block(decoded, kv[a:z], offsets[a:z], timestamps[a:z], epochs[a:z], active[a:z])


_new_entry = functools.partial(tuple.__new__, Entry)  # Entry(*fields), without a Python call


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
