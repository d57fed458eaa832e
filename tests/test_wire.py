"""The wire layer: varints, records and batches against construct's reading of the same layouts."""

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlog.wire import batch as batch_module
from kraftlog.wire import codecs
from kraftlog.wire.batch import (
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    HEADER,
    HEADER_SIZE,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    Batch,
    BatchHeader,
    Record,
    RecordLayout,
    decode_batch,
    encode_batch,
    encode_record,
    increment_sequence,
    reencode_batch,
    repeats_of,
)
from kraftlog.wire.crc import crc32c, crc32c_rows
from kraftlog.wire.errors import CorruptRecordError
from kraftlog.wire.varint import (
    read_uvarint,
    read_varint,
    read_varlong,
    write_uvarint,
    write_varint,
    write_varlong,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


@given(INT32)
def test_varint_round_trip(n):
    assert read_varint(write_varint(n), 0) == (n, len(write_varint(n)))


@given(INT64)
def test_varlong_round_trip(n):
    assert read_varlong(write_varlong(n), 0) == (n, len(write_varlong(n)))


@given(st.integers(0, 2**32 - 1))
def test_uvarint_round_trip(n):
    assert read_uvarint(write_uvarint(n), 0) == (n, len(write_uvarint(n)))


@pytest.mark.parametrize(
    "n,encoded",
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (63, b"\x7e"), (-64, b"\x7f"), (64, b"\x80\x01"),
     (2**31 - 1, b"\xfe\xff\xff\xff\x0f"), (-(2**31), b"\xff\xff\xff\xff\x0f")],
)
def test_zigzag_known_encodings(n, encoded):
    assert write_varint(n) == encoded
    assert read_varint(encoded, 0) == (n, len(encoded))


def test_varint_limits_are_errors():
    with pytest.raises(CorruptRecordError, match="longer than 5 bytes"):
        read_varint(b"\xff" * 6, 0)
    with pytest.raises(CorruptRecordError, match="longer than 10 bytes"):
        read_varlong(b"\xff" * 11, 0)
    with pytest.raises(CorruptRecordError, match="past the end"):
        read_varint(b"\xff\xff", 0)
    with pytest.raises(CorruptRecordError, match="does not fit in 32 bits"):
        read_uvarint(b"\xff\xff\xff\xff\x7f", 0)


blobs = st.none() | st.binary(max_size=40)
records = st.builds(
    Record,
    offset=st.just(0),
    timestamp=st.just(0),
    key=blobs,
    value=blobs,
    headers=st.lists(st.tuples(st.binary(max_size=10), blobs), max_size=3).map(tuple),
    attributes=st.just(0),
    timestamp_delta=INT64,
    offset_delta=st.integers(0, 2**31 - 1),
)


@given(records)
def test_record_encoding_agrees_with_construct_layout(r):
    parsed = RecordLayout.parse(encode_record(r))
    assert (parsed.timestampDelta, parsed.offsetDelta, parsed.key, parsed.value) == (
        r.timestamp_delta, r.offset_delta, r.key, r.value)
    assert tuple((h.key, h.value) for h in parsed.headers) == r.headers
    assert RecordLayout.build(parsed) == encode_record(r)


@settings(max_examples=150)
@given(
    st.lists(records, min_size=0, max_size=6),
    st.sampled_from(sorted(codecs.CODEC_NAMES)),
    st.sampled_from([0, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, CONTROL_BIT, DELETE_HORIZON_BIT]),
    INT64,
    st.integers(0, 2**40),
    st.integers(-1, 2**31 - 1),
)
def test_batch_encode_decode_identity(recs, codec, flag, base_ts, base_offset, epoch):
    recs = [Record(0, 0, r.key, r.value, r.headers, 0, r.timestamp_delta, i) for i, r in enumerate(recs)]
    blob = encode_batch(recs, base_offset=base_offset, base_timestamp=base_ts, max_timestamp=base_ts,
                        partition_leader_epoch=epoch, attributes=codec | flag)
    b = decode_batch(blob, 0)
    assert b.error is None and b.is_valid
    assert (b.base_offset, b.partition_leader_epoch, b.compression, b.records_count) == (
        base_offset, epoch, codec, len(recs))
    assert [(r.key, r.value, r.headers, r.offset_delta, r.timestamp_delta) for r in b.records] == [
        (r.key, r.value, r.headers, r.offset_delta, r.timestamp_delta) for r in recs]
    assert [r.offset for r in b.records] == [base_offset + i for i in range(len(recs))]
    expected_ts = [base_ts if flag == TIMESTAMP_TYPE_BIT else base_ts + r.timestamp_delta for r in recs]
    assert [r.timestamp for r in b.records] == expected_ts
    if codec == codecs.NONE:
        assert reencode_batch(b) == blob
    assert reencode_batch(b) == encode_batch(
        recs, base_offset=base_offset, base_timestamp=base_ts, max_timestamp=base_ts,
        partition_leader_epoch=epoch, attributes=codec | flag)


def _slots(batch: Batch) -> dict:
    """Every slot of a batch and of its records (an unset slot raises), and what its properties give."""
    return {**{k: getattr(batch, k) for k in Batch.__slots__}, "is_valid": batch.is_valid,
            "records": [(r, *(getattr(r, k) for k in Record.__slots__)) for r in batch.records]}


@settings(max_examples=100)
@given(records, st.sampled_from([0, TIMESTAMP_TYPE_BIT, CONTROL_BIT, TRANSACTIONAL_BIT]),
       st.lists(st.tuples(st.integers(0, 2**40), INT64, INT64, st.integers(-1, 2**31 - 1)), min_size=1, max_size=5))
def test_repeats_of_a_batch_are_what_decode_batch_reads(r, flag, headers):
    """The batches of a run, made slot by slot, equal those ``decode_batch`` reads from the same bytes."""
    blobs = [encode_batch([r], base_offset=base, base_timestamp=ts, max_timestamp=max_ts,
                          partition_leader_epoch=epoch, attributes=flag) for base, ts, max_ts, epoch in headers]
    template = decode_batch(blobs[0])
    positions = [100 * k for k in range(len(blobs))]
    made = list(repeats_of(template, positions, [HEADER.unpack_from(b) for b in blobs]))
    assert [_slots(b) for b in made] == [_slots(decode_batch(b, p)) for b, p in zip(blobs, positions, strict=True)]


def _field_by_field(head: bytes) -> bool:
    """What ``_plain_head`` would say if no head were plain: every record read field by field."""
    return False


shaped = st.builds(  # records of a metadata log's shape, and near it
    Record, offset=st.just(0), timestamp=st.just(0), key=st.none() | st.binary(max_size=2),
    value=st.none() | st.binary(max_size=70), headers=st.just(()) | st.just(((b"h", None),)),
    attributes=st.sampled_from([0, 0, 1, 127, -128, -1]), timestamp_delta=st.integers(-100, 100),
    offset_delta=st.integers(0, 70) | st.integers(0, 20_000))


@settings(max_examples=300)
@given(st.lists(shaped, min_size=1, max_size=12), st.sampled_from([0, TIMESTAMP_TYPE_BIT]),
       st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=3))
def test_plain_records_read_as_field_by_field_even_when_damaged(recs, flag, damage):
    """Records of a metadata log's shape and near it (offset deltas of one, two and three bytes, keys,
    headers, negative attributes), whole and with bytes overwritten: the plain path of
    ``_decode_records`` gives what reading every record field by field gives, records, slots and error
    alike (the CRC is not checked, so the damage reaches the records)."""
    blob = bytearray(encode_batch(recs, base_offset=7, base_timestamp=1000, max_timestamp=2000, attributes=flag))
    for at, byte in damage:
        blob[HEADER_SIZE + at % (len(blob) - HEADER_SIZE)] = byte
    plain = decode_batch(bytes(blob), verify_crc=False)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(batch_module, "_plain_head", _field_by_field)
        m.setattr(batch_module, "_PLAIN_HEADS", batch_module._PlainHeads())
        general = decode_batch(bytes(blob), verify_crc=False)
    assert _slots(plain) == _slots(general)
    if not damage:
        assert plain.error is None and [(r.key, r.value, r.offset, r.timestamp_delta) for r in plain.records] == [
            (r.key, r.value, 7 + r.offset_delta, r.timestamp_delta) for r in recs]


def test_a_plain_record_whose_lengths_agree_but_overrun_the_batch_is_refused_as_field_by_field():
    """The last record's length and value length both grown by one byte: they agree with each other,
    and the record runs past the batch; the plain path must not read it (nor index past the end)."""
    blob = bytearray(_one_batch())
    last = len(blob) - 9  # the last record: length, attributes, deltas, key, value length, b"v2", headers
    assert blob[last] == 2 * 8 and blob[last + 5] == 2 * 2
    blob[last] += 2
    blob[last + 5] += 2
    b = decode_batch(bytes(blob), verify_crc=False)
    assert len(b.records) == 2 and b.error == "CorruptRecordException: record 2 at byte 18 has invalid size 9"


@pytest.mark.parametrize("offset_delta", [2, 100])
def test_a_record_whose_length_disagrees_with_its_value_length_is_refused_as_field_by_field(offset_delta):
    """The last record's length grown by one byte and a zero byte after it: it still ends in a zero (a
    header count's place) inside the batch, but its value length says the value ends a byte earlier.
    The plain path must not take the longer value (offset deltas of one and of two bytes)."""
    recs = [Record(0, 0, None, b"v%d" % i, (), 0, 0, i * offset_delta // 2) for i in range(3)]
    blob = bytearray(encode_batch(recs, base_offset=10, base_timestamp=1000))
    last = len(blob) - 9 - (offset_delta > 63)
    assert blob[last] == 2 * (8 + (offset_delta > 63))
    blob[last] += 2
    blob += b"\0"
    blob[8:12] = (len(blob) - 12).to_bytes(4, "big")
    b = decode_batch(bytes(blob), verify_crc=False)
    assert [r.value for r in b.records] == [b"v0", b"v1"]
    assert b.error == (f"CorruptRecordException: record 2 at byte 18: expected to read {9 + (offset_delta > 63)} "
                       f"bytes in record payload, but instead read {8 + (offset_delta > 63)}")


def _one_batch(**kw) -> bytes:
    recs = [Record(0, 0, None, b"v%d" % i, (), 0, 0, i) for i in range(3)]
    return encode_batch(recs, base_offset=10, base_timestamp=1000, **kw)


def test_header_layout_is_61_bytes_and_matches_construct():
    blob = _one_batch(partition_leader_epoch=7)
    h = BatchHeader.parse(blob[:HEADER_SIZE])
    b = decode_batch(blob)
    assert HEADER_SIZE == 61 and h.batchLength == len(blob) - 12
    assert (h.baseOffset, h.partitionLeaderEpoch, h.crc, h.recordsCount) == (10, 7, b.crc, 3)


@pytest.mark.parametrize("bit,prop,expected", [
    (TIMESTAMP_TYPE_BIT, "timestamp_type", "LogAppendTime"),
    (TRANSACTIONAL_BIT, "is_transactional", True),
    (CONTROL_BIT, "is_control", True),
    (DELETE_HORIZON_BIT, "delete_horizon_ms", 1000),
])
def test_each_attribute_bit(bit, prop, expected):
    plain, flagged = decode_batch(_one_batch()), decode_batch(_one_batch(attributes=bit))
    assert getattr(flagged, prop) == expected
    assert getattr(plain, prop) != expected


@pytest.mark.parametrize("codec", sorted(codecs.CODEC_NAMES))
def test_each_codec_decodes_and_names(codec):
    b = decode_batch(_one_batch(attributes=codec))
    assert b.compression_name == codecs.CODEC_NAMES[codec]
    assert [r.value for r in b.records] == [b"v0", b"v1", b"v2"]


@pytest.mark.parametrize("codec", [codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD])
def test_decompression_bomb_is_an_error_not_an_allocation(codec):
    bomb = [Record(0, 0, None, b"\0" * (1 << 20), (), 0, 0, i) for i in range(4)]
    blob = encode_batch(bomb, base_offset=0, base_timestamp=0, attributes=codec)
    assert len(blob) < 300_000
    b = decode_batch(blob, max_decompressed=1 << 20)
    assert b.records == [] and "inflates past the cap of 1048576 bytes" in b.error
    assert decode_batch(blob).error is None


def test_unknown_codec_and_garbage_payload():
    blob = bytearray(_one_batch(attributes=codecs.GZIP))
    blob[-5:] = b"\xff" * 5
    b = decode_batch(bytes(blob), verify_crc=False)
    assert b.error.startswith("CompressionError: gzip")
    blob = bytearray(_one_batch())
    struct.pack_into(">h", blob, 21, 5)
    assert decode_batch(bytes(blob)).error == "CompressionError: unknown compression codec id 5"


def test_crc_mismatch_keeps_records():
    blob = bytearray(_one_batch())
    blob[-2] ^= 0xFF  # last value byte (the final byte is the header count)
    b = decode_batch(bytes(blob))
    assert not b.is_valid and b.error is None and len(b.records) == 3


def test_record_count_larger_than_records_is_reported():
    blob = bytearray(_one_batch())
    struct.pack_into(">i", blob, 57, 5)
    b = decode_batch(bytes(blob), verify_crc=False)
    assert len(b.records) == 3 and "declares 5 records but its data ends after 3" in b.error


def test_record_length_overrun_is_reported():
    blob = bytearray(_one_batch())
    blob[61] = 0x7E  # first record claims 63 bytes
    b = decode_batch(bytes(blob), verify_crc=False)
    assert b.records == [] and "has invalid size 63" in b.error


def test_sequence_wraps_like_kafka():
    assert increment_sequence(5, 3) == 8
    assert increment_sequence(2**31 - 2, 3) == 1


def _rows_like_a_run(rng: np.random.Generator, n: int, m: int, varying: int) -> np.ndarray:
    rows = np.tile(rng.integers(0, 256, m, dtype=np.uint8), (n, 1))
    for column in rng.choice(m, varying, replace=False):
        rows[:, column] = rng.integers(0, 256, n)
    return rows


@pytest.mark.parametrize(("n", "m", "varying"), [(1, 1, 0), (1, 40, 0), (2, 1, 1), (64, 39, 4), (3000, 49, 9),
                                                  (50, 300, 48), (50, 300, 49), (20, 2000, 300)])
def test_crc32c_rows_is_crc32c_of_each_row(n, m, varying):
    rows = _rows_like_a_run(np.random.default_rng(n * m + varying), n, m, varying)
    assert crc32c_rows(rows).tolist() == [crc32c(r.tobytes()) for r in rows]


def test_crc32c_rows_reads_rows_in_place():
    """Rows as a strided view of a buffer (batches of one size, their CRC'd bytes), not copied."""
    rng = np.random.default_rng(7)
    step, start, n = 70, 21, 200
    buf = np.tile(rng.integers(0, 256, step, dtype=np.uint8), n)
    buf[rng.integers(0, buf.size, 300)] = rng.integers(0, 256, 300)
    rows = np.ndarray((n, step - start), np.uint8, buf, start, (step, 1))
    assert crc32c_rows(rows).tolist() == [crc32c(buf[i * step + start : (i + 1) * step].tobytes()) for i in range(n)]
    assert crc32c_rows(rows[:0]).tolist() == []


def test_plain_heads_are_bounded(monkeypatch):
    """Batches whose records have thousands of distinct heads (offset deltas of two bytes, many value
    lengths): the heads kept stay under ``_PLAIN_HEADS_MAX`` and the records are what they were."""
    monkeypatch.setattr(batch_module, "_PLAIN_HEADS", batch_module._PlainHeads())
    monkeypatch.setattr(batch_module, "_PLAIN_HEADS_MAX", 64)
    recs = [Record(0, 0, None, b"v" * (i % 40), (), 0, 0, i) for i in range(300)]
    b = decode_batch(encode_batch(recs, base_offset=5, base_timestamp=1000))
    assert b.error is None and [(r.value, r.offset) for r in b.records] == [(r.value, 5 + i) for i, r in enumerate(recs)]
    assert 0 < len(batch_module._PLAIN_HEADS) <= 64
