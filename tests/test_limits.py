"""Every limit that keeps hostile input cheap, each with a clear error: the batch-size cap (default and
configured, also through the CLI flags), the decompressed-size cap per codec, lengths and counts
checked against the bytes left before anything is allocated, varint overflow, negative sizes, and
resynchronisation that stays linear."""

import gc
import io
import json
import struct
import time
import tracemalloc
from contextlib import redirect_stderr, redirect_stdout

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlog.cli.main import main
from kraftlog.files import reader
from kraftlog.files.reader import DEFAULT_MAX_BATCH_BYTES, Limits, Region, read_log_stream
from kraftlog.schema import decode_control, decode_metadata, encode_control, encode_metadata
from kraftlog.wire import codecs
from kraftlog.wire.batch import HEADER, Batch, Record, decode_batch, encode_batch
from kraftlog.wire.errors import CompressionError, CorruptRecordError, KraftlogError
from kraftlog.wire.varint import read_uvarint, read_varint, read_varlong, write_uvarint, write_varint

TOPIC = encode_metadata("TOPIC_RECORD", 0, {"name": "orders", "topicId": "3ql6QVjQQWKGtGd-HqfNxA"})
CODECS = [codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD]


def _batch(values: list[bytes | None], *, base_offset: int = 0, attributes: int = 0, keys=None) -> bytes:
    keys = keys or [None] * len(values)
    recs = [Record(0, 0, k, v, (), 0, 0, i) for i, (k, v) in enumerate(zip(keys, values, strict=True))]
    return encode_batch(recs, base_offset=base_offset, base_timestamp=1_700_000_000_000,
                        partition_leader_epoch=1, attributes=attributes)


def _walk(data: bytes, limits: Limits = Limits()) -> list[Batch | Region]:
    items = list(read_log_stream(io.BytesIO(data), len(data), limits))
    assert sum(i.size if isinstance(i, Batch) else i.length for i in items) == len(data)
    return items


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        status = main(list(argv))
    return status, out.getvalue()


def _jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def _peak(fn) -> tuple[object, int]:
    """``fn()`` and the most Python memory it held at once."""
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _cpu(fn, *args) -> tuple[object, float]:
    """``fn(*args)`` and the CPU seconds this thread spent in it with cyclic collections paused: neither a
    loaded machine's other work nor a full collection falling due meanwhile is time ``fn`` took."""
    gc.disable()
    try:
        t0 = time.thread_time()
        result = fn(*args)
        return result, time.thread_time() - t0
    finally:
        gc.enable()


def _batch_of_size(total: int) -> bytes:
    """One batch of exactly ``total`` bytes (a single record with a large value)."""
    value_len = total - len(_batch([b""]))
    for _ in range(3):  # the value's length varint grows with the value
        blob = _batch([bytes(value_len)])
        value_len += total - len(blob)
    assert len(blob) == total
    return blob


# --- maximum batch size -----------------------------------------------------------------------------


def test_max_batch_size_defaults_to_kafkas_8_mib():
    assert DEFAULT_MAX_BATCH_BYTES == Limits().max_batch_bytes == 8 * 1024 * 1024
    at_cap = _batch_of_size(DEFAULT_MAX_BATCH_BYTES)
    [batch] = _walk(at_cap)
    assert isinstance(batch, Batch) and batch.is_valid and batch.error is None
    over = _batch_of_size(DEFAULT_MAX_BATCH_BYTES + 1)
    [region] = _walk(over)
    assert region == Region(0, len(over), "corrupt", f"batchLength {len(over) - 12} is outside [49, 8388596]")


def test_max_batch_size_is_configurable_in_the_reader_and_the_cli(tmp_path):
    big = _batch([bytes(5000)])
    small = _batch([TOPIC], base_offset=1)
    items = _walk(big + small, Limits(max_batch_bytes=4096))
    assert [(type(i).__name__, i.position) for i in items] == [("Region", 0), ("Batch", len(big))]
    assert "outside [49, 4084]" in items[0].detail

    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    path = d / "00000000000000000000.log"
    path.write_bytes(big + small)
    status, out = _cli("dump", "--format", "jsonl", "--max-batch-bytes", "4KiB", str(path))
    lines = _jsonl(out)
    errors = [x for x in lines if x["kind"] == "error"]
    assert status == 1 and errors[0]["position"] == 0 and errors[0]["length"] == len(big)
    assert sum(x["size"] for x in lines if x["kind"] == "batch") + errors[0]["length"] == len(big + small)
    assert _cli("dump", "--decoder", "raw", str(path))[0] == 0  # the default cap reads it

    status, out = _cli("inspect", "--format", "json", "--max-batch-bytes", "4096", str(tmp_path))
    [segment] = json.loads(out)["nodes"][0]["segments"]
    assert status == 1 and segment["skippedBytes"] == len(big) and segment["batches"] == 1


# --- decompressed size ------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=[codecs.CODEC_NAMES[c] for c in CODECS])
def test_decompressed_cap_per_codec_bounds_memory(codec):
    bomb = _batch([bytes(1 << 20)] * 4, attributes=codec)  # 4 MiB of records in a few KiB
    assert len(bomb) < 300_000
    cap = 256 * 1024
    items, peak = _peak(lambda: _walk(bomb, Limits(max_decompressed=cap)))
    [batch] = items
    assert batch.records == [] and batch.error == (
        f"DecompressedSizeError: {codecs.CODEC_NAMES[codec]} payload inflates past the cap of {cap} bytes")
    assert peak < 4 * cap + 4 * len(bomb)
    assert len(_walk(bomb)[0].records) == 4  # the default 64 MiB cap reads it


@pytest.mark.parametrize("codec", CODECS, ids=[codecs.CODEC_NAMES[c] for c in CODECS])
def test_decompressed_cap_through_the_cli(tmp_path, codec):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_batch([bytes(200_000)], attributes=codec) + _batch([TOPIC], base_offset=1))
    status, out = _cli("dump", "--format", "jsonl", "--decoder", "raw", "--max-decompressed", "64KiB", str(path))
    [error] = [x for x in _jsonl(out) if x["kind"] == "error"]
    assert status == 1 and error["scope"] == "batch" and "inflates past the cap of 65536 bytes" in error["error"]
    assert _cli("dump", "--decoder", "raw", str(path))[0] == 0


def test_snappy_block_claiming_a_huge_length_fails_before_inflating():
    raw_block = write_uvarint(1 << 30) + b"\x00" * 8  # the preamble says 1 GiB
    with pytest.raises(codecs.DecompressedSizeError):
        _peak(lambda: codecs.decompress(codecs.SNAPPY, raw_block, 1 << 20))
    xerial = codecs.XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", -1)
    with pytest.raises(CompressionError, match="chunk of -1 bytes"):
        codecs.decompress(codecs.SNAPPY, xerial, 1 << 20)


# --- lengths and counts in metadata values ----------------------------------------------------------

HUGE = write_uvarint(0xFFFFFFFF)  # count or length + 1 = 2**32 - 1


@pytest.mark.parametrize(("value", "error"), [
    (b"\x01\x02\x00" + HUGE + b"orders", "TopicRecord v0: field 'name' at byte 8: length 4294967294 exceeds"),
    (b"\x01\x03\x00" + bytes(20) + write_uvarint(1 << 31) + bytes(8),
     "field 'replicas' at byte 28: array of 2147483647 needs at least 8589934588 bytes, 8 left"),
    (b"\x01\x00\x00" + bytes(28) + HUGE, "field 'endPoints' at byte 36: array of 4294967294 needs"),
    (b"\x01\x0b\x00\x02u\x01" + HUGE, "field 'salt' at byte 11: length 4294967294 exceeds the 0 bytes left"),
    (b"\x01\x14\x00" + HUGE, "(tagged fields)' at byte 8: 4294967295 tagged fields need at least"),
    (b"\x01\x14\x00\x01\x05" + HUGE, "tag 5 has size 4294967295, 0 bytes left"),
    (b"\x01\x02\x00" + write_uvarint(0x8001) + bytes(0x8000), "string length 32768 is over 32767"),
])
def test_hostile_count_or_length_in_a_metadata_value_is_an_error(value, error):
    rec = decode_metadata(value)
    assert rec.data == {} and error in rec.error, rec.error


def test_hostile_count_or_length_in_a_control_value_is_an_error():
    key, voters = encode_control("KRAFT_VOTERS", {"version": 0, "voters": []})
    rec = decode_control(key, voters[:2] + HUGE)
    assert "array of 4294967294 needs at least" in rec.error and rec.data is None


def _claim_1_mib(layer: str) -> str:
    """The error for a 1 MiB length or count in a few hundred bytes, at one layer."""
    claim = 1 << 20
    if layer == "string":
        return decode_metadata(b"\x01\x02\x00" + write_uvarint(claim + 1) + b"x" * 100).error
    if layer == "array":
        return decode_metadata(b"\x01\x03\x00" + bytes(20) + write_uvarint(claim + 1) + bytes(100)).error
    blob = bytearray(_batch([b"x" * 20]))
    if layer == "record value":
        blob[66:67] = write_varint(claim)  # the value length varint of the only record
        struct.pack_into(">i", blob, 8, len(blob) - 12)
        return decode_batch(bytes(blob), verify_crc=False).error
    struct.pack_into(">i", blob, 8, claim)  # the batch length
    return _walk(bytes(blob))[0].detail


@pytest.mark.parametrize("layer", ["string", "array", "record value", "batch length"])
def test_a_1_mib_hostile_length_fails_without_allocating_it(layer):
    _claim_1_mib(layer)  # the first call generates and compiles the record's decoder
    (error, peak), spent = _cpu(_peak, lambda: _claim_1_mib(layer))
    assert error and spent < 0.5
    assert peak < 16 * 1024, f"{layer}: {peak} bytes held before failing ({error})"


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([TOPIC, encode_metadata("PARTITION_RECORD", 2, {"replicas": [1, 2], "isr": [1]}),
                        encode_metadata("REGISTER_BROKER_RECORD", 3, {"endPoints": [{"name": "PLAINTEXT"}]})]),
       st.sampled_from([HUGE, write_uvarint(1 << 31), b"\xff" * 5 + b"\x01", write_uvarint(0x8001), b"\x00"]),
       st.integers(0, 200), st.booleans())
def test_any_hostile_varint_anywhere_in_a_value_is_reported_not_raised(value, hostile, at, replace):
    at = min(at, len(value))
    mutated = value[:at] + hostile + value[at + replace:]
    rec = decode_metadata(mutated)
    assert rec.error is not None or rec.data is not None


# --- varint overflow and negative sizes -------------------------------------------------------------


@pytest.mark.parametrize(("read", "blob", "message"), [
    (read_varint, b"\xff" * 6, "varint longer than 5 bytes"),
    (read_varint, b"\xff\xff\xff\xff\x7f", "does not fit in 32 bits"),
    (read_varlong, b"\xff" * 11, "varlong longer than 10 bytes"),
    (read_varlong, b"\xff" * 9 + b"\x7f", "does not fit in 64 bits"),
    (read_uvarint, b"\x80" * 5 + b"\x01", "unsigned varint longer than 5 bytes"),
    (read_uvarint, b"\xff\xff\xff\xff\x1f", "does not fit in 32 bits"),
    (read_varint, b"\x80\x80", "runs past the end"),
])
def test_varint_overflow_is_a_typed_error(read, blob, message):
    with pytest.raises(CorruptRecordError, match=message) as e:
        read(blob, 0)
    assert isinstance(e.value, KraftlogError)


def test_varint_overflow_in_a_record_and_a_value_is_reported():
    blob = bytearray(_batch([TOPIC]))
    blob[61:62] = b"\xff" * 6  # the record's length varint, now 6 bytes long
    struct.pack_into(">i", blob, 8, len(blob) - 12)
    assert "varint longer than 5 bytes" in decode_batch(bytes(blob), verify_crc=False).error
    rec = decode_metadata(b"\x01" + b"\xff" * 6 + b"\x00")
    assert rec.error == "MetadataParseException: type: unsigned varint longer than 5 bytes at byte 1"


def _set(blob: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(blob)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


@pytest.mark.parametrize(("where", "expect"), [
    ("batchLength", "batchLength -1 is outside"),
    ("recordsCount", "CorruptRecordException: invalid record count -1"),
    ("record length", "has invalid size -1"),
    ("key length", "negative key length -2"),
    ("value length", "negative value length -5"),
    ("header count", "negative header count -1"),
])
def test_negative_sizes_are_reported(where, expect):
    blob = _batch([b"value"])
    if where == "batchLength":
        [item] = _walk(_set(blob, 8, ">i", -1))
        assert isinstance(item, Region) and item.reason == "corrupt" and expect in item.detail
        return
    patch = {"recordsCount": (57, b"\xff\xff\xff\xff"), "record length": (61, write_varint(-1)),
             "key length": (65, write_varint(-2)), "value length": (66, write_varint(-5)),
             "header count": (72, write_varint(-1))}[where]
    out = bytearray(blob)
    out[patch[0] : patch[0] + len(patch[1])] = patch[1]
    batch = decode_batch(bytes(out), verify_crc=False)
    assert batch.records == [] and expect in batch.error, batch.error


# --- no quadratic paths -------------------------------------------------------------------------------


def _header_flood(size: int, step: int = 61) -> bytes:
    """Bytes where every ``step`` bytes a plausible header claims the rest of the file, CRC wrong."""
    buf = bytearray(size)
    buf[16] = 7  # not a batch at 0: the reader resynchronises over the flood
    for at in range(step, size - 61, step):
        HEADER.pack_into(buf, at, 0, size - at - 12, 0, 2, 0, 0, 0, 0, 0, -1, -1, -1, 1)
    return bytes(buf)


def test_resynchronising_over_a_header_flood_is_linear(monkeypatch):
    checked = []
    crc_of = reader.crc_of
    monkeypatch.setattr(reader, "crc_of", lambda blob: checked.append(len(blob)) or crc_of(blob))
    for size in (64 << 10, 1 << 20):
        checked.clear()
        data = _header_flood(size)
        [region], spent = _cpu(_walk, data)
        assert region.reason == "corrupt" and region.length == size
        assert sum(checked) <= 32 * size + DEFAULT_MAX_BATCH_BYTES  # it was ~8600 x size before
        assert spent < 2


def test_a_batch_after_corrupt_bytes_is_still_found():
    good = _batch([TOPIC], base_offset=5)
    items = _walk(b"\x00" * 5000 + _header_flood(4096)[:-61] + good)
    assert isinstance(items[-1], Batch) and items[-1].base_offset == 5
