"""Walk a segment or snapshot file batch by batch with bounded memory.

Every byte of the file ends up in a ``Batch`` or a ``Region``: a truncated tail, a corrupt
stretch skipped while resynchronising, or a magic 0/1 message-set entry that is recognised but not
decoded. Memory is one read window plus the largest batch allowed, whatever the file size.
"""

import os
import stat
import struct
from collections.abc import Iterator
from dataclasses import dataclass

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
)
from kraftlog.wire.crc import crc32c

_PREFIX = struct.Struct(">qiib")  # baseOffset, batchLength, partitionLeaderEpoch, magic
_LAST_OFFSET_DELTA = struct.Struct(">i")
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


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds that keep hostile input from costing unbounded memory."""

    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED


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
        self.size = size
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
        self.buf = self.f.read(max(n, _WINDOW))
        self.start = pos
        return self.buf, 0


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


def read_log_file(
    path: str | os.PathLike, limits: Limits = Limits(), *, records: bool = True, skip_before: int = -1
) -> Iterator[Batch | Region]:
    """Yield the batches and unreadable regions of one file, in file order.

    The file is opened read-only and no lock is taken, so a live broker's directory can be read.
    ``records=False`` reads headers and CRCs only; so do batches that end before ``skip_before``.
    """
    with open(path, "rb") as f:
        yield from read_log_stream(f, os.fstat(f.fileno()).st_size, limits, records=records,
                                   skip_before=skip_before)


def read_log_stream(
    f, size: int, limits: Limits = Limits(), *, records: bool = True, skip_before: int = -1
) -> Iterator[Batch | Region]:
    """``read_log_file`` over an open binary file object of known size."""
    window = _Window(f, size)
    max_length = limits.max_batch_bytes - LOG_OVERHEAD
    max_decompressed = limits.max_decompressed
    unpack_prefix = _PREFIX.unpack_from
    pos = 0
    while pos < size:
        # the common case first: a sane v2 header and the whole batch inside the current window
        buf, i = window.buf, pos - window.start
        if i >= 0 and i + HEADER_SIZE <= len(buf):
            base, length, _epoch, magic = unpack_prefix(buf, i)
            total = length + LOG_OVERHEAD
            if magic == 2 and _MIN_BATCH_LENGTH <= length <= max_length and i + total <= len(buf):
                wanted = records and (base >= skip_before or _last_offset(buf, i) >= skip_before)
                batch = decode_batch_at(buf, i, pos, max_decompressed, records=wanted)
                if batch.crc_valid or pos + total == size or _follows(window, pos + total, limits):
                    yield batch
                    pos += total
                    continue
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
            batch = decode_batch_at(buf, i, pos, max_decompressed, records=wanted)
            after = pos + total
            if batch.crc_valid or after == size or _follows(window, after, limits):
                yield batch
                pos = after
                continue
            problem = f"batch at {pos} fails its CRC and no batch header follows it"
        nxt = _resync(window, pos + 1, limits)
        yield Region(pos, nxt - pos, "corrupt", problem)
        pos = nxt


def _last_offset(buf: bytes, i: int) -> int:
    return _PREFIX.unpack_from(buf, i)[0] + _LAST_OFFSET_DELTA.unpack_from(buf, i + 23)[0]


def _follows(window: _Window, pos: int, limits: Limits) -> bool:
    """Whether a plausible batch header (or the start of a cut-off one) sits at ``pos``."""
    buf, i = window.get(pos, HEADER_SIZE)
    if len(buf) - i < HEADER_SIZE:
        return len(buf) - i >= HEADER_SIZE_UP_TO_MAGIC and buf[i + 16] == 2
    return bool(_plausible_header(buf, i, limits))


class NotClean(Exception):
    """``clean_headers`` met something it was not built for; ``read_log_file`` says what it is."""


def clean_headers(path: str | os.PathLike, limits: Limits = Limits()) -> Iterator[tuple]:
    """The ``HEADER`` tuple of every batch of a regular file that is nothing but whole v2 batches whose
    CRCs hold: what ``read_log_file(records=False)`` yields for such a file (``Batch.header``), without a
    ``Batch`` per batch. Anything else raises ``NotClean`` (a region, a CRC mismatch, a file that is not
    regular or changes while read; what came before it is then to be dropped)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO named like a segment must not block
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotClean(path)
        size, max_length, unpack = st.st_size, limits.max_batch_bytes - LOG_OVERHEAD, HEADER.unpack_from
        buf, start, pos = b"", 0, 0
        while pos < size:
            i = pos - start
            if i + HEADER_SIZE > len(buf):
                buf, start, i = _read_at(f, pos, min(_WINDOW, size - pos), HEADER_SIZE), pos, 0
            h = unpack(buf, i)
            length = h[1]
            end = pos + length + LOG_OVERHEAD
            if h[3] != 2 or not _MIN_BATCH_LENGTH <= length <= max_length or end > size:
                raise NotClean(path)
            if end - start > len(buf):
                buf, start, i = _read_at(f, pos, min(max(_WINDOW, end - pos), size - pos), end - pos), pos, 0
            j = i + length + LOG_OVERHEAD
            if crc32c(buf[i + CRC_START : j] if length < 4096 else memoryview(buf)[i + CRC_START : j]) != h[4]:
                raise NotClean(path)
            yield h
            pos = end


def _read_at(f, pos: int, n: int, least: int) -> bytes:
    f.seek(pos)
    buf = f.read(n)
    if len(buf) < least:
        raise NotClean(f"{f.name}: ends before {pos + least} (changed while read)")
    return buf
