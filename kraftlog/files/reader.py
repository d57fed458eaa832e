"""Walk a segment or snapshot file batch by batch with bounded memory.

Every byte of the file ends up in a ``Batch`` or a ``Region``: a truncated tail, a corrupt
stretch skipped while resynchronising, or a magic 0/1 message-set entry that is recognised but not
decoded. Memory is one read window plus the largest batch allowed, whatever the file size.
"""

import errno
import os
import stat
import struct
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from kraftlog.files.heap import READING, rare_collections
from kraftlog.files.storage import Remote, Source
from kraftlog.wire import codecs
from kraftlog.wire.batch import (
    COMPRESSION_MASK,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    Batch,
    crc_of,
    decode_batch_at,
    repeats_of,
)
from kraftlog.wire.crc import crc32c, crc32c_rows
from kraftlog.wire.errors import KraftlogError

_PREFIX = struct.Struct(">qiib")  # baseOffset, batchLength, partitionLeaderEpoch, magic
_LAST_OFFSET_DELTA = struct.Struct(">i")
_RECORDS_COUNT = struct.Struct(">i")
_RECORDS_COUNT_AT = HEADER_SIZE - _RECORDS_COUNT.size  # recordsCount ends the header
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49
_LEGACY_MIN_LENGTH = {0: 14, 1: 22}  # crc+magic+attrs(+timestamp)+keyLen+valueLen
_WINDOW = 1 << 20
#: Bytes of CRC and re-reads that resynchronising may spend per byte of the file before the
#: candidate, plus one largest batch. Bytes dense with plausible headers claiming long lengths
#: would otherwise cost time quadratic in their size; past the budget, a candidate is not checked
#: and so ends up inside the reported corrupt region.
_RESYNC_COST_PER_BYTE = 32

#: Kafka's KafkaRaftClient.MAX_BATCH_SIZE_BYTES; larger batches are treated as corrupt length fields.
DEFAULT_MAX_BATCH_BYTES = 8 * 1024 * 1024
#: Kafka's QuorumController.MAX_RECORDS_PER_BATCH: the controller writes at most 10,000 records per
#: batch (and SnapshotEmitter.DEFAULT_BATCH_SIZE puts 1,024 in a snapshot's). A batch declaring more
#: is not expanded: a few KB of compressed tiny records would otherwise become millions of objects.
DEFAULT_MAX_RECORDS_PER_BATCH = 10_000


def size_bytes(text: str) -> int:
    """Bytes of a size as the command lines take it: 65536, 8MiB, 1.5GB (units of 1024); ValueError if not one."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    mult = units.get(t[-1:], 1)
    try:
        return int(float(t[:-1] if t[-1:] in units else t) * mult)
    except ValueError:
        raise ValueError(f"not a size: {text!r} (e.g. 8MiB, 65536)") from None


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds that keep hostile input from costing unbounded memory."""

    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED
    max_records_per_batch: int = DEFAULT_MAX_RECORDS_PER_BATCH


def too_many_records(count: int, limits: Limits) -> str | None:
    """The error of a batch whose header declares more records than ``limits`` allow, read from the
    header before any record is decoded (its bytes still count as a batch, its records are not read)."""
    if count <= limits.max_records_per_batch:
        return None
    return (f"RecordBatchTooLarge: the batch declares {count} records, more than the "
            f"{limits.max_records_per_batch} allowed (--max-records-per-batch); its records are not read")


class FileChangedError(KraftlogError):
    """A file that is not what it was when reading began: shorter (truncated by retention or a
    rewrite) or gone. What was read of it cannot be trusted to be a whole view of one file."""

    def __init__(self, path, was: int, now: int | None) -> None:
        self.path, self.was, self.now = path, was, now
        how = "vanished" if now is None else f"was {was} bytes, now {now}"
        super().__init__(f"file changed while read: {path} {how}")


class NotRegularFileError(KraftlogError, OSError):
    """A FIFO, device or socket named like a log file: opening or reading it could block forever."""

    def __init__(self, path) -> None:
        super().__init__(errno.EINVAL, "not a regular file (a FIFO, device or socket); skipped", str(path))


@dataclass(frozen=True, slots=True)
class Region:
    """Bytes that are not part of a decoded batch, and why."""

    position: int
    length: int
    reason: str  # "truncated" | "corrupt" | "legacy-magic"
    detail: str


class _Window:
    """A sliding read buffer, so tiny batches do not cost a syscall each."""

    def __init__(self, f, size: int) -> None:
        self.f = f
        self.size = size  # as when the file was opened: bytes past it are not read, fewer are a change
        self.buf = b""
        self.start = 0
        self.resync_cost = 0

    def afford(self, pos: int, cost: int, limits: Limits) -> bool:
        """Spend ``cost`` checking the candidate batch at ``pos``, if within ``_RESYNC_COST_PER_BYTE``."""
        if self.resync_cost + cost > _RESYNC_COST_PER_BYTE * pos + limits.max_batch_bytes:
            return False
        self.resync_cost += cost
        return True

    def get(self, pos: int, n: int) -> tuple[bytes, int]:
        """``buf, i`` with ``buf[i:i+n]`` the file's bytes at ``pos`` (shorter only at end of file)."""
        start = self.start
        if pos >= start and pos + n <= start + len(self.buf):
            return self.buf, pos - start
        self.f.seek(pos)
        want = min(max(n, _WINDOW), self.size - pos)
        self.buf = self.f.read(want)
        self.start = pos
        if len(self.buf) < want:
            raise self.changed()
        return self.buf, 0

    def changed(self) -> FileChangedError:
        """The error for a file that ended before the size it had when opened."""
        try:
            now = os.fstat(self.f.fileno()).st_size
        except (AttributeError, OSError, ValueError):  # not a real file: what could be read
            now = self.start + len(self.buf)
        return FileChangedError(getattr(self.f, "name", "<stream>"), self.size, now)


def _plausible_header(buf: bytes, i: int, limits: Limits) -> int:
    """The batch size at ``buf[i:]`` if the header there looks like a v2 batch, else 0."""
    if len(buf) - i < HEADER_SIZE:
        return 0
    (
        base_offset,
        batch_length,
        _epoch,
        magic,
        _crc,
        attributes,
        last_offset_delta,
        *_,
        records_count,
    ) = HEADER.unpack_from(buf, i)
    if (
        magic != 2
        or base_offset < 0
        or not _MIN_BATCH_LENGTH <= batch_length <= limits.max_batch_bytes - LOG_OVERHEAD
        or attributes & ~0x7F
        or (attributes & COMPRESSION_MASK) > codecs.ZSTD
        or last_offset_delta < 0
        or records_count < 0
    ):
        return 0
    return batch_length + LOG_OVERHEAD


def _resync(window: _Window, start: int, limits: Limits) -> int:
    """The position of the next batch whose header is plausible and whose CRC holds, or EOF."""
    pos = start
    size = window.size
    while pos + HEADER_SIZE <= size:
        buf, i = window.get(pos, _WINDOW)
        span = min(len(buf) - i, size - pos)
        # candidates: a magic byte 2 sixteen bytes into the header
        j = buf.find(b"\x02", i + 16, i + span)
        while j != -1:
            cand = pos + (j - 16 - i)
            total = _plausible_header(buf, j - 16, limits)
            moves = j - 16 + total > len(buf)  # checking it re-reads the window twice
            if total and cand + total <= size and window.afford(cand, total + moves * 2 * _WINDOW, limits):
                data, k = window.get(cand, total)
                blob = data[k : k + total]
                if crc_of(blob) == HEADER.unpack_from(blob, 0)[4]:
                    return cand
                buf, i = window.get(pos, _WINDOW)  # the CRC read may have moved the window
            j = buf.find(b"\x02", j + 1, i + span)
        pos += max(span - HEADER_SIZE, 1)
    return size


#: ``skip_before`` that skips nothing: below any int64 baseOffset (the field is outside the CRC, so a
#: damaged batch's may be any value, and its records must still be read, as the columnar walk reads them).
_EVERY_OFFSET = -(1 << 64)


def read_log_file(
    path: "str | os.PathLike | Remote", limits: Limits = Limits(), *, records: bool = True, skip_before: int = _EVERY_OFFSET,
    at: int = 0,
) -> Iterator[Batch | Region]:
    """Yield the batches and unreadable regions of one file, in file order.

    The file is opened read-only and no lock is taken, so a live broker's directory can be read. A
    ``storage.Remote`` (a file of an object store or HDFS) is read through the storage layer.
    ``records=False`` reads headers and CRCs only; so do batches that end before ``skip_before``.
    ``at``: the position of a batch the reader reached from the start through whole CRC-valid batches
    (what it yields from there is what it would yield after them). Only the bytes it had when opened are read; a file gone before it is opened, or ending before
    that size while read (a broker's retention or truncation) raises ``FileChangedError``, and one
    that is not a regular file ``NotRegularFileError`` (it is opened without blocking, so a FIFO
    cannot hang the read).
    """
    if isinstance(path, Remote):  # through pyarrow.fs, in ranged reads (see ``storage``)
        with Source(path) as src:
            yield from read_log_stream(src.stream(0), src.size, limits, records=records, skip_before=skip_before,
                                       at=at)
        return
    with open_regular(path) as f:
        yield from read_log_stream(f, os.fstat(f.fileno()).st_size, limits, records=records,
                                   skip_before=skip_before, at=at)


def open_regular(path: str | os.PathLike):
    """``path`` opened for binary reading if it is a regular file; a file that is gone is
    ``FileChangedError`` (it was found before), anything else ``NotRegularFileError``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise FileChangedError(path, 0, None) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    f = os.fdopen(fd, "rb")
    f.raw.name = os.fspath(path)  # what errors name, not the descriptor's number
    return f


def file_size(path: str | os.PathLike) -> int:
    """The size of a log file found earlier (``FileChangedError`` if it is gone since)."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        raise FileChangedError(path, 0, None) from None


def read_log_stream(
    f, size: int, limits: Limits = Limits(), *, records: bool = True, skip_before: int = _EVERY_OFFSET, at: int = 0
) -> Iterator[Batch | Region]:
    """``read_log_file`` over an open binary file object of known size."""
    with rare_collections(READING):  # the records decode_metadata keeps would be visited by every collection
        window = _Window(f, size)
        max_length = limits.max_batch_bytes - LOG_OVERHEAD
        max_records, max_decompressed = limits.max_records_per_batch, limits.max_decompressed
        unpack_prefix, unpack_header = _PREFIX.unpack_from, HEADER.unpack_from
        pos = at
        last = None  # the batch just yielded, a run's template
        streak, need = 0, _RUN_AFTER  # batches of its size in a row before it; how many before a run is tried
        ahead = _RUN_AHEAD  # how many batches a run looks at: doubled while runs fill it
        while pos < size:
            # the common case first: a sane v2 header and the whole batch inside the current window,
            # its header unpacked once and handed on
            buf, i = window.buf, pos - window.start
            if i >= 0 and i + HEADER_SIZE <= len(buf):
                if streak >= need:
                    k, run = _repeats(buf, i, pos, last, records, skip_before, ahead)
                    if k:
                        yield from run  # the template stays ``last``: the run's batches are like it
                        pos += k * last.size
                        need = _RUN_AFTER
                        ahead = min(ahead * 2, _RUN_MOST) if k == ahead else _RUN_AHEAD
                        continue
                    need, ahead = min(need * 2, _RUN_BACKOFF_MAX), _RUN_AHEAD
                    streak = 0
                h = unpack_header(buf, i)
                length = h[1]
                total = length + LOG_OVERHEAD
                if h[3] == 2 and _MIN_BATCH_LENGTH <= length <= max_length and i + total <= len(buf):
                    if records and h[12] <= max_records and (h[0] >= skip_before or h[0] + h[6] >= skip_before):
                        batch = decode_batch_at(buf, i, pos, max_decompressed, True, True, h)
                    else:
                        wanted = records and (h[0] >= skip_before or h[0] + h[6] >= skip_before)
                        batch = _decode(buf, i, pos, limits, wanted, h)
                    if batch.crc_valid or pos + total == size or _follows(window, pos + total, limits):
                        yield batch
                        pos += total
                        streak = streak + 1 if last is not None and last.header[1] == length else 0
                        last = batch
                        continue
            last, streak = None, 0
            if size - pos < HEADER_SIZE_UP_TO_MAGIC:
                yield Region(pos, size - pos, "truncated", f"{size - pos} bytes are too few for a batch header")
                return
            buf, i = window.get(pos, HEADER_SIZE)
            base, length, _epoch, magic = unpack_prefix(buf, i)
            total = length + LOG_OVERHEAD
            if magic in (0, 1) and length >= _LEGACY_MIN_LENGTH[magic] and total <= limits.max_batch_bytes:
                if pos + total > size:
                    yield Region(pos, size - pos, "truncated", f"magic {magic} entry of {total} bytes is cut off")
                    return
                yield Region(pos, total, "legacy-magic", f"magic {magic} message set entry of {total} bytes")
                pos += total
                continue
            problem = None
            if magic != 2:
                problem = f"magic byte {magic} is not 0, 1 or 2"
            elif not _MIN_BATCH_LENGTH <= length <= limits.max_batch_bytes - LOG_OVERHEAD:
                problem = f"batchLength {length} is outside [{_MIN_BATCH_LENGTH}, {limits.max_batch_bytes - 12}]"
            elif size - pos < HEADER_SIZE:
                yield Region(pos, size - pos, "truncated", f"{size - pos} bytes are too few for a batch header")
                return
            elif pos + total > size:
                nxt = _resync(window, pos + 1, limits)
                if nxt == size:
                    yield Region(pos, size - pos, "truncated", f"batch of {total} bytes is cut off at {size - pos}")
                    return
                problem = f"batchLength {length} runs past a later valid batch"
            if problem is None:
                if i + total > len(buf):
                    buf, i = window.get(pos, total)
                wanted = records and (base >= skip_before or _last_offset(buf, i) >= skip_before)
                batch = _decode(buf, i, pos, limits, wanted)
                after = pos + total
                if batch.crc_valid or after == size or _follows(window, after, limits):
                    yield batch
                    pos = after
                    continue
                problem = f"batch at {pos} fails its CRC and no batch header follows it"
            nxt = _resync(window, pos + 1, limits)
            yield Region(pos, nxt - pos, "corrupt", problem)
            pos = nxt


def _decode(buf: bytes, i: int, pos: int, limits: Limits, records: bool, header: tuple | None = None) -> Batch:
    """``decode_batch_at``, refusing to expand a batch with more records than ``limits`` allow."""
    refused = records and too_many_records(_RECORDS_COUNT.unpack_from(buf, i + _RECORDS_COUNT_AT)[0], limits)
    batch = decode_batch_at(buf, i, pos, limits.max_decompressed, records=records and not refused, header=header)
    if refused:
        batch.error = refused
    return batch


#: Batches of one size in a row before the next ones are checked as a run; a run found too short
#: doubles that, up to the maximum (batches of one size that differ must not pay a check each).
_RUN_AFTER, _RUN_BACKOFF_MAX = 3, 512
#: Batches a run looks at first (a quiet log's runs of NoOps between changes are a few hundred long: fewer
#: looks, each comparing rows in one numpy call), and at most; from how many its CRCs are taken as rows
#: (``crc32c_rows``).
_RUN_AHEAD, _RUN_MOST, _RUN_ROWS_CRC = 512, 1024, 128
_RUN_MIN = 8
#: Header bytes a batch of a run shares with its template: batchLength, magic, attributes,
#: recordsCount (``BatchHeader``'s offsets); then the records, whole.
_RUN_SAME = np.r_[8:12, 16, 21:23, 57:61]
_RUN_CRC = np.dtype(">u4")
#: batch size -> ``HEADER`` then the rest of the batch skipped; the bytes a run compares
_by_size: dict[int, tuple[struct.Struct, np.ndarray]] = {}


def _repeats(buf: bytes, i: int, pos: int, template: Batch, records: bool, skip_before: int,
             most: int) -> tuple[int, Iterator[Batch]]:
    """The batches from ``buf[i:]`` (file position ``pos``) that repeat ``template`` but for their
    offsets, timestamps, epochs, producer fields and CRCs, while their CRCs hold: their header bytes
    and records compared as rows at once, their CRCs taken as rows (``crc32c_rows``), their headers
    unpacked in one call, and their records ``template``'s at their own offsets and timestamps, as
    ``decode_batch_at`` would read them from the same bytes. How many, and the batches made one at a
    time as they are asked for (a list of them all would outlive the garbage collector's youngest
    generation, and cost more in collections than it saves); 0 when fewer than ``_RUN_MIN`` repeat.
    Batches whose records are not read (``records``, ``skip_before``) need only the size, magic and
    CRC; a run holds batches that are all read or all not."""
    step = template.size
    n = min(most, (len(buf) - i) // step)
    if n < _RUN_MIN or i < step:  # the template is not in this window
        return 0, iter(())
    if records and buf[i + HEADER_SIZE : i + step] != buf[i - step + HEADER_SIZE : i]:
        return 0, iter(())  # the next batch's records differ: no numpy for a run that is not there
    unpack, same = _by_size.get(step) or _sized(step)
    u8 = np.frombuffer(buf, np.uint8)
    rows = np.ndarray((n, step), np.uint8, u8, i, (step, 1))
    ok = True
    if records and skip_before > 0:
        base = rows[:, 0:8].copy().view(">i8")[:, 0]
        wanted = (base >= skip_before) | (base + rows[:, 23:27].copy().view(">i4")[:, 0] >= skip_before)
        records = bool(wanted[0])
        ok = wanted == records
    h = template.header
    if records and (template.error is not None or len(template.records) != 1 or h[12] != 1
                    or h[5] & COMPRESSION_MASK):
        return 0, iter(())
    ref = u8[i - step : i]  # the template's bytes (it ends where the run starts)
    if not records:
        same = _RUN_SAME[:5]
    ok = ok & (rows[:, same] == ref[same]).all(axis=1)
    k = _leading(ok)
    if k < _RUN_MIN:
        return 0, iter(())
    stored = rows[:k, 17:21].copy().view(_RUN_CRC)[:, 0]
    if k >= _RUN_ROWS_CRC:  # the CRCs as rows (crc32c_rows) pay from about this many on
        crc_ok = (crc32c_rows(rows[:k, CRC_START:]) == stored).tolist()
    else:
        m = step - CRC_START
        crc_ok = [crc32c(buf[p : p + m]) == c for p, c in zip(range(i + CRC_START, i + k * step, step),
                                                            stored.tolist(), strict=True)]
    if not all(crc_ok):
        k = crc_ok.index(False)
        if k < _RUN_MIN:
            return 0, iter(())
    headers = unpack.iter_unpack(memoryview(buf)[i : i + k * step])
    positions = range(pos, pos + k * step, step)
    if not records:
        return k, (Batch(p, hh, True) for p, hh in zip(positions, headers, strict=True))
    return k, repeats_of(template, positions, headers)


def _sized(step: int) -> tuple[struct.Struct, np.ndarray]:
    if len(_by_size) >= 256:
        _by_size.clear()
    out = _by_size[step] = struct.Struct(f"{HEADER.format}{step - HEADER_SIZE}x"), np.r_[_RUN_SAME, HEADER_SIZE:step]
    return out


def _leading(ok: np.ndarray) -> int:
    """How many of ``ok`` are true before the first false."""
    return len(ok) if ok.all() else int(ok.argmin())


def _last_offset(buf: bytes, i: int) -> int:
    return _PREFIX.unpack_from(buf, i)[0] + _LAST_OFFSET_DELTA.unpack_from(buf, i + 23)[0]


def _follows(window: _Window, pos: int, limits: Limits) -> bool:
    """Whether a plausible batch header (or the start of a cut-off one) sits at ``pos``."""
    buf, i = window.get(pos, HEADER_SIZE)
    if len(buf) - i < HEADER_SIZE:
        return len(buf) - i >= HEADER_SIZE_UP_TO_MAGIC and buf[i + 16] == 2
    return bool(_plausible_header(buf, i, limits))


class NotClean(Exception):
    """A fast path (``walk.clean_header_columns``) met something it was not built for; ``read_log_file`` says what
    it is."""
