"""The v2 record batch (magic 2) and its records, declared in construct beside reference §1.

The construct declarations below are the single source of truth for the layouts. The hot path
does not interpret them per record: the fixed-width header is read with a ``struct`` format
derived from ``BatchHeader``, and records are read by a straight-line varint loop that
``tests/test_wire.py`` checks against ``RecordLayout`` on random input.
"""

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from construct import Array, Bytes, If, Int8sb, Int16sb, Int32sb, Int32ub, Int64sb, Struct, this

from kraftlog.wire import codecs
from kraftlog.wire.crc import crc32c
from kraftlog.wire.errors import CorruptBatchError, CorruptRecordError
from kraftlog.wire.varint import (
    ZigZagVarInt,
    read_varint,
    read_varlong,
    write_varint,
    write_varlong,
)

# --- Layouts (reference §1.1, §1.4) ---------------------------------------------------------

BatchHeader = Struct(
    "baseOffset" / Int64sb,
    "batchLength" / Int32sb,  # bytes after this field; the batch is batchLength + 12 bytes
    "partitionLeaderEpoch" / Int32sb,  # the Raft epoch in KRaft; not covered by the CRC
    "magic" / Int8sb,
    "crc" / Int32ub,  # CRC-32C over attributes..end
    "attributes" / Int16sb,
    "lastOffsetDelta" / Int32sb,
    "baseTimestamp" / Int64sb,  # the delete horizon when attributes bit 6 is set
    "maxTimestamp" / Int64sb,
    "producerId" / Int64sb,
    "producerEpoch" / Int16sb,
    "baseSequence" / Int32sb,
    "recordsCount" / Int32sb,
)

HeaderLayout = Struct(
    "keyLength" / ZigZagVarInt,
    "key" / Bytes(this.keyLength),
    "valueLength" / ZigZagVarInt,
    "value" / If(this.valueLength >= 0, Bytes(this.valueLength)),
)

RecordLayout = Struct(
    "length" / ZigZagVarInt,  # bytes after this field
    "attributes" / Int8sb,
    "timestampDelta" / ZigZagVarInt,
    "offsetDelta" / ZigZagVarInt,
    "keyLength" / ZigZagVarInt,  # -1 = null key
    "key" / If(this.keyLength >= 0, Bytes(this.keyLength)),
    "valueLength" / ZigZagVarInt,  # -1 = null value
    "value" / If(this.valueLength >= 0, Bytes(this.valueLength)),
    "headerCount" / ZigZagVarInt,
    "headers" / Array(this.headerCount, HeaderLayout),
)


def _struct_of(layout: Struct) -> struct.Struct:
    """A struct format for a layout made only of fixed-width big-endian fields."""
    return struct.Struct(">" + "".join(sc.subcon.fmtstr.lstrip("<>=!") for sc in layout.subcons))


HEADER = _struct_of(BatchHeader)
_LENGTH = struct.Struct(">i")
HEADER_SIZE = HEADER.size  # 61 = RECORD_BATCH_OVERHEAD
LOG_OVERHEAD = 12  # baseOffset + batchLength
HEADER_SIZE_UP_TO_MAGIC = 17
CRC_START = 21  # the CRC covers [21, 12 + batchLength)
assert HEADER_SIZE == 61

# Attribute bits (reference §1.2)
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

NO_SEQUENCE = -1
_INT32_MAX = 2**31 - 1


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's sequence arithmetic: wraps at Integer.MAX_VALUE back to 0."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


# --- Decoded values ------------------------------------------------------------------------


@dataclass(slots=True)
class Record:
    """One record of a batch; ``offset``/``timestamp`` are absolute, deltas kept for re-encoding."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[bytes, bytes | None], ...] = ()
    attributes: int = 0
    timestamp_delta: int = 0
    offset_delta: int = 0
    size: int = 0  # bytes on the wire, length varint included


def _header_field(i: int) -> property:
    return property(lambda batch: batch.header[i], doc=f"header field {i} of ``BatchHeader``")


class Batch:
    """A v2 batch as it lies in the file, with what decoding it found.

    The 13 header fields stay in the tuple ``struct`` unpacked them into and are read through
    properties: a quiet metadata log is millions of one-record batches, and building a wide
    object per batch would cost more than decoding it. ``is_control`` and ``is_valid`` (the
    ``crc_valid`` slot under a second name), asked of every batch by every reader, are slots.
    """

    __slots__ = ("position", "header", "crc_valid", "records", "error", "is_control")

    def __init__(self, position: int, header: tuple, crc_valid: bool = True,
                 records: list[Record] | None = None, error: str | None = None) -> None:
        self.position = position
        self.header = header
        self.crc_valid = crc_valid
        self.records = [] if records is None else records
        self.error = error  # why the records could not all be read (framing, codec)
        self.is_control = header[5] & CONTROL_BIT != 0

    def __repr__(self) -> str:
        return (f"Batch(position={self.position}, baseOffset={self.base_offset}, count={self.records_count}, "
                f"valid={self.crc_valid}, error={self.error!r})")

    base_offset = _header_field(0)
    batch_length = _header_field(1)
    partition_leader_epoch = _header_field(2)
    magic = _header_field(3)
    crc = _header_field(4)
    attributes = _header_field(5)
    last_offset_delta = _header_field(6)
    base_timestamp = _header_field(7)
    max_timestamp = _header_field(8)
    producer_id = _header_field(9)
    producer_epoch = _header_field(10)
    base_sequence = _header_field(11)
    records_count = _header_field(12)

    # the properties below read ``header`` directly: they are called per batch on every path

    @property
    def size(self) -> int:
        return self.header[1] + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        h = self.header
        return h[0] + h[6]

    @property
    def compression(self) -> int:
        return self.header[5] & COMPRESSION_MASK

    @property
    def compression_name(self) -> str:
        return codecs.CODEC_NAMES.get(self.compression, f"unknown({self.compression})")

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.header[5] & TIMESTAMP_TYPE_BIT else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return self.header[5] & TRANSACTIONAL_BIT != 0

    @property
    def delete_horizon_ms(self) -> int | None:
        h = self.header
        return h[7] if h[5] & DELETE_HORIZON_BIT else None

    @property
    def last_sequence(self) -> int:
        h = self.header
        return NO_SEQUENCE if h[11] == NO_SEQUENCE else increment_sequence(h[11], h[6])

    def record_sequence(self, record: Record) -> int:
        base = self.header[11]
        return NO_SEQUENCE if base == NO_SEQUENCE else increment_sequence(base, record.offset_delta)


Batch.is_valid = Batch.crc_valid  # whether the CRC holds: the slot's own descriptor, as cheap to read


# --- Decoding ------------------------------------------------------------------------------


def crc_of(batch_bytes: bytes) -> int:
    return crc32c(memoryview(batch_bytes)[CRC_START:])


def decode_batch(
    batch_bytes: bytes,
    position: int = 0,
    *,
    max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED,
    verify_crc: bool = True,
) -> Batch:
    """Decode one whole v2 batch (exactly ``batchLength + 12`` bytes)."""
    if len(batch_bytes) < HEADER_SIZE:
        raise CorruptBatchError(f"batch of {len(batch_bytes)} bytes is shorter than its 61-byte header")
    (length,) = _LENGTH.unpack_from(batch_bytes, 8)
    if length + LOG_OVERHEAD != len(batch_bytes):
        raise CorruptBatchError(f"batchLength {length} does not match {len(batch_bytes)} bytes")
    return decode_batch_at(batch_bytes, 0, position, max_decompressed, verify_crc)


def decode_batch_at(
    buf: bytes,
    i: int,
    position: int,
    max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED,
    verify_crc: bool = True,
    records: bool = True,
    header: tuple | None = None,
) -> Batch:
    """Decode the batch at ``buf[i:]``, whose header the caller has found sane and whole.

    A CRC mismatch marks the batch invalid but its records are still decoded while the framing
    holds; a framing or codec failure is kept in ``Batch.error`` with the records read before it.
    With ``records=False`` only the header and CRC are read (directory scans). ``header`` is
    ``HEADER.unpack_from(buf, i)`` when the caller has it already.
    """
    if header is None:
        header = HEADER.unpack_from(buf, i)
    end = i + header[1] + LOG_OVERHEAD
    # a small slice copies faster than a memoryview is made; large batches are not copied
    crc_valid = not verify_crc or crc32c(
        buf[i + CRC_START : end] if end - i < 4096 else memoryview(buf)[i + CRC_START : end]) == header[4]
    if not records:
        return Batch(position, header, crc_valid)
    count = header[12]
    attributes = header[5]
    payload = buf[i + HEADER_SIZE : end]
    if count == 1 and not attributes & COMPRESSION_MASK:
        parsed = _SMALL_PAYLOADS.get(payload)
        if parsed is not None:  # a single-record payload seen before: no parse
            key, value, headers, rattrs, ts_delta, offset_delta, rsize = parsed
            ts = header[8] if attributes & TIMESTAMP_TYPE_BIT else header[7] + ts_delta
            return Batch(position, header, crc_valid, [Record(header[0] + offset_delta, ts, key, value, headers,
                                                              rattrs, ts_delta, offset_delta, rsize)])
    batch = Batch(position, header, crc_valid)
    if count < 0:
        batch.error = f"CorruptRecordException: invalid record count {count}"
        return batch
    if attributes & COMPRESSION_MASK:
        try:
            payload = codecs.decompress(attributes & COMPRESSION_MASK, payload, max_decompressed)
        except codecs.CompressionError as e:
            batch.error = f"{type(e).__name__}: {e}"
            return batch
    try:
        parsed = _SMALL_PAYLOADS.get(payload) if count == 1 else None
        if parsed is None:
            _decode_records(batch, payload)
            if count == 1 and len(payload) <= _SMALL_PAYLOAD_MAX and len(_SMALL_PAYLOADS) < 4096:
                r = batch.records[0]
                _SMALL_PAYLOADS[payload] = (r.key, r.value, r.headers, r.attributes, r.timestamp_delta,
                                            r.offset_delta, r.size)
        else:
            key, value, headers, rattrs, ts_delta, offset_delta, rsize = parsed
            ts = header[8] if attributes & TIMESTAMP_TYPE_BIT else header[7] + ts_delta
            batch.records.append(Record(header[0] + offset_delta, ts, key, value, headers,
                                        rattrs, ts_delta, offset_delta, rsize))
    except CorruptRecordError as e:
        batch.error = f"CorruptRecordException: {e}"
    except IndexError:  # a varint or field ran past the end of the records
        batch.error = f"CorruptRecordException: record {len(batch.records)} runs past the end of the batch"
    return batch


def repeats_of(template: Batch, positions: Iterable[int], headers: Iterable[tuple]) -> Iterator[Batch]:
    """Batches whose bytes are ``template``'s but for the header fields the CRC does not cover or
    that ``headers`` give (offsets, timestamps, epochs, producer fields, CRC), and whose CRCs the
    caller found to hold: ``template``'s one record at each batch's own offset and timestamp, as
    ``decode_batch_at`` reads them from the same bytes (a quiet log's runs of NoOp batches).

    Each object is made by ``object.__new__`` and its slots set here, not by a class call: the
    call into a Python ``__init__`` costs as much again as the rest of the batch.
    ``tests/test_wire.py`` checks every slot of both classes against ``decode_batch_at``.
    """
    new = object.__new__
    (r,) = template.records
    key, value, rh, ra, td, od, rs = r.key, r.value, r.headers, r.attributes, r.timestamp_delta, r.offset_delta, r.size
    ts_at, td_add = (8, 0) if template.header[5] & TIMESTAMP_TYPE_BIT else (7, td)
    control = template.is_control
    for p, hh in zip(positions, headers, strict=True):
        rec = new(Record)
        rec.offset = hh[0] + od if od else hh[0]
        rec.timestamp = hh[ts_at] + td_add if td_add else hh[ts_at]
        rec.key = key
        rec.value = value
        rec.headers = rh
        rec.attributes = ra
        rec.timestamp_delta = td
        rec.offset_delta = od
        rec.size = rs
        b = new(Batch)
        b.position = p
        b.header = hh
        b.crc_valid = True
        b.records = [rec]
        b.error = None
        b.is_control = control
        yield b


#: Single-record payloads seen before (a quiet metadata log is mostly identical NoOp batches):
#: decoded once, then looked up. Bounded in entry count and size.
_SMALL_PAYLOADS: dict[bytes, tuple] = {}
_SMALL_PAYLOAD_MAX = 48


class _PlainHeads(dict):
    """A plain record's first seven bytes -> (its size, attributes, timestamp delta, offset delta, where
    its value starts), False for heads that are not plain (``_plain_head`` says which): a metadata log's
    records share a few hundred heads, so each is checked once. Bounded."""

    def __missing__(self, head: bytes) -> tuple | bool:
        if len(self) >= _PLAIN_HEADS_MAX:
            self.clear()
        out = self[head] = _plain_head(head)
        return out


_PLAIN_HEADS = _PlainHeads()
_PLAIN_HEADS_MAX = 4096


def _plain_head(head: bytes) -> tuple | bool:
    """What the first seven bytes of a record say when they make it plain: a length, attributes >= 0,
    timestamp delta and value length of one-byte varints, an offset delta of one or two, a null key,
    and a length that is the value's plus the rest (what a metadata log holds; its header count, a
    zero byte, is the one byte after the value that the caller checks). False for anything else."""
    if len(head) != 7:
        return False
    n, attributes, t, o, x, y, z = head
    two = o > 0x7F
    if not two:
        plain = x == 1 and not (n | attributes | t | y) & 0x80 and not (n | y) & 1 and n >> 1 == 6 + (y >> 1)
    else:  # an offset delta of two bytes: a batch of more than 63 records
        plain = y == 1 and not (n | attributes | t | x | z) & 0x80 and not (n | z) & 1 and n >> 1 == 7 + (z >> 1)
        o = (o & 0x7F) | x << 7
    return plain and (1 + (n >> 1), attributes, (t >> 1) ^ -(t & 1), (o >> 1) ^ -(o & 1), 6 + two)


def _decode_records(batch: Batch, buf: bytes) -> None:
    """The straight-line reader of ``RecordLayout``, appending to ``batch.records``.

    A plain record (see ``_plain_head``; its head looked up, not parsed) is made from its head's
    fields and its value, without a call into ``Record.__init__``; anything else, and a plain-looking
    record that runs past the batch or whose header count is not 0, is read field by field, which says
    what is wrong. ``tests/test_wire.py`` checks both against ``RecordLayout``."""
    records = batch.records
    append = records.append
    base_offset = batch.base_offset
    log_append = batch.attributes & TIMESTAMP_TYPE_BIT
    base_ts = batch.base_timestamp
    max_ts = batch.max_timestamp
    end = len(buf)
    pos = 0
    new = object.__new__
    heads = _PLAIN_HEADS
    for i in range(batch.records_count):
        h = heads[buf[pos : pos + 7]]
        if h:
            size, attributes, ts_delta, offset_delta, at = h
            body_end = pos + size
            if body_end <= end and buf[body_end - 1] == 0:
                r = new(Record)
                r.offset = base_offset + offset_delta
                r.timestamp = max_ts if log_append else base_ts + ts_delta
                r.key = None
                r.value = buf[pos + at : body_end - 1]
                r.headers = ()
                r.attributes = attributes
                r.timestamp_delta = ts_delta
                r.offset_delta = offset_delta
                r.size = size
                append(r)
                pos = body_end
                continue
        if pos >= end:
            raise CorruptRecordError(
                f"batch declares {batch.records_count} records but its data ends after {i}"
            )
        start = pos
        b = buf[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            length, pos = read_varint(buf, pos)
        body_end = pos + length
        if length < 6 or body_end > end:
            raise CorruptRecordError(f"record {i} at byte {start} has invalid size {length}")
        attributes = buf[pos]
        if attributes > 127:
            attributes -= 256
        pos += 1
        b, c = buf[pos], buf[pos + 1]  # inside the body: it has 5 more bytes at least
        if b < 0x80 and c < 0x80:  # one-byte timestamp and offset deltas: the usual
            ts_delta, offset_delta = (b >> 1) ^ -(b & 1), (c >> 1) ^ -(c & 1)
            pos += 2
        else:
            ts_delta, pos = read_varlong(buf, pos)
            offset_delta, pos = read_varint(buf, pos)
        b = buf[pos]
        if b == 1:  # null key: the common case in metadata logs
            key = None
            pos += 1
        else:
            key, pos = _read_blob(buf, pos, body_end, i, "key")
        b = buf[pos] if pos < body_end else 0x80
        if b < 0x80 and not b & 1 and pos + 1 + (b >> 1) <= body_end:  # a short value: what _read_blob reads
            value = buf[pos + 1 : pos + 1 + (b >> 1)]
            pos += 1 + (b >> 1)
        else:
            value, pos = _read_blob(buf, pos, body_end, i, "value")
        if pos >= body_end:
            raise CorruptRecordError(f"record {i} ends before its header count")
        b = buf[pos]
        if b == 0:
            headers = ()
            pos += 1
        else:
            headers, pos = _read_headers(buf, pos, body_end, i)
        if pos != body_end:
            raise CorruptRecordError(
                f"record {i} at byte {start}: expected to read {length} bytes in record payload, "
                f"but instead read {pos - (body_end - length)}"
            )
        append(
            Record(
                base_offset + offset_delta,
                max_ts if log_append else base_ts + ts_delta,
                key,
                value,
                headers,
                attributes,
                ts_delta,
                offset_delta,
                body_end - start,
            )
        )
    if pos != end:
        raise CorruptRecordError(
            f"incorrect declared batch size: {end - pos} bytes remain after {batch.records_count} records"
        )


def _read_blob(buf: bytes, pos: int, body_end: int, i: int, what: str) -> tuple[bytes | None, int]:
    """A varint length (-1 = null) and that many bytes, inside record ``i``'s body."""
    n, pos = read_varint(buf, pos)
    if n < 0:
        if n != -1:
            raise CorruptRecordError(f"record {i} has negative {what} length {n}")
        return None, pos
    if pos + n > body_end:
        raise CorruptRecordError(f"record {i} {what} of {n} bytes overruns the record")
    return buf[pos : pos + n], pos + n


def _read_headers(buf: bytes, pos: int, body_end: int, i: int) -> tuple[tuple, int]:
    count, pos = read_varint(buf, pos)
    if count < 0:
        raise CorruptRecordError(f"record {i} has negative header count {count}")
    if count > body_end - pos:
        raise CorruptRecordError(f"record {i} declares {count} headers in {body_end - pos} bytes")
    headers = []
    for _ in range(count):
        klen, pos = read_varint(buf, pos)
        if klen < 0 or pos + klen > body_end:
            raise CorruptRecordError(f"record {i} has a header key of invalid length {klen}")
        hkey = buf[pos : pos + klen]
        pos += klen
        vlen, pos = read_varint(buf, pos)
        if vlen < -1 or pos + vlen > body_end:
            raise CorruptRecordError(f"record {i} has a header value of invalid length {vlen}")
        if vlen == -1:
            hval = None
        else:
            hval = buf[pos : pos + vlen]
            pos += vlen
        headers.append((hkey, hval))
    return tuple(headers), pos


# --- Encoding ------------------------------------------------------------------------------


def encode_record(record: Record) -> bytes:
    """One record's bytes (``RecordLayout``), length prefix included."""
    parts = [
        bytes((record.attributes & 0xFF,)),
        write_varlong(record.timestamp_delta),
        write_varint(record.offset_delta),
    ]
    for blob in (record.key, record.value):
        if blob is None:
            parts.append(b"\x01")
        else:
            parts.append(write_varint(len(blob)))
            parts.append(bytes(blob))
    parts.append(write_varint(len(record.headers)))
    for hkey, hval in record.headers:
        parts.append(write_varint(len(hkey)))
        parts.append(bytes(hkey))
        if hval is None:
            parts.append(b"\x01")
        else:
            parts.append(write_varint(len(hval)))
            parts.append(bytes(hval))
    body = b"".join(parts)
    return write_varint(len(body)) + body


def encode_batch(
    records: list[Record],
    *,
    base_offset: int,
    base_timestamp: int,
    max_timestamp: int | None = None,
    partition_leader_epoch: int = 0,
    attributes: int = 0,
    last_offset_delta: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """Build a v2 batch; the CRC and lengths are computed, compression follows ``attributes``."""
    payload = b"".join(encode_record(r) for r in records)
    payload = codecs.compress(attributes & COMPRESSION_MASK, payload)
    if last_offset_delta is None:
        last_offset_delta = max((r.offset_delta for r in records), default=0)
    if max_timestamp is None:
        max_timestamp = max((base_timestamp + r.timestamp_delta for r in records), default=base_timestamp)
    header = bytearray(
        HEADER.pack(
            base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(payload),
            partition_leader_epoch,
            2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    )
    body = bytes(header) + payload
    struct.pack_into(">I", header, 17, crc32c(body[CRC_START:]))
    return bytes(header) + payload


def reencode_batch(batch: Batch) -> bytes:
    """The bytes of a decoded batch written again from its fields (the round-trip check)."""
    return encode_batch(
        batch.records,
        base_offset=batch.base_offset,
        base_timestamp=batch.base_timestamp,
        max_timestamp=batch.max_timestamp,
        partition_leader_epoch=batch.partition_leader_epoch,
        attributes=batch.attributes,
        last_offset_delta=batch.last_offset_delta,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
    )
