"""Varints of the two flavours Kafka uses.

The record layer uses zig-zag (signed) varints of at most 5 bytes and varlongs of at most 10;
the message-schema layer uses plain unsigned LEB128. Mixing them up is the classic bug, so each
reader has its own name. Readers take ``(buf, pos)`` and return ``(value, new_pos)``.
"""

from construct import VarInt, ZigZag

from kraftlog.wire.errors import CorruptRecordError

#: construct declarations, used by the batch and record layouts in ``batch.py``.
UnsignedVarInt = VarInt
ZigZagVarInt = ZigZag


def _read(buf: bytes, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise CorruptRecordError(f"{what} runs past the end of the data at byte {pos}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise CorruptRecordError(f"{what} longer than {max_bytes} bytes at byte {pos - max_bytes}")


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned varint of the message-schema layer (fits in 32 bits: at most 5 bytes)."""
    b = buf[pos] if pos < len(buf) else 0x80
    if b < 0x80:
        return b, pos + 1
    value, pos = _read(buf, pos, 5, "unsigned varint")
    if value > 0xFFFFFFFF:
        raise CorruptRecordError(f"unsigned varint {value} does not fit in 32 bits")
    return value, pos


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varint (int32) of the record layer."""
    b = buf[pos] if pos < len(buf) else 0x80
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    c = buf[pos + 1] if pos + 1 < len(buf) else 0x80
    if c < 0x80:  # two bytes: what ``_read`` reads, without its loop
        value = (b & 0x7F) | c << 7
        return (value >> 1) ^ -(value & 1), pos + 2
    value, pos = _read(buf, pos, 5, "varint")
    if value > 0xFFFFFFFF:
        raise CorruptRecordError(f"varint {value} does not fit in 32 bits")
    return (value >> 1) ^ -(value & 1), pos


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varlong (int64) of the record layer."""
    b = buf[pos] if pos < len(buf) else 0x80
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    c = buf[pos + 1] if pos + 1 < len(buf) else 0x80
    if c < 0x80:  # two bytes: what ``_read`` reads, without its loop
        value = (b & 0x7F) | c << 7
        return (value >> 1) ^ -(value & 1), pos + 2
    value, pos = _read(buf, pos, 10, "varlong")
    if value > 0xFFFFFFFFFFFFFFFF:
        raise CorruptRecordError(f"varlong {value} does not fit in 64 bits")
    return (value >> 1) ^ -(value & 1), pos


def write_uvarint(n: int) -> bytes:
    if n < 0:
        raise ValueError("unsigned varint cannot be negative")
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def write_varint(n: int) -> bytes:
    """Zig-zag encode an int32."""
    return write_uvarint(((n << 1) ^ (n >> 31)) & 0xFFFFFFFF)


def write_varlong(n: int) -> bytes:
    """Zig-zag encode an int64."""
    return write_uvarint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)
