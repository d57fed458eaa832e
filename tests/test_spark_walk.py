"""The Spark decoder's columnar walk yields exactly what the files layer's reader yields: the same
batches (every header field, CRC verdict, error), records and skipped regions, on every real file
and on files damaged in the ways the reader's own tests damage them."""

import io
import os
import random

import pytest

from conftest import NO_CORPUS, corpus_log_files
from kraftlog.files import storage
from kraftlog.files import walk as walk_module
from kraftlog.files.reader import Limits, Region, read_log_stream
from kraftlog.files.storage import Source
from kraftlog.files.walk import HEADER_LAYOUT, WINDOW, Interned, walk, walk_source
from kraftlog.wire.batch import CRC_START, HEADER_SIZE, TIMESTAMP_TYPE_BIT, Record, encode_batch
from kraftlog.wire.codecs import GZIP
from kraftlog.wire.crc import crc32c

_FIELDS = [name for name, _, _ in HEADER_LAYOUT]
CRC_AT = next(offset for name, offset, _ in HEADER_LAYOUT if name == "crc")


def by_reader(buf: bytes, limits: Limits = Limits()) -> tuple[list, list]:
    batches, regions = [], []
    for item in read_log_stream(io.BytesIO(buf), len(buf), limits):
        if isinstance(item, Region):
            regions.append(item)
        else:
            batches.append((item.position, item.crc_valid, item.error,
                            [(r.offset, r.timestamp, r.key, r.value) for r in item.records],
                            item.base_offset, item.batch_length, item.partition_leader_epoch, item.magic, item.crc,
                            item.attributes, item.last_offset_delta, item.base_timestamp, item.max_timestamp,
                            item.producer_id, item.producer_epoch, item.base_sequence, item.records_count))
    return batches, regions


def by_walk(buf, limits: Limits = Limits(), chunk: int = 1 << 18, walker=walk) -> tuple[list, list]:
    batches, regions = [], []
    for w in walker(buf, limits, chunk):
        records: list[list] = [[] for _ in range(w.count)]
        for b, o, t, kv in zip(w.rec_batch.tolist(), w.rec_offset.tolist(), w.rec_timestamp.tolist(),
                               w.rec_kv.tolist(), strict=True):
            records[b].append((o, t, *w.kv[kv]))
        cols = [w.header[f].tolist() for f in _FIELDS]
        for i in range(w.count):
            batches.append((int(w.positions[i]), bool(w.crc_valid[i]), w.errors[i], records[i],
                            *(c[i] for c in cols)))
        regions.extend(w.regions)
    return batches, regions


def _segment(n: int = 40, every: int = 7) -> bytes:
    """Mostly one-NoOp batches, some with several records, one compressed: a metadata log's mix."""
    noop = b"\x01\x14\x00\x00"
    out = []
    for i in range(n):
        records = [Record(0, 0, None, noop, offset_delta=k, timestamp_delta=k)
                   for k in range(1 + (i % every == 3) * 3)]
        out.append(encode_batch(records, base_offset=10 + 4 * i, base_timestamp=1_700_000_000_000 + i,
                                partition_leader_epoch=3, attributes=GZIP if i == 11 else 0))
    return b"".join(out)


REAL_METADATA = corpus_log_files(metadata_only=True)


@pytest.mark.skipif(not REAL_METADATA, reason=NO_CORPUS)
@pytest.mark.parametrize("path", REAL_METADATA or [None], ids=lambda p: p.name if p else "none")
def test_real_files(path):
    buf = path.read_bytes()
    assert by_walk(buf) == by_reader(buf)


def _damaged() -> dict[str, bytes]:
    seg = _segment()
    flip = bytearray(seg)
    flip[200] ^= 0xFF  # inside the third batch: its CRC fails
    length = bytearray(seg)
    length[8:12] = (10**6).to_bytes(4, "big")  # the first batch's length runs past the file
    magic = bytearray(seg)
    magic[16 + 150] = 7  # a magic byte no reader knows, mid-file (position 150 is not a batch start)
    return {
        "clean": seg,
        "cut-tail": seg[:-20],
        "cut-header": seg[: len(seg) - len(seg) // 40 + 30],
        "crc": bytes(flip),
        "length": bytes(length),
        "garbage-between": seg[:300] + b"\x00" * 37 + seg[300:],
        "legacy": b"\x00" * 8 + (14).to_bytes(4, "big") + b"\x00" * 4 + b"\x00" + b"\x00" * 9 + seg,
        "magic": bytes(magic),
        "empty": b"",
        "tiny": b"\x00\x01\x02",
    }


def _long_runs() -> dict[str, bytes]:
    """Runs of hundreds of batches of one size, which the walk looks up together, damaged inside a run."""
    seg = _segment(n=700, every=250)
    batches = by_reader(seg)[0]
    inside = batches[120][0]  # the start of a batch well inside the first run
    size = batches[121][0] - inside
    assert size == batches[122][0] - batches[121][0]
    crc, length, magic, longer = bytearray(seg), bytearray(seg), bytearray(seg), bytearray(seg)
    crc[inside + 40] ^= 0x01
    length[inside + 8 : inside + 12] = (size - 12 + 9).to_bytes(4, "big")  # runs into the next batch
    magic[inside + 16] = 1
    longer[inside + 8 : inside + 12] = (10**6).to_bytes(4, "big")
    large = b"".join(encode_batch([Record(0, 0, None, bytes([i % 251]) * 1500)], base_offset=i,
                                  base_timestamp=1_700_000_000_000 + i) for i in range(300))
    large_crc = bytearray(large)
    large_crc[len(large) // 2 + 700] ^= 0x10  # inside the 151st batch
    return {"runs": seg, "runs-crc": bytes(crc), "runs-length": bytes(length), "runs-magic": bytes(magic),
            "runs-past-the-end": bytes(longer), "runs-cut": seg[: inside + 30], "runs-cut-whole": seg[:inside],
            "runs-large": large, "runs-large-crc": bytes(large_crc)}


@pytest.mark.parametrize("name", list(_long_runs()))
@pytest.mark.parametrize("chunk", [1 << 18, 100])
def test_damage_inside_a_run_of_one_size(name, chunk):
    buf = _long_runs()[name]
    walked = by_walk(buf, chunk=chunk)
    assert walked == by_reader(buf)
    assert len(walked[0]) > 100


@pytest.mark.parametrize("name", ["runs", "runs-large"])
def test_clean_runs_are_walked_without_the_reader(name, monkeypatch):
    """A clean file's runs of one size pass the walk's own CRC check (rows, or one by one for large
    batches): the reader, which takes over at the first mismatch, is never called."""
    buf = _long_runs()[name]
    expected = by_reader(buf)

    def refused(*args, **kwargs):
        raise AssertionError("a clean batch was handed to the reader")

    monkeypatch.setattr(walk_module, "read_log_stream", refused)
    assert by_walk(buf) == expected


@pytest.mark.parametrize("value_size", [1, 2, 5, 9, 20, 40])
def test_one_record_batches_differing_in_one_byte(value_size):
    """Small one-record batches of one size, all alike but one whose payload differs in one byte
    (any of them; value sizes around the 8-byte words payloads are compared in): it keeps its own
    record."""
    base = bytes(range(1, value_size + 1))
    for k in range(value_size):
        values = [base] * 20 + [base[:k] + b"\xee" + base[k + 1 :]] + [base] * 20
        buf = b"".join(encode_batch([Record(0, 0, None, v)], base_offset=i, base_timestamp=1_700_000_000_000)
                       for i, v in enumerate(values))
        walked = by_walk(buf)
        assert walked == by_reader(buf)
        assert [b[3][0][3] for b in walked[0]] == values


def _varied() -> dict[str, bytes]:
    """Batches of many records in every shape a record can take: the plain ones read as columns,
    the others (keys, headers, null or long values, long varints) by the reader."""
    rng = random.Random(5)
    batches = []
    for i in range(30):
        records = []
        for k in range(rng.choice([2, 5, 70, 200])):
            shape = rng.random()
            value = bytes(rng.randrange(256) for _ in range(rng.choice([3, 40, 70, 200])))
            records.append(Record(0, 0, b"k" if shape < 0.02 else None,
                                  None if 0.02 <= shape < 0.04 else value * (60 if 0.04 <= shape < 0.05 else 1),
                                  ((b"h", b"v"),) if 0.05 <= shape < 0.07 else (),
                                  offset_delta=k, timestamp_delta=rng.choice([0, 0, 5, -3, 100, 20000])))
        batches.append(encode_batch(records, base_offset=1000 * i, base_timestamp=1_700_000_000_000 + i,
                                    attributes=rng.choice([0, 0, 0, TIMESTAMP_TYPE_BIT])))
    seg = b"".join(batches)
    out = {"varied": seg}
    # a record whose length frames one byte too many, in a batch whose CRC is right
    bad = bytearray(batches[3])
    body = HEADER_SIZE
    bad[body] += 2  # a one-byte zig-zag length, one larger
    bad[CRC_AT : CRC_AT + 4] = crc32c(bytes(bad[CRC_START:])).to_bytes(4, "big")
    out["record-length"] = b"".join(batches[:3]) + bytes(bad) + b"".join(batches[4:])
    return out


@pytest.mark.parametrize("name", list(_varied()))
@pytest.mark.parametrize("lockstep", [walk_module._LOCKSTEP, 1])
def test_records_of_every_shape(name, lockstep, monkeypatch):
    """Records framed batch by batch, and in vector steps over every batch (``_frame``)."""
    monkeypatch.setattr(walk_module, "_LOCKSTEP", lockstep)
    buf = _varied()[name]
    walked = by_walk(buf)
    assert walked == by_reader(buf)
    assert sum(len(b[3]) for b in walked[0]) > 1000


def _plain(batches: int = 150) -> bytes:
    """Uncompressed batches of 2 to 160 plain records (null key, no headers) with values of 0 to
    2,000 bytes (record lengths of one and two varint bytes), some repeated."""
    rng = random.Random(18)
    values = [bytes(rng.randrange(256) for _ in range(rng.choice([0, 8, 50, 63, 64, 300, 2000]))) for _ in range(40)]
    return b"".join(encode_batch([Record(0, 0, None, rng.choice(values), offset_delta=k,
                                         timestamp_delta=rng.choice([0, 7, -2, 8000]))
                                  for k in range(rng.choice([2, 3, 40, 160]))],
                                 base_offset=200 * i, base_timestamp=1_700_000_000_000 + i)
                    for i in range(batches))


@pytest.mark.parametrize("lockstep", [walk_module._LOCKSTEP, 1, 10**6])
def test_plain_records_are_read_as_columns(lockstep, monkeypatch):
    """Every record of a plain batch is framed and read as columns (the batch decoder is never
    called), by vector steps over many batches or one batch at a time, as the reader reads them."""
    monkeypatch.setattr(walk_module, "_LOCKSTEP", lockstep)
    buf = _plain()

    def refused(*args, **kwargs):
        raise AssertionError("a plain batch went to decode_batch_at")

    monkeypatch.setattr(walk_module, "decode_batch_at", refused)
    walked = by_walk(buf)
    monkeypatch.undo()
    assert walked == by_reader(buf)
    assert sum(len(b[3]) for b in walked[0]) > 5000


@pytest.mark.parametrize("name", list(_damaged()))
@pytest.mark.parametrize("chunk", [1 << 18, 3])
def test_damaged_files(name, chunk):
    buf = _damaged()[name]
    assert by_walk(buf, chunk=chunk) == by_reader(buf)


def test_limits_are_the_readers():
    buf = _segment()
    limits = Limits(max_batch_bytes=100)
    assert by_walk(buf, limits) == by_reader(buf, limits)


def by_source(path, limits: Limits = Limits(), chunk: int = 1 << 18, window: int = WINDOW) -> tuple[list, list]:
    """``by_walk`` over the file read through the storage layer in windows of ``window`` bytes."""
    with Source(path) as src:
        return by_walk(src, limits, chunk, lambda s, lim, c: walk_source(s, lim, c, window=window))


def _largest_batch(buf: bytes) -> int:
    positions = [b[0] for b in by_reader(buf)[0]] + [len(buf)]
    return max([b - a for a, b in zip(positions, positions[1:], strict=False)] + [HEADER_SIZE])


ALL_SHAPES = {**_damaged(), **_long_runs(), **_varied()}


@pytest.mark.parametrize("name", list(ALL_SHAPES))
@pytest.mark.parametrize("chunk", [1 << 18, 5])
def test_a_file_read_in_windows_walks_as_the_reader_reads_it(name, chunk, tmp_path):
    """Windows about one batch long: nearly every batch is cut by a window's end, and damage lies
    across windows; the walk must not take a window's end for the file's."""
    buf = ALL_SHAPES[name]
    limits = Limits(max_batch_bytes=_largest_batch(buf) + 1)
    (tmp_path / "f.log").write_bytes(buf)
    assert by_source(tmp_path / "f.log", limits, chunk, window=limits.max_batch_bytes) == by_reader(buf, limits)


@pytest.mark.parametrize("name", list(ALL_SHAPES))
def test_windows_smaller_than_a_batch(name, tmp_path):
    """A window shorter than the batch it starts with is read again as long as that batch (the
    commands walk in windows of a MiB, below the largest batch allowed); damage still goes to the reader."""
    buf = ALL_SHAPES[name]
    (tmp_path / "f.log").write_bytes(buf)
    for window in (HEADER_SIZE, 200, 1000):
        assert by_source(tmp_path / "f.log", Limits(), 5, window=window) == by_reader(buf), window


@pytest.mark.parametrize("name", list(ALL_SHAPES))
@pytest.mark.parametrize("most", [3, 1 << 14])
def test_walks_sharing_their_pairs_walk_as_the_reader_reads_it(name, most, tmp_path, monkeypatch):
    """With ``Interned`` a file's walks index one growing list of pairs (a new one once it holds more than
    ``INTERNED_MAX``): what they give is still what the reader gives, damage too."""
    buf = ALL_SHAPES[name]
    (tmp_path / "f.log").write_bytes(buf)
    monkeypatch.setattr(walk_module, "INTERNED_MAX", most)
    interned = Interned()
    with Source(tmp_path / "f.log") as src:
        got = by_walk(src, Limits(), 5, lambda s, lim, c: walk_source(s, lim, c, window=200, interned=interned))
    assert got == by_reader(buf)


def test_a_pair_keeps_its_index_across_a_files_walks(monkeypatch):
    buf = _segment(n=60)
    walks = list(walk(buf, chunk=5, interned=Interned()))
    assert len(walks) == 12 and all(w.kv is walks[0].kv for w in walks)  # one list, grown
    pairs = {(None, b"\x01\x14\x00\x00")}
    assert set(walks[0].kv) == pairs and len(walks[-1].kv) == 1
    assert all((w.rec_kv == 0).all() for w in walks)
    monkeypatch.setattr(walk_module, "INTERNED_MAX", 0)  # every walk past the first starts a new list
    walks = list(walk(buf, chunk=5, interned=Interned()))
    assert len({id(w.kv) for w in walks}) == 12 and all(w.kv == [(None, b"\x01\x14\x00\x00")] for w in walks)
    assert [w.kv for w in walk(buf, chunk=5)] == [w.kv for w in walks]  # as walks that share nothing


@pytest.mark.skipif(not REAL_METADATA, reason=NO_CORPUS)
def test_real_files_read_in_windows():
    for path in REAL_METADATA[:40]:
        limits = Limits(max_batch_bytes=_largest_batch(path.read_bytes()) + 1)
        assert by_source(path, limits, window=limits.max_batch_bytes) == by_reader(path.read_bytes(), limits), path


def test_a_file_that_shrinks_while_walked_is_said_to_have_changed(tmp_path):
    buf = _segment(n=400)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(buf)
    limits = Limits(max_batch_bytes=_largest_batch(buf) + 1)
    src = Source(path, storage.stat(path))
    walks = walk_source(src, limits, window=limits.max_batch_bytes)
    first = next(walks)
    assert first.count > 0
    os.truncate(path, len(buf) // 2)
    with pytest.raises(storage.Changed, match=rf"{path}: changed while read: it ends at byte {len(buf) // 2}, "
                                              rf"not {len(buf)} as when opened \(truncated while read\)"):
        list(walks)
    assert not src.opened


@pytest.mark.parametrize("change,says", [
    ("truncate", r"is not the file that was listed: 1200 bytes when listed, 600 now"),
    ("replace", r"is not the file that was listed: another file \(inode \d+ when listed, \d+ now\)"),
    ("touch", r"is not the file that was listed: modified since it was listed \(same size\)"),
    ("delete", r"no such file \(it was there when the input was listed\)"),
])
def test_a_file_that_changed_since_it_was_listed_is_not_read(change, says, tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"\x00" * 1200)
    seen = storage.stat(path)
    if change == "truncate":
        os.truncate(path, 600)
    elif change == "replace":
        (tmp_path / "new").write_bytes(b"\x01" * 1200)
        os.replace(tmp_path / "new", path)
    elif change == "touch":
        os.utime(path, ns=(seen.mtime_ns + 10**9, seen.mtime_ns + 10**9))
    else:
        path.unlink()
    with pytest.raises(storage.Changed, match=f"{path}: {says}"):
        list(walk(Source(path, seen)))


@pytest.mark.parametrize("name", ["clean", "runs", "varied"])
def test_a_windows_end_is_not_taken_for_damage(name, tmp_path, monkeypatch):
    """A clean file read in windows stays on the fast loop: the reader's slow path (which would read
    past the window) is never asked."""
    buf = ALL_SHAPES[name]
    limits = Limits(max_batch_bytes=_largest_batch(buf) + 1)
    (tmp_path / "f.log").write_bytes(buf)
    monkeypatch.setattr(walk_module, "_slow_until_clean", lambda *a: pytest.fail("slow path at a window's end"))
    walked = by_source(tmp_path / "f.log", limits, window=limits.max_batch_bytes)
    assert walked == by_reader(buf, limits) and len(buf) > 4 * limits.max_batch_bytes
