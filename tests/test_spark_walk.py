"""The Spark decoder's columnar walk yields exactly what the files layer's reader yields: the same
batches (every header field, CRC verdict, error), records and skipped regions, on every real file
and on files damaged in the ways the reader's own tests damage them."""

import io
import random

import pytest

from conftest import NO_CORPUS, corpus_log_files
from kraftlog.files.reader import Limits, Region, read_log_stream
from kraftlog.spark.walk import HEADER_LAYOUT, walk
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


def by_walk(buf: bytes, limits: Limits = Limits(), chunk: int = 1 << 18) -> tuple[list, list]:
    batches, regions = [], []
    for w in walk(buf, limits, chunk):
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
    return {"runs": seg, "runs-crc": bytes(crc), "runs-length": bytes(length), "runs-magic": bytes(magic),
            "runs-past-the-end": bytes(longer), "runs-cut": seg[: inside + 30], "runs-cut-whole": seg[:inside]}


@pytest.mark.parametrize("name", list(_long_runs()))
@pytest.mark.parametrize("chunk", [1 << 18, 100])
def test_damage_inside_a_run_of_one_size(name, chunk):
    buf = _long_runs()[name]
    walked = by_walk(buf, chunk=chunk)
    assert walked == by_reader(buf)
    assert len(walked[0]) > 100


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
def test_records_of_every_shape(name):
    buf = _varied()[name]
    walked = by_walk(buf)
    assert walked == by_reader(buf)
    assert sum(len(b[3]) for b in walked[0]) > 1000


@pytest.mark.parametrize("name", list(_damaged()))
@pytest.mark.parametrize("chunk", [1 << 18, 3])
def test_damaged_files(name, chunk):
    buf = _damaged()[name]
    assert by_walk(buf, chunk=chunk) == by_reader(buf)


def test_limits_are_the_readers():
    buf = _segment()
    limits = Limits(max_batch_bytes=100)
    assert by_walk(buf, limits) == by_reader(buf, limits)
