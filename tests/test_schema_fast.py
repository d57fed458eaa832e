"""A record's whole-value decoder (``codegen.whole_decoder``) against its general one, built from the
same declaration: whatever data the whole-value decoder gives, the general one gives too, reading the
value to its end without unknown tags (for anything else it gives None, and ``decode_metadata`` reads
the value with the general decoder); for Kafka's own values (the real corpus, kafka-serde), random
values of every type and version, tag sections no writer writes (tags out of order, repeated,
unknown, at their defaults, grown) and damaged values."""

import re
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_schema_properties import RECORDS, SETTINGS, damaged_values, metadata_records, ordered, struct_of

from conftest import CORPUS
from kraftlog.files.reader import read_log_file
from kraftlog.schema import encode_metadata, records
from kraftlog.schema.codegen import DECODE_ERRORS, decoder, locate, uuid_raw, whole_decoder
from kraftlog.schema.fields import UUID, Array, Compact, Fixed
from kraftlog.schema.metadata import BY_API_KEY
from kraftlog.schema.records import _read_frame, _Rejected
from kraftlog.wire.batch import Batch
from kraftlog.wire.varint import read_uvarint, write_uvarint


def _general(fn, value: bytes, pos: int) -> tuple:
    unk: list = []
    try:
        data, end = fn(value, pos, unk)
    except DECODE_ERRORS as exc:
        return "error", type(exc).__name__, locate(exc)
    return ordered(data), end, unk


def _both(value: bytes) -> tuple[tuple | None, tuple] | None:
    """What the whole-value decoder gives (None, or what the general one would give for a value it read
    whole), and what the general one gives, for a value whose frame names a record version the table
    declares; None for other values."""
    try:
        api_key, version, pos = _read_frame(value)
    except _Rejected:
        return None
    message = BY_API_KEY.get(api_key)
    if message is None or version > message.highest_version:
        return None
    general = _general(decoder(message, version), value, pos)
    whole = whole_decoder(message, version)
    data = None if whole is None else whole(value, pos)
    return None if data is None else (ordered(data), len(value), []), general


class _NoWholes(dict):
    def __missing__(self, head: bytes) -> None:
        return None


def _alike(value: bytes) -> bool:
    """The whole-value decoder gives nothing, or what the general one gives; and the record
    ``decode_metadata`` makes (its data, or its error text) is the one it makes without them."""
    both = _both(value)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(records, "_wholes", _NoWholes())
        general = records._decode_metadata(value)
    return (both is None or both[0] is None or both[0] == both[1]) and records._decode_metadata(value) == general


def _corpus_values() -> list[bytes]:
    name = re.compile(r"\d{20}(\.log|-\d{10}\.checkpoint)|all-metadata-record-types\.log|bootstrap\.checkpoint")
    files = [p for p in sorted(CORPUS.glob("*/**/*")) if p.is_file() and name.fullmatch(p.name)
             and "__cluster_metadata" in str(p) or p.name.startswith(("all-metadata", "bootstrap"))]
    values = {}
    for path in files:
        for batch in read_log_file(path):
            if isinstance(batch, Batch) and not batch.is_control:
                values.update((r.value, None) for r in batch.records if r.value is not None)
    return list(values)


@pytest.mark.corpus
def test_kafkas_values_are_read_whole_as_the_general_decoder_reads_them():
    """Every distinct metadata value of the real and kafka-serde corpus."""
    if not CORPUS.is_dir():
        pytest.skip("the shared corpus is absent")
    values = _corpus_values()
    assert len(values) > 1000
    known = whole = 0
    for value in values:
        both = _both(value)
        assert both is None or both[0] is None or both[0] == both[1], value.hex()
        known += both is not None
        whole += both is not None and both[0] is not None
    assert known > 1000 and whole == known  # Kafka writes every value as the whole-value decoders read them


@SETTINGS
@given(metadata_records())
def test_random_records_decode_alike(case):
    message, version, data = case
    value = encode_metadata(message.api_key, version, data)
    whole, general = _both(value)
    assert whole == general and general[0] != "error"


@settings(max_examples=500, deadline=None)
@given(damaged_values())
def test_damaged_values_decode_alike(value):
    assert _alike(value)


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


TAGGED = [(m, v) for m, v in RECORDS if any(f.tag is not None for f in m.fields_at(v))]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(TAGGED), st.sampled_from(["defaults", "grown", "shuffled", "repeated", "unknown", "wide", "counted"]),
       st.data())
def test_tag_sections_no_writer_writes_decode_alike(case, how, draw):
    """Tagged fields written at their defaults (read whole), one grown by a byte or one more counted than
    written (errors), shuffled, repeated, joined by unknown tags or sized with two-byte varints (read
    whole or handed on)."""
    message, version = case
    head, tags = _tag_section(message, version, draw.draw(struct_of(message, version)))
    if how == "defaults":
        present = {t for t, _ in tags}
        tags = sorted(tags + [(f.tag, _default_bytes(f)) for f in message.fields_at(version)
                              if f.tag is not None and f.tag not in present and _default_bytes(f) is not None])
    elif how == "grown" and tags:
        k = draw.draw(st.integers(0, len(tags) - 1))
        tags[k] = tags[k][0], tags[k][1] + bytes((draw.draw(st.integers(0, 10)),))
    elif how == "shuffled":
        tags = draw.draw(st.permutations(tags))
    elif how == "repeated" and tags:
        tags.insert(draw.draw(st.integers(0, len(tags))), draw.draw(st.sampled_from(tags)))
    elif how == "unknown":
        tags += [(t, draw.draw(st.binary(max_size=3))) for t in draw.draw(st.lists(st.integers(0, 300), max_size=2))]
    wide = how == "wide"  # sizes as two-byte varints (0x80 | low bits, then the rest)
    section = bytearray(write_uvarint(len(tags) + (how == "counted")))
    for tag, raw in tags:
        section += write_uvarint(tag)
        section += bytes((0x80 | len(raw) & 0x7F, len(raw) >> 7)) if wide else write_uvarint(len(raw))
        section += raw
    whole, general = _both(head + bytes(section))
    assert whole is None or whole == general
    if how == "defaults":
        assert whole == general
    if how == "grown" and tags or how == "counted":
        assert whole is None and general[0] == "error"
