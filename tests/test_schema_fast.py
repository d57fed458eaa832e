"""A record's fast decoder (``codegen._build_fast``) against its general one, built from the same
declaration: the same data, end position and unknown tags, or the same error text, for Kafka's own
values (the real corpus, kafka-serde), for random values of every type and version, for tag sections
no writer writes (tags out of order, repeated, unknown) and for damaged values."""

import re
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_schema_properties import SETTINGS, damaged_values, metadata_records, ordered

from conftest import CORPUS
from kraftlog.files.reader import read_log_file
from kraftlog.schema import encode_metadata
from kraftlog.schema.codegen import DECODE_ERRORS, decoder, locate, uuid_raw
from kraftlog.schema.fields import UUID, Array, Compact, Fixed
from kraftlog.schema.metadata import BY_API_KEY
from kraftlog.schema.records import _read_frame, _Rejected
from kraftlog.wire.batch import Batch
from kraftlog.wire.varint import read_uvarint, write_uvarint


def _outcome(fn, value: bytes, pos: int) -> tuple:
    unk: list = []
    try:
        data, end = fn(value, pos, unk)
    except DECODE_ERRORS as exc:
        return "error", type(exc).__name__, locate(exc)
    return ordered(data), end, unk


def _both(value: bytes) -> tuple[tuple, tuple] | None:
    """(fast outcome, general outcome) of a value whose frame names a known record, else None."""
    try:
        api_key, version, pos = _read_frame(value)
    except _Rejected:
        return None
    message = BY_API_KEY.get(api_key)
    if message is None:
        return None
    version = min(version, message.highest_version)
    return (_outcome(decoder(message, version), value, pos),
            _outcome(decoder(message, version, fast=False), value, pos))


def _corpus_values() -> list[bytes]:
    name = re.compile(r"\d{20}(\.log|-\d{10}\.checkpoint)")
    files = [p for p in sorted(CORPUS.glob("*/**/*")) if p.is_file() and name.fullmatch(p.name)]
    values = {}
    for path in files:
        for batch in read_log_file(path):
            if isinstance(batch, Batch) and not batch.is_control:
                values.update((r.value, None) for r in batch.records if r.value is not None)
    return list(values)


@pytest.mark.corpus
def test_kafkas_values_decode_alike_and_mostly_without_the_general_decoder():
    """Every distinct metadata value of the real and kafka-serde corpus: the same outcome both ways; and
    the values of a record with tagged fields (PartitionChangeRecord) are read by the fast path alone."""
    if not CORPUS.is_dir():
        pytest.skip("the shared corpus is absent")
    values = _corpus_values()
    assert len(values) > 1000
    for value in values:
        both = _both(value)
        assert both is None or both[0] == both[1], value.hex()
    change = [v for v in values if v[:3] == b"\x01\x05\x00"]  # PartitionChangeRecord v0
    assert len(change) > 100
    fast = decoder(BY_API_KEY[5], 0)
    with pytest.MonkeyPatch.context() as m:
        m.setitem(fast.__globals__, "_general", None)  # handing a value on would now fail
        for value in change:
            fast(value, 3, [])


@SETTINGS
@given(metadata_records())
def test_random_records_decode_alike(case):
    message, version, data = case
    value = encode_metadata(message.api_key, version, data)
    fast, general = _both(value)
    assert fast == general and fast[0] != "error"


@settings(max_examples=500, deadline=None)
@given(damaged_values())
def test_damaged_values_decode_alike(value):
    both = _both(value)
    assert both is None or both[0] == both[1]


def _tag_section(message, version: int, data: dict) -> tuple[bytes, list[tuple[int, bytes]]]:
    """The value's bytes before its record-level tag section, and that section's (tag, bytes)."""
    value = encode_metadata(message.api_key, version, data)
    untagged = {k: v for k, v in data.items()
                if next(f for f in message.fields_at(version) if f.json == k).tag is None}
    head = encode_metadata(message.api_key, version, untagged)[:-1]  # its tag section: a lone zero
    assert value.startswith(head)
    n, pos = read_uvarint(value, len(head))
    tags = []
    for _ in range(n):
        tag, pos = read_uvarint(value, pos)
        size, pos = read_uvarint(value, pos)
        tags.append((tag, value[pos:pos + size]))
        pos += size
    return head, tags


def _default_bytes(f) -> bytes | None:
    """A tagged field's default value as its bytes on the wire (writers leave it out), None for structs."""
    default, t = f.default_value(), f.type
    if isinstance(t, Fixed):
        return uuid_raw(default) if t is UUID else struct.pack(">" + t.code, default)
    if default is None:
        return b"\0"
    if isinstance(t, Array | Compact):
        raw = default.encode() if isinstance(default, str) else bytes(default)
        return write_uvarint(len(raw) + 1) + raw
    return None


@SETTINGS
@given(metadata_records(), st.data())
def test_tag_sections_no_writer_writes_decode_alike(case, draw):
    """Tagged fields shuffled, repeated, dropped, written at their defaults, grown by a byte, joined by
    unknown tags or sized with two-byte varints."""
    message, version, data = case
    head, tags = _tag_section(message, version, data)
    present = {t for t, _ in tags}
    for f in message.fields_at(version):
        if f.tag is not None and f.tag not in present and draw.draw(st.booleans()):
            raw = _default_bytes(f)
            tags += [] if raw is None else [(f.tag, raw)]
    tags.sort()
    if tags and draw.draw(st.booleans()):
        k = draw.draw(st.integers(0, len(tags) - 1))
        tags[k] = tags[k][0], tags[k][1] + b"\0"
    if draw.draw(st.booleans()):
        tags = draw.draw(st.permutations(tags))
    if tags and draw.draw(st.booleans()):
        tags.insert(draw.draw(st.integers(0, len(tags))), draw.draw(st.sampled_from(tags)))
    tags += [(t, draw.draw(st.binary(max_size=3))) for t in draw.draw(st.lists(st.integers(0, 300), max_size=2))]
    wide = draw.draw(st.booleans())  # sizes as two-byte varints (0x80 | low bits, then the rest)
    section = bytearray(write_uvarint(len(tags)))
    for tag, raw in tags:
        section += write_uvarint(tag)
        section += bytes((0x80 | len(raw) & 0x7F, len(raw) >> 7)) if wide else write_uvarint(len(raw))
        section += raw
    fast, general = _both(head + bytes(section))
    assert fast == general
