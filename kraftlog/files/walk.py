"""A segment or snapshot held in memory, walked into columns: batch headers and records.

The files layer's reader yields a ``Batch`` and ``Record`` objects per batch, and a quiet metadata
log is millions of one-record batches. Here the loop only steps from length to length (a run of
same-size batches in one step, their CRCs taken together at the end, batches of one size as rows);
the 61-byte headers are then gathered with numpy at the offsets the construct declaration
``BatchHeader`` gives, and a one-record batch whose bytes were seen before (the NoOps) becomes an
index, not objects. The records of other uncompressed batches are read as columns when they have
the plain shape (framed in vector steps over many batches at once); compressed batches and anything
else go through ``decode_batch_at``. The first byte the fast loop does not like (a bad CRC, a
cut-off tail, legacy magic, a corrupt length) hands the rest of the file to ``read_log_stream``, so
what comes out is what the reader yields; ``tests/test_spark_walk.py`` holds the two side by side.
"""

import dataclasses
import itertools
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from kraftlog.files.reader import (
    FileChangedError,
    Limits,
    NotClean,
    Region,
    open_regular,
    read_log_stream,
    too_many_records,
)
from kraftlog.files.storage import Remote, Source, Stream
from kraftlog.wire.batch import (
    COMPRESSION_MASK,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    Batch,
    BatchHeader,
    decode_batch_at,
)
from kraftlog.wire.crc import crc32c, crc32c_rows
from kraftlog.wire.errors import KraftlogError

_MIN_LENGTH = HEADER_SIZE - LOG_OVERHEAD
_SMALL = 64  # a one-record batch with a payload this small is remembered (a NoOp's is 8 bytes)
_MEMO_MAX_ENTRIES = 4096
_AT = re.compile(r"^batch at (\d+)")
_SAME, _AHEAD, _AHEAD_MAX = 3, 1024, 8192  # batches of one size before looking ahead; how far, at most
_ROWS_MAX = 1024  # batches of runs up to this size have their CRCs taken as rows


def _layout() -> list[tuple[str, int, np.dtype]]:
    """(field, byte offset, big-endian numpy dtype) for every field of ``BatchHeader``."""
    out, offset = [], 0
    for sc in BatchHeader.subcons:
        size = sc.subcon.sizeof()
        kind = "u" if sc.subcon.fmtstr[-1].isupper() else "i"
        out.append((sc.name, offset, np.dtype(f">{kind}{size}")))
        offset += size
    assert offset == HEADER_SIZE
    return out


HEADER_LAYOUT = _layout()
_LENGTH_AT, _INT32 = next((off, dt) for name, off, dt in HEADER_LAYOUT if name == "batchLength")
_MAGIC_AT, _INT8 = next((off, dt) for name, off, dt in HEADER_LAYOUT if name == "magic")
#: baseOffset, batchLength, partitionLeaderEpoch, magic: what the loop reads of each batch.
_PREFIX = struct.Struct(">" + "".join(sc.subcon.fmtstr[1:] for sc in BatchHeader.subcons[:4]))
#: ``BatchHeader`` field -> ``Batch`` property (``baseOffset`` -> ``base_offset``).
_ATTRS = {sc.name: re.sub(r"([A-Z])", r"_\1", sc.name).lower() for sc in BatchHeader.subcons}


@dataclass(slots=True)
class Walk:
    """A file as columns. Per batch: header fields by ``BatchHeader`` name, ``crc_valid`` and
    ``errors``. Per record, in file order: ``rec_batch`` (index of its batch), ``rec_offset``,
    ``rec_timestamp`` and ``rec_kv``, an index into ``kv``, the distinct (key, value) pairs (with
    ``Interned``, those of the file's walks so far: pairs this walk does not name too)."""

    positions: np.ndarray
    header: dict[str, np.ndarray]
    crc_valid: np.ndarray
    errors: list[str | None]
    rec_batch: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rec_offset: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rec_timestamp: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rec_kv: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    kv: list[tuple[bytes | None, bytes | None]] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.positions)


#: Pairs an ``Interned`` holds before the next walk starts a new one.
INTERNED_MAX = 1 << 14


class Interned:
    """The distinct (key, value) pairs of a file's walks so far, shared by them (``walk_file``'s
    ``interned``): a pair an earlier walk held keeps its index in the later ones, so that what is made
    of a value (its decoded record) is made once per file, not once per window of it. ``kv`` only grows,
    so a walk's indices stay valid; a walk that starts with more than ``INTERNED_MAX`` pairs held
    starts new ones (the walks before keep theirs)."""

    __slots__ = ("ids", "kv")

    def __init__(self) -> None:
        self.ids: dict[bytes | tuple[bytes | None, bytes | None], int] = {}  # as ``_Records.ids``
        self.kv: list[tuple[bytes | None, bytes | None]] = []

    def restart(self) -> None:
        if len(self.ids) > INTERNED_MAX:
            self.ids, self.kv = {}, []


#: Above any index: ``_Records.intern_values`` marks the values new to ``ids`` with it.
_FRESH = 1 << 62


class _Records:
    """Records collected batch by batch (lists) and as columns (``parts``), beside the vectorised
    one-record batches; their (key, value) pairs interned, so that a value repeated in a walk (in a
    file's walks, with ``Interned``) is decoded and looked up once."""

    def __init__(self, interned: Interned | None = None) -> None:
        self.batch: list[int] = []
        self.offset: list[int] = []
        self.timestamp: list[int] = []
        self.kv: list[int] = []
        #: (batch, offset, timestamp, kv) columns of records read as columns
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        #: (key, value) -> index into ``Walk.kv``; a null key's pair by its value (bytes) alone (``pairs``)
        self.ids: dict[bytes | tuple[bytes | None, bytes | None], int] = {} if interned is None else interned.ids
        self.interned = interned
        self.keyed: set[int] = set()  # the indices of the (key, value) tuples this walk interned

    def intern(self, pairs) -> list[int]:
        ids = self.ids
        keys = [v if k is None and type(v) is bytes else (k, v) for k, v in pairs]
        out = [ids.setdefault(k, len(ids)) for k in keys]
        self.keyed.update(i for k, i in zip(keys, out, strict=True) if type(k) is tuple)
        return out

    def intern_values(self, values: list[bytes]) -> np.ndarray:
        """``intern`` of (None, value) for each of ``values``, in one pass over ``ids``: a value new to it
        is held there as ``_FRESH`` plus where it first occurs, then given the next index, in the order
        they first occur (the file's values hashed once, not once per walk they come again in)."""
        n = len(values)
        ids = self.ids
        known = len(ids)
        codes = np.fromiter(map(ids.setdefault, values, range(_FRESH, _FRESH + n)), np.int64, n)
        first = np.flatnonzero(codes == np.arange(_FRESH, _FRESH + n))  # where each new value first occurs
        if first.size:
            fresh = codes >= _FRESH
            index = np.empty(n, np.int64)
            index[first] = np.arange(known, known + first.size)
            codes[fresh] = index[codes[fresh] - _FRESH]
            ids.update(zip(map(values.__getitem__, first.tolist()), range(known, known + first.size), strict=True))
        return codes

    def pairs(self) -> list[tuple[bytes | None, bytes | None]]:
        """The distinct (key, value) pairs, by index (with ``Interned``, its ``kv`` with this walk's new ones)."""
        if self.interned is None:
            kv, new = [], self.ids
        else:  # the pairs ``kv`` does not list yet, the last ones of ``ids``
            kv = self.interned.kv
            new = list(itertools.islice(reversed(self.ids), len(self.ids) - len(kv)))[::-1]
        known = len(kv)
        kv += zip(itertools.repeat(None), new)
        for i in self.keyed:
            if i >= known:  # a pair held as its (key, value) tuple
                kv[i] = kv[i][1]
        return kv

    def add(self, batch_index: int, records) -> None:
        self.batch += [batch_index] * len(records)
        self.offset += [r.offset for r in records]
        self.timestamp += [r.timestamp for r in records]
        self.kv += self.intern((r.key, r.value) for r in records)


#: One-record payload -> (offset delta, timestamp delta, key, value); shared by a worker's files.
_memo: dict[bytes, tuple[int, int, bytes | None, bytes | None]] = {}


def _rows(u8: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """The ``width`` bytes at each of ``starts`` as rows, gathered from a view of every window of
    ``width`` bytes (no index array of every byte: memory of the rows alone)."""
    if not len(starts):
        return np.zeros((0, width), np.uint8)
    return np.ndarray((len(u8) - width + 1, width), np.uint8, u8, 0, (1, 1))[starts]


#: ``BatchHeader`` as one numpy record of big-endian fields.
_HEADER = np.dtype({"names": [name for name, _, _ in HEADER_LAYOUT], "formats": [dt for _, _, dt in HEADER_LAYOUT],
                    "offsets": [off for _, off, _ in HEADER_LAYOUT], "itemsize": HEADER_SIZE})


def _headers(u8: np.ndarray, positions: np.ndarray) -> dict[str, np.ndarray]:
    """Every ``BatchHeader`` field of the batches at ``positions``: their headers copied out as
    one block of rows, then each field read as a column of it."""
    rows = _rows(u8, positions, HEADER_SIZE).view(_HEADER)[:, 0]
    return {name: rows[name].astype(dt.newbyteorder("=")) for name, _, dt in HEADER_LAYOUT}


def _fast_batches(buf: bytes, pos: int, limits: Limits, most: int) -> tuple[np.ndarray, np.ndarray, int]:
    """From ``pos``: positions of up to ``most`` whole v2 batches, the CRC computed for each, and
    where the run stopped. After a few batches of one size in a row (a quiet log's NoOps) the next
    ones are looked up together: same length field, magic 2; their CRCs are taken at the end, all
    batches of one size at once (``_run_crcs``)."""
    size = len(buf)
    mv = memoryview(buf)
    u8 = np.frombuffer(buf, np.uint8)
    lengths = _lengths(buf)
    starts: list[int] = []  # batches stepped to one by one, and their CRCs
    crcs: list[int] = []
    runs: list[tuple[int, int, int, int]] = []  # (index of its first batch, position, batches, size)
    max_length = limits.max_batch_bytes - LOG_OVERHEAD
    unpack = _PREFIX.unpack_from
    count, same, previous, ahead = 0, 0, -1, _AHEAD
    while size - pos >= HEADER_SIZE and count < most:
        _, length, _, magic = unpack(buf, pos)
        end = pos + length + LOG_OVERHEAD
        if magic != 2 or not _MIN_LENGTH <= length <= max_length or end > size:
            break
        same = same + 1 if length == previous else 0
        previous = length
        if same >= _SAME:  # the next batch of this length, if any, goes on with the run
            step = end - pos
            n = _same_size(lengths, u8, pos, length, min((size - pos) // step, most - count, ahead))
            runs.append((count, pos, n, step))
            ahead = min(ahead * 2, _AHEAD_MAX) if n == ahead else _AHEAD
            count += n
            pos += n * step
            continue
        starts.append(pos)
        crcs.append(crc32c(buf[pos + CRC_START : end] if length < 4096 else mv[pos + CRC_START : end]))
        count += 1
        pos = end
    positions = np.empty(count, np.int64)
    checked = np.empty(count, np.uint32)
    alone = np.ones(count, bool)
    if runs:
        first, at, n, step = (np.asarray(c, np.int64) for c in zip(*runs, strict=True))
        k = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)  # each run batch's place in its run
        index = np.repeat(first, n) + k
        positions[index] = np.repeat(at, n) + np.repeat(step, n) * k
        checked[index] = _run_crcs(u8, mv, positions[index], np.repeat(step, n), set(step.tolist()))
        alone[index] = False
    positions[alone] = starts
    checked[alone] = crcs
    return positions, checked, pos


def _lengths(buf: bytes) -> np.ndarray:
    """The big-endian int32 at every byte of ``buf``, read in place: a run's length fields are a
    slice of it."""
    return np.ndarray((max(len(buf) - 3, 0),), _INT32, buf, 0, (1,))


def _same_size(lengths: np.ndarray, u8: np.ndarray, pos: int, length: int, most: int) -> int:
    """How many batches from ``pos`` on each have ``length`` and magic 2, while they do (at least
    the one at ``pos``, which the caller has read); ``lengths`` is ``_lengths`` of the bytes."""
    step = length + LOG_OVERHEAD
    stop = pos + step * most
    ok = (lengths[pos + _LENGTH_AT : stop : step] == length) & (u8[pos + _MAGIC_AT : stop : step] == 2)
    return most if ok.all() else int(ok.argmin())


#: Rows a row CRC takes at once: beyond some thousands, numpy's passes over them leave the cache;
#: below some tens, a call per batch costs less.
_CRC_ROWS, _CRC_ROWS_MIN = 4096, 48


def _run_crcs(u8: np.ndarray, mv: memoryview, positions: np.ndarray, steps: np.ndarray, sizes: set[int]
              ) -> np.ndarray:
    """The CRC of each batch of the runs (at ``positions``, of ``steps`` bytes each; ``sizes``: the
    distinct ``steps``): the batches of one size as rows (``crc32c_rows``), some thousands at a time; large or few ones one by one."""
    out = np.empty(len(positions), np.uint32)
    for step in sorted(sizes):
        at = np.flatnonzero(steps == step)
        if step > _ROWS_MAX or at.size < _CRC_ROWS_MIN:
            out[at] = [crc32c(mv[p + CRC_START : p + step]) for p in positions[at].tolist()]
            continue
        for lo in range(0, at.size, _CRC_ROWS):
            part = at[lo : lo + _CRC_ROWS]
            out[part] = crc32c_rows(_rows(u8, positions[part] + CRC_START, step - CRC_START))
    return out


#: Bytes of a file a task holds at once when it reads one through the storage layer (at least
#: one largest batch): a 1 GiB segment costs a window, not 1 GiB.
WINDOW = 64 << 20


def walk(buf: "bytes | Source", limits: Limits = Limits(), chunk: int = 1 << 18,
         want: list[tuple[int, int]] | None = None, interned: Interned | None = None) -> Iterator[Walk]:
    """Every batch, record and unreadable region of one file's bytes, in file order, in walks of
    about ``chunk`` batches (so a 1 GiB segment never becomes one set of columns). With ``want``
    (sorted, disjoint offset intervals) only batches that reach into one have their records read:
    an empty list walks headers and CRCs only. A ``Source`` is read in windows (``walk_source``). With
    ``interned`` the walks' ``kv`` are the file's pairs so far (``Interned``)."""
    if isinstance(buf, Source):
        yield from walk_source(buf, limits, chunk, want, interned=interned)
        return
    yield from _walk(buf, limits, chunk, want, interned=interned)


def walk_source(src: Source, limits: Limits = Limits(), chunk: int = 1 << 18,
                want: list[tuple[int, int]] | None = None, window: int = WINDOW,
                interned: Interned | None = None) -> Iterator[Walk]:
    """``walk`` over a file read in windows of ``window`` bytes, each walked up to the last whole
    batch in it (the next window starts there), with the file's positions; what the fast loop
    hands to the reader is read from the file, past the window if need be; a window holds at least
    the batch it starts with. A file that is shorter than when it was opened, or not the same when
    the walk ends, raises ``storage.Changed``."""
    window = max(window, HEADER_SIZE)
    start = 0
    try:
        while start < src.size:
            buf = _window(src, start, window, limits)
            start += yield from _walk(buf, limits, chunk, want, src, start, interned)
            del buf  # not held while the next window is read
        src.check()
    finally:
        src.close()


def _window(src: Source, start: int, window: int, limits: Limits) -> bytes:
    """The ``window`` bytes of ``src`` at ``start``, or more: the whole batch that starts there."""
    buf = _read(src, start, min(window, src.size - start))
    _, length, _, magic = _PREFIX.unpack_from(buf) if len(buf) >= HEADER_SIZE else (0, 0, 0, 0)
    if magic == 2 and len(buf) < length + LOG_OVERHEAD <= limits.max_batch_bytes:
        buf = _read(src, start, min(length + LOG_OVERHEAD, src.size - start))
    return buf


def clean_header_columns(path: "str | os.PathLike | Remote", limits: Limits = Limits(), window: int = 1 << 20
                         ) -> Iterator[dict[str, np.ndarray]]:
    """Every ``BatchHeader`` field, as columns a window at a time, of a local regular file that is nothing but
    whole v2 batches whose CRCs hold: what ``read_log_file(records=False)`` yields for such a file, found as
    the walk finds batches (``_fast_batches``: a quiet log's runs of one size looked up and CRC-checked
    together), without a record framed. Anything else raises ``NotClean`` (a region, a CRC mismatch, a file
    that cannot be opened: what came before it is then to be dropped); a file that shrinks while read raises
    ``FileChangedError`` as the reader does."""
    if isinstance(path, Remote):
        raise NotClean(path)
    try:
        src = _Local(open_regular(path))
    except (OSError, KraftlogError):  # the reader says what is wrong with it
        raise NotClean(path) from None
    try:
        start = 0
        while start < src.size:
            buf = _window(src, start, max(window, HEADER_SIZE), limits)
            positions, crcs, stop = _fast_batches(buf, 0, limits, len(buf))
            header = _headers(np.frombuffer(buf, np.uint8), positions)
            final = start + len(buf) >= src.size
            if not stop or (header["crc"] != crcs).any() or (
                    stop < len(buf) and (final or not _crosses(buf, stop, limits))):
                raise NotClean(path)
            yield header
            start += stop
    finally:
        src.close()


def _read(src: Source, start: int, n: int) -> bytes:
    buf = src.read_at(start, n)
    if len(buf) < n:
        raise src.changed(f"it ends at byte {start + len(buf)}, not {src.size} as when opened (truncated while read)")
    return buf


class _Local:
    """A local file as ``walk_source`` reads a ``Source``, by the reader's rules (``read_log_file``):
    the bytes it had when opened are read, fewer is ``FileChangedError``, bytes appended since (a live
    broker's active segment) are not a change."""

    def __init__(self, f) -> None:
        self.f, self.size = f, os.fstat(f.fileno()).st_size

    def read_at(self, at: int, n: int) -> bytes:
        return os.pread(self.f.fileno(), n, at)

    def stream(self, pos: int) -> Stream:
        return Stream(self.read_at, pos)

    def changed(self, why: str) -> FileChangedError:
        return FileChangedError(self.f.name, self.size, os.fstat(self.f.fileno()).st_size)

    def check(self) -> None:
        pass

    def close(self) -> None:
        self.f.close()


def walk_file(path: "str | os.PathLike", limits: Limits = Limits(), want: list[tuple[int, int]] | None = None,
              chunk: int = 1 << 16, window: int = 1 << 21, interned: Interned | None = None) -> Iterator[Walk]:
    """``walk_source`` over a local file opened as the reader opens it (``reader.open_regular``: an
    ``OSError`` for one that is not a regular file), read as the reader reads it. The defaults keep
    a command's memory near the reader's: 2 MiB of the file, a few MB of columns (the 1 GiB generated
    log's report: 0.65 CPU-s less than with 1 MiB, peak RSS +1 to +7 MB; 4 MiB: 0.7 less again, +6 to
    +14 MB); 2 MiB hold fewer batches than ``chunk`` (34,379 of the smallest), so each window is one
    walk (what a walk costs beyond its batches is paid once per window)."""
    yield from walk_source(_Local(open_regular(path)), limits, chunk, want, window, interned)


def _crosses(buf: bytes, pos: int, limits: Limits) -> bool:
    """Whether what starts at ``pos`` is a sane batch header (or part of one) cut by the end of
    ``buf``: a window's end, not damage."""
    if len(buf) - pos < HEADER_SIZE:
        return True
    _, length, _, magic = _PREFIX.unpack_from(buf, pos)
    return magic == 2 and _MIN_LENGTH <= length <= limits.max_batch_bytes - LOG_OVERHEAD \
        and pos + length + LOG_OVERHEAD > len(buf)


def _walk(buf: bytes, limits: Limits, chunk: int, want: list[tuple[int, int]] | None, src: Source | None = None,
          base: int = 0, interned: Interned | None = None):
    """``walk`` over ``buf``; with ``src``, ``buf`` is the window of ``src`` at ``base``: the walk
    stops before a batch the window cuts (unless it is the file's end) and returns where it stopped,
    the reader's slow path reads from ``src``, and positions are the file's."""
    final = src is None or base + len(buf) >= src.size
    pos = 0
    while pos < len(buf):
        positions, crcs, stop = _fast_batches(buf, pos, limits, chunk)
        found = len(positions)
        u8 = np.frombuffer(buf, np.uint8)
        header = _headers(u8, positions)
        bad = np.flatnonzero(header["crc"] != crcs)
        if bad.size:  # the reader decides what a CRC failure means (an invalid batch, or corrupt bytes)
            k = int(bad[0])
            stop = int(positions[k])
            positions = positions[:k]
            header = {name: col[:k] for name, col in header.items()}
        n = len(positions)
        w = Walk(positions, header, np.ones(n, bool), [None] * n)
        if interned is not None:
            interned.restart()
        slow = _Records(interned)
        _fast_records(buf, w, slow, limits, _wanted(header, want))
        cut = not final and not bad.size and found < chunk and _crosses(buf, stop, limits)
        if not cut and (stop < len(buf) and found < chunk or bad.size):
            stop = _slow_until_clean(buf, stop, w, slow, limits, want, src, base)
        _merge(w, slow)
        if base:
            w.positions = w.positions + base
        ready = [w]  # yielded from a list, not a name: once the caller drops the walk, it is gone
        del w, slow, header, positions, crcs
        yield ready.pop()
        pos = stop
        if cut:
            break
    return pos


def distinct(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` of codes known to lie in 0..``size``-1 (a walk's values):
    marked in a table, not sorted."""
    used = np.zeros(size, bool)
    used[codes] = True
    uniq = np.flatnonzero(used)
    rank = np.zeros(size, np.int64)
    rank[uniq] = np.arange(uniq.size)
    return uniq, rank[codes]


def overlaps(first: np.ndarray, last: np.ndarray, want: list[tuple[int, int]] | None) -> np.ndarray:
    """Which offset ranges ``[first, last]`` reach into one of the sorted, disjoint intervals
    ``want`` (all of them for None, none for an empty list)."""
    if want is None:
        return np.ones(len(first), bool)
    if not want:
        return np.zeros(len(first), bool)
    lo, hi = (np.asarray(x, np.int64) for x in zip(*want, strict=True))
    i = np.searchsorted(hi, first)  # the first interval ending at or after the range's start
    return (i < len(hi)) & (lo[np.minimum(i, len(lo) - 1)] <= last)


def _wanted(header: dict[str, np.ndarray], want: list[tuple[int, int]] | None) -> np.ndarray:
    """Which batches reach into one of the wanted offset intervals."""
    base = header["baseOffset"]
    return overlaps(base, base + header["lastOffsetDelta"], want)


def _fast_records(buf: bytes, w: Walk, slow: _Records, limits: Limits, wanted: np.ndarray) -> None:
    """One-record uncompressed batches become vector rows, decoded once per distinct payload; other
    uncompressed batches are read as columns where their records allow (``_plain_records``); the
    remaining wanted batches are decoded one by one."""
    h = w.header
    over = wanted & (h["recordsCount"] > limits.max_records_per_batch)  # refused as the reader refuses them
    for i in np.flatnonzero(over).tolist():
        w.errors[i] = too_many_records(int(h["recordsCount"][i]), limits)
    wanted = wanted & ~over
    size = h["batchLength"] + (LOG_OVERHEAD - HEADER_SIZE)
    plain = (h["attributes"] & COMPRESSION_MASK) == 0
    small = wanted & (h["recordsCount"] == 1) & plain & (size <= _SMALL)
    payload_kv: list[int] = []  # per distinct payload: its (key, value), its deltas
    deltas: list[tuple[int, int]] = []
    entry = np.full(w.count, -1, np.int64)  # a small batch's payload
    u8 = np.frombuffer(buf, np.uint8)
    words = np.ndarray((max(len(buf) - 7, 0),), "<u8", buf, 0, (1,))  # the eight bytes at every byte
    for length in np.flatnonzero(np.bincount(size[small])).tolist():  # payloads of one length compared as byte rows
        at = np.flatnonzero(small & (size == length))
        starts = w.positions[at] + HEADER_SIZE
        if _alike(words, starts, length):  # a quiet log's NoOps: one payload
            start = int(starts[0])
            distinct, first, inverse = [buf[start : start + length]], [0], np.zeros(at.size, np.int64)
        else:
            distinct, first, inverse = np.unique(_rows(u8, starts, length).view(np.dtype((np.void, length)))[:, 0],
                                                 return_index=True, return_inverse=True)
            distinct, first = distinct.tolist(), first.tolist()
        index = np.full(len(distinct), -1, np.int64)
        for k, (payload, i) in enumerate(zip(distinct, first, strict=True)):
            pos = int(w.positions[at[i]])
            seen = _memo.get(payload) or _remember(buf, pos, payload, limits)
            if seen is not None:
                index[k] = len(payload_kv)
                payload_kv += slow.intern([seen[2:]])
                deltas.append(seen[:2])
        entry[at] = index[inverse.ravel()]
    rest = (entry < 0) & wanted
    done = _plain_records(buf, u8, w, np.flatnonzero(rest & plain), slow)
    rest[done] = False
    for i in np.flatnonzero(rest).tolist():
        pos = int(w.positions[i])
        batch = decode_batch_at(buf, pos, pos, limits.max_decompressed, verify_crc=False)
        w.errors[i] = batch.error
        slow.add(i, batch.records)
    hit = np.flatnonzero(entry >= 0)
    rows = entry[hit]
    d = np.asarray(deltas, np.int64).reshape(-1, 2)[rows]
    w.rec_batch = hit
    w.rec_offset, w.rec_timestamp = _absolute(h, hit, d[:, 0], d[:, 1])
    w.rec_kv = np.asarray(payload_kv, np.int64)[rows]


def _alike(words: np.ndarray, starts: np.ndarray, length: int) -> bool:
    """Whether the ``length`` bytes at each of ``starts`` are the same (compared eight bytes at a
    time from ``words``, the eight bytes at every byte; the last eight may overlap the others)."""
    if len(starts) == 1:
        return True
    if length < 8:
        return False
    return all(bool((words[starts + j] == words[starts[0] + j]).all()) for j in (*range(0, length - 8, 8), length - 8))


def _absolute(h: dict[str, np.ndarray], batch: np.ndarray, offset_delta: np.ndarray, timestamp_delta: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Records' offsets and timestamps from their deltas and their batches' headers (a batch with
    LogAppendTime gives every record its max timestamp)."""
    log_append = (h["attributes"][batch] & TIMESTAMP_TYPE_BIT) != 0
    return (h["baseOffset"][batch] + offset_delta,
            np.where(log_append, h["maxTimestamp"][batch], h["baseTimestamp"][batch] + timestamp_delta))


def _heads(buf: bytes, pos: int, end: int, count: int, heads: list[int]) -> bool:
    """Where each of ``count`` records from ``pos`` starts (its length varint; appended to ``heads``), if
    their lengths (zig-zag varints of one or two bytes, each at least 6) frame them exactly up to ``end``;
    else nothing is added. A one-byte length is a step of ``_STEP_ONE``: a look-up per record."""
    mark = len(heads)
    add = heads.append
    step_one = _STEP_ONE
    for _ in range(count):
        if pos >= end:
            break
        step = step_one[buf[pos]]
        if not step:  # a longer varint (or a length below 6)
            b = buf[pos]
            if b < 0x80 or pos + 1 >= end or buf[pos + 1] >= 0x80:
                break
            u = (b & 0x7F) | buf[pos + 1] << 7
            n = (u >> 1) ^ -(u & 1)
            if n < 6:
                break
            step = 2 + n
        add(pos)
        pos += step
    else:
        if pos == end:
            return True
    del heads[mark:]
    return False


def _varints(u8: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zig-zag varints of one or two bytes at ``at``: values, where each ends, and which were that short."""
    last = len(u8) - 1
    b0 = u8[np.minimum(at, last)].astype(np.int64)
    b1 = u8[np.minimum(at + 1, last)].astype(np.int64)
    one = b0 < 0x80
    u = np.where(one, b0, (b0 & 0x7F) | (b1 << 7))
    return (u >> 1) ^ -(u & 1), at + np.where(one, 1, 2), one | (b1 < 0x80)


def _plain_records(buf: bytes, u8: np.ndarray, w: Walk, batches: np.ndarray, slow: _Records) -> np.ndarray:
    """Records of uncompressed batches read as columns where every record of the batch has the plain
    shape a metadata log's records have (short varints, null key, a value, no headers); returns which
    of ``batches`` were read (the others are for ``decode_batch_at``, which reports what is wrong)."""
    h = w.header
    first = w.positions[batches] + HEADER_SIZE
    last = w.positions[batches] + LOG_OVERHEAD + h["batchLength"][batches]
    start, end, owner = _frame(buf, first, last, h["recordsCount"][batches].astype(np.int64))
    batch = batches[owner]
    ts_delta, at, ok = _varints(u8, start + 1)  # after the attributes byte
    offset_delta, at, ok2 = _varints(u8, at)
    ok &= ok2 & (u8[np.minimum(at, len(u8) - 1)] == 1)  # a null key
    length, at, ok2 = _varints(u8, at + 1)
    ok &= ok2 & (length >= 0) & (at + length + 1 == end) & (u8[np.minimum(at + length, len(u8) - 1)] == 0)
    read = np.zeros(w.count, bool)
    read[batch] = True
    read[batch[~ok]] = False
    keep = read[batch]
    batch, ts_delta, offset_delta, at, length = batch[keep], ts_delta[keep], offset_delta[keep], at[keep], length[keep]
    offsets, timestamps = _absolute(h, batch, offset_delta, ts_delta)
    values = [buf[a:z] for a, z in zip(at.tolist(), (at + length).tolist(), strict=True)]
    slow.parts.append((batch, offsets, timestamps, slow.intern_values(values)))
    return read


#: Batches still being framed below which ``_frame`` frames the rest one by one (a step of the
#: vector loop costs as much as framing a hundred records or so in Python, a look-up each).
_LOCKSTEP = 128


def _record_lengths() -> tuple[np.ndarray, np.ndarray]:
    """For the two bytes b, c at a record's start (index ``b | c << 8``): the record's length as
    ``_heads`` reads it (a zig-zag varint of one or two bytes; -1 for a longer one) and the size
    of that varint."""
    b = np.arange(1 << 16) & 0xFF
    c = np.arange(1 << 16) >> 8
    one = b < 0x80
    u = np.where(one, b, (b & 0x7F) | (c << 7))
    return np.where(one | (c < 0x80), (u >> 1) ^ -(u & 1), -1).astype(np.int32), np.where(one, 1, 2).astype(np.int8)


_LENGTH_OF, _VARINT_SIZE = _record_lengths()
#: For a record's first byte: the length varint's size plus the body's (a one-byte varint of a length
#: of at least 6), else 0.
_STEP_ONE = [1 + n if b < 0x80 and n >= 6 else 0 for b, n in enumerate(_LENGTH_OF[:256].tolist())]


def _frame(buf: bytes, first: np.ndarray, last: np.ndarray, count: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, batch) of each record body, in file order, of the batches (``batch`` indexes
    ``first``) whose ``count`` records' lengths frame them exactly from ``first`` up to ``last``, as
    ``_heads`` frames them. The k-th records of all batches are framed in one vector step while
    many batches have a k-th record; the last few go by ``_heads``."""
    pairs = np.ndarray((max(len(buf) - 1, 0),), "<u2", buf, 0, (1,))  # the two bytes at every byte
    top = len(pairs) - 1
    framed = np.zeros(len(first), bool)
    act = np.flatnonzero(count > 0)
    p, e, k = first[act], last[act], count[act]
    starts, ends, owners, lefts = [], [], [], []  # lefts: records of the batch left after this one
    while act.size >= _LOCKSTEP:
        two = pairs[np.minimum(p, top)]  # past the end: the record's end is past it too
        n = _LENGTH_OF[two]
        z = p + _VARINT_SIZE[two] + n
        good = (n >= 6) & (z <= e)
        k = k - 1
        starts.append(z - n)
        ends.append(z)
        owners.append(act)
        lefts.append(k)
        p = z
        more = good & (k > 0)
        if not more.all():
            done = good & (k == 0)
            framed[act[done]] = z[done] == e[done]
            act, p, e, k = act[more], p[more], e[more], k[more]
    tail_heads: list[int] = []
    tail_batches: list[int] = []  # the batches framed by ``_heads``, their records framed so, their ends
    tail_counts: list[int] = []
    tail_last: list[int] = []
    for i, pos, end, left in zip(act.tolist(), p.tolist(), e.tolist(), k.tolist(), strict=True):
        if _heads(buf, pos, end, left, tail_heads):
            tail_batches.append(i)
            tail_counts.append(left)
            tail_last.append(end)
            framed[i] = True
    tail_count = np.asarray(tail_counts, np.int64)
    heads = np.fromiter(tail_heads, np.int64, len(tail_heads))
    tail_ends = np.empty_like(heads)  # a record ends where the next starts, a batch's last at the batch's end
    tail_ends[:-1] = heads[1:]
    tail_ends[np.cumsum(tail_count) - 1] = tail_last
    tail_starts = heads + _VARINT_SIZE[pairs[np.minimum(heads, top)]]
    tail_lefts = np.repeat(np.cumsum(tail_count), tail_count) - np.arange(int(tail_count.sum())) - 1
    owner = np.concatenate([*owners, np.repeat(np.asarray(tail_batches, np.int64), tail_count)])
    keep = framed[owner]
    owner = owner[keep]
    records = np.where(framed, count, 0)
    place = (np.cumsum(records) - records)[owner] + count[owner] - 1 - np.concatenate(
        [*lefts, tail_lefts])[keep]  # in file order
    out = []
    for column in (owner, *(np.concatenate([*c, t])[keep] for c, t in ((starts, tail_starts), (ends, tail_ends)))):
        ordered = np.empty_like(column)
        ordered[place] = column
        out.append(ordered)
    owner, start, end = out
    return start, end, owner


def _remember(buf: bytes, pos: int, payload: bytes, limits: Limits) -> tuple | None:
    """Decode a one-record batch whose payload is new and remember its record (None if it fails)."""
    batch = decode_batch_at(buf, pos, pos, limits.max_decompressed, verify_crc=False)
    if batch.error is not None or len(batch.records) != 1:
        return None
    if len(_memo) >= _MEMO_MAX_ENTRIES:
        _memo.clear()
    r = batch.records[0]
    seen = _memo[payload] = (r.offset_delta, r.timestamp_delta, r.key, r.value)
    return seen


def _slow_until_clean(buf: bytes, start: int, w: Walk, slow: _Records, limits: Limits,
                      want: list[tuple[int, int]] | None, src: Source | None = None, base: int = 0) -> int:
    """The reader's verdict from ``start`` up to the first CRC-valid batch after the trouble (where
    the fast loop can take over again); returns the position after what was consumed. With ``src``
    (``buf`` its window at ``base``) the reader reads the file itself, up to its end; regions and
    batches it adds carry the file's positions, the position returned is the window's."""
    batches: list[Batch] = []
    if src is None:
        end, stream, size = len(buf), Stream(lambda at, n: buf[at : at + n], start), len(buf) - start
    else:
        end, stream, size = src.size - base, src.stream(base + start), src.size - base - start
    for item in read_log_stream(stream, size, limits):
        if isinstance(item, Region):
            # the reader counts from the start of what it was given; so does its one message with a position
            at = start + base
            detail = _AT.sub(lambda m, at=at: f"batch at {int(m[1]) + at}", item.detail)
            w.regions.append(dataclasses.replace(item, position=item.position + at, detail=detail))
            continue
        if overlaps(np.asarray([item.base_offset]), np.asarray([item.last_offset]), want)[0]:
            slow.add(w.count + len(batches), item.records)
        batches.append(item)
        if item.crc_valid:
            end = start + item.position + item.size
            break
    if batches:  # positions of the window, like the fast loop's (``_walk`` adds ``base`` to them all)
        w.positions = np.concatenate([w.positions, np.asarray([b.position + start for b in batches], np.int64)])
        for name, _, dt in HEADER_LAYOUT:
            extra = np.asarray([getattr(b, _ATTRS[name]) for b in batches], dt.newbyteorder("="))
            w.header[name] = np.concatenate([w.header[name], extra])
        w.crc_valid = np.concatenate([w.crc_valid, np.asarray([b.crc_valid for b in batches], bool)])
        w.errors.extend(b.error for b in batches)
    return end


def _merge(w: Walk, slow: _Records) -> None:
    """The vector rows and the decoded ones, back in file order."""
    w.kv = slow.pairs()
    parts = [*slow.parts, *([(slow.batch, slow.offset, slow.timestamp, slow.kv)] if slow.batch else [])]
    if not parts:
        return

    def column(k: int, head: np.ndarray) -> np.ndarray:
        return np.concatenate([head, *(np.asarray(p[k], np.int64) for p in parts)])

    batch = column(0, w.rec_batch)
    order = np.argsort(batch, kind="stable")
    w.rec_batch = batch[order]
    w.rec_offset = column(1, w.rec_offset)[order]
    w.rec_timestamp = column(2, w.rec_timestamp)[order]
    w.rec_kv = column(3, w.rec_kv)[order]
