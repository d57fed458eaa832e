"""Properties over random records of every type and version, generated from the schema table.

encode -> decode gives back the data (tagged fields at their default drop out, as Kafka's JSON
does), decode -> encode gives back the bytes, and no byte string makes the decoder raise.
"""

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftlog.schema import (
    METADATA_RECORDS,
    decode_control,
    decode_metadata,
    encode_control,
    encode_metadata,
    encode_record,
)
from kraftlog.schema.codegen import uuid_text
from kraftlog.schema.control import CONTROL_TYPES
from kraftlog.schema.fields import BYTES, UUID, Array, Compact, Fixed, Message, Struct

_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def value_of(t, nullable: bool, version: int) -> st.SearchStrategy:
    if isinstance(t, Fixed):
        if t is UUID:
            base = st.binary(min_size=16, max_size=16).map(uuid_text)
        elif t.name == "bool":
            base = st.booleans()
        elif t.name == "uint16":
            base = st.integers(0, 65535)
        elif t.name == "float64":
            base = st.floats(allow_nan=False)
        else:
            bits = _INTS[t.name]
            base = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    elif isinstance(t, Struct):
        base = struct_of(t, version)
    elif isinstance(t, Compact):
        base = st.binary(max_size=12) if t is BYTES else _TEXT
    elif isinstance(t, Array):
        base = st.lists(value_of(t.element, False, version), max_size=4)
    else:
        raise TypeError(t)
    return st.one_of(st.none(), base) if nullable else base


def struct_of(s: Struct, version: int) -> st.SearchStrategy:
    """Every field of ``s`` at ``version``, tagged ones often left at their default."""
    fields = {}
    for f in s.fields_at(version):
        strategy = value_of(f.type, f.nullable_in(version), version)
        if f.tag is not None:
            strategy = st.one_of(st.just(f.default_value()), strategy)
        fields[f.json] = strategy
    return st.fixed_dictionaries(fields)


def expected(s: Struct, version: int, data: dict) -> list:
    """``data`` as the decoder must give it back, as ordered pairs so that key order counts."""
    out = []
    for f in s.fields_at(version):
        v = data[f.json]
        if f.tag is not None and v == f.default_value():
            continue
        out.append((f.json, ordered_value(f.type, version, v)))
    return out


def ordered_value(t, version, v):
    if v is None:
        return None
    if isinstance(t, Struct):
        return expected(t, version, v)
    if isinstance(t, Array) and isinstance(t.element, Struct):
        return [expected(t.element, version, e) for e in v]
    return v


def ordered(v):
    if isinstance(v, dict):
        return [(k, ordered(x)) for k, x in v.items()]
    if isinstance(v, list):
        return [ordered(x) for x in v]
    return v


RECORDS = [(m, v) for m in METADATA_RECORDS for v in m.valid_versions]


@st.composite
def metadata_records(draw):
    message, version = draw(st.sampled_from(RECORDS))
    return message, version, draw(struct_of(message, version))


@SETTINGS
@given(metadata_records())
def test_encode_then_decode_gives_the_data_back(case):
    message, version, data = case
    value = encode_metadata(message.api_key, version, data)
    rec = decode_metadata(value)
    assert rec.error is None, rec.error
    assert (rec.api_key, rec.version, rec.type) == (message.api_key, version, message.type_name)
    assert ordered(rec.data) == expected(message, version, data)
    assert encode_record(rec) == value
    assert encode_metadata(rec.type, rec.version, rec.data) == value


def _undeclared_tags(message: Message) -> st.SearchStrategy:
    declared = {f.tag for f in message.fields if f.tag is not None}
    return st.lists(st.integers(0, 300).filter(lambda t: t not in declared), max_size=3, unique=True).map(sorted)


@SETTINGS
@given(metadata_records(), st.data())
def test_unknown_tags_survive_decode_and_re_encode(case, draw):
    message, version, data = case
    tags = [("", t, draw.draw(st.binary(max_size=6))) for t in draw.draw(_undeclared_tags(message))]
    value = encode_metadata(message.api_key, version, data, tags)
    rec = decode_metadata(value)
    assert rec.error is None, rec.error
    assert list(rec.unknown_tags) == tags
    assert encode_record(rec) == value


CONTROL = [(c, v) for c in CONTROL_TYPES if c.schema is not None for v in c.schema.valid_versions]


@SETTINGS
@given(st.sampled_from(CONTROL), st.data())
def test_control_values_round_trip(case, draw):
    ctype, version = case
    data = draw.draw(struct_of(ctype.schema, version))
    data["version"] = version
    k, v = encode_control(ctype.name, data)
    rec = decode_control(k, v)
    assert rec.error is None, rec.error
    assert ordered(rec.data) == expected(ctype.schema, version, data)
    assert encode_control(ctype.name, rec.data) == (k, v)


@st.composite
def damaged_values(draw):
    """A valid value cut short, with a byte changed, or with bytes inserted, or plain noise."""
    message, version, data = draw(metadata_records())
    value = bytearray(encode_metadata(message.api_key, version, data))
    how = draw(st.sampled_from(["cut", "flip", "insert", "noise"]))
    if how == "cut":
        del value[draw(st.integers(0, len(value) - 1)):]
    elif how == "flip":
        value[draw(st.integers(0, len(value) - 1))] = draw(st.integers(0, 255))
    elif how == "insert":
        at = draw(st.integers(0, len(value)))
        value[at:at] = draw(st.binary(min_size=1, max_size=6))
    else:
        value = bytearray(b"\x01" + draw(st.binary(max_size=40)))
    return bytes(value)


@settings(max_examples=500, deadline=None)
@given(damaged_values())
def test_no_bytes_make_the_decoder_raise(value):
    rec = decode_metadata(value)
    assert rec.raw == value
    assert rec.to_json() and rec.dump_text(offset=0)
    if rec.error is None:
        again = decode_metadata(encode_record(rec))  # whatever it read, it can write and read back
        assert again.error is None and again.data == rec.data
    else:
        assert rec.data == {} and rec.error.split(":")[0] in ("MetadataParseException", "UnsupportedVersionException")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=6), st.binary(max_size=40))
def test_no_bytes_make_the_control_decoder_raise(k, value):
    for key in (k, struct.pack(">hh", 0, k[0] % 8 if k else 2) + k):
        rec = decode_control(key, value)
        assert rec.error is None or rec.data is None
        assert rec.to_json()["typeId"] == rec.type_id and rec.dump_text()
