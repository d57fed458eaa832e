"""Metadata record values: the typed record, decode (never raises) and byte-exact encode.

A value is ``frameVersion apiKey version`` (unsigned varints) then the body at that version
(reference section 2). Decoding keeps ``raw`` so that a record Kafka cannot read either is still
shown, skipped or re-emitted, with an ``error`` that says what is wrong and where.
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any

from kraftlog.schema.codegen import (
    DECODE_ERRORS,
    ENCODE_ERRORS,
    decoder,
    encoder,
    locate,
    uuid_text,
    whole_decoder,
)
from kraftlog.schema.fields import STRING, UUID, Fixed, Message
from kraftlog.schema.metadata import BY_API_KEY, BY_TYPE_NAME
from kraftlog.schema.render import b64, compact_json, jsonable
from kraftlog.wire.errors import CorruptRecordError
from kraftlog.wire.varint import read_uvarint, write_uvarint

FRAME_VERSION = 1
#: A NoOpRecord value (frame 1, api key 20, version 0, no tagged fields): most of a quiet log.
NOOP_VALUE = b"\x01\x14\x00\x00"

UnknownTag = tuple[str, int, bytes]  # (path, tag, raw); path "" is the record, "endPoints[0]" an element


def tags_json(unknown_tags: Iterable[UnknownTag]) -> list[dict]:
    """Unknown tagged fields as JSON: their bytes in base64 (text in their place, as redaction
    leaves it, as it is)."""
    return [{"path": p, "tag": t, "data": raw if isinstance(raw, str) else b64(raw)} for p, t, raw in unknown_tags]


class MetadataRecord:
    """One decoded metadata record value.

    ``data`` uses Kafka's JSON field names in schema order, tagged fields only when they differ
    from their defaults, uuids as 22-char text and ``bytes`` fields as bytes. ``unknown_tags`` is
    a tuple (immutable, and no allocation for the usual none). When ``error`` is set, ``data`` is
    empty and ``raw`` holds the value as read (-1 for an api key or version not read).
    ``decoded_as`` is set when ``version`` is newer than the schema table: ``data`` is the body
    read at that (highest known) version, and what it added is in ``unknown_tags``.
    """

    __slots__ = ("api_key", "version", "data", "unknown_tags", "error", "raw", "decoded_as")

    def __init__(self, api_key: int, version: int, data: dict, unknown_tags: tuple[UnknownTag, ...] = (),
                 error: str | None = None, raw: bytes = b"", decoded_as: int | None = None) -> None:
        self.api_key = api_key
        self.version = version
        self.data = data
        self.unknown_tags = unknown_tags
        self.error = error
        self.raw = raw
        self.decoded_as = decoded_as

    @property
    def type(self) -> str:
        """``MetadataRecordType`` name (``UNKNOWN`` for api keys this table does not have)."""
        message = BY_API_KEY.get(self.api_key)
        return message.type_name if message else "UNKNOWN"

    def to_json(self) -> dict:
        """The golden ``metadata`` object; ``{"type","version","error"}`` for a record that failed."""
        if self.error is not None:
            return {"type": self.type, "version": self.version, "error": self.error}
        out = {"type": self.type, "version": self.version, "data": jsonable(self.data)}
        if self.decoded_as is not None:
            out["decodedAs"] = self.decoded_as
        if self.unknown_tags:
            out["unknownTaggedFields"] = tags_json(self.unknown_tags)
        return out

    def dump_text(self, offset: int | None = None) -> str:
        """What ``kafka-dump-log --cluster-metadata-decoder`` prints after the record header."""
        if self.error is not None:
            return f"payload: Error at {offset}, skipping. {self.error.split(': ', 1)[-1]}"
        text = "payload: " + compact_json({"type": self.type, "version": self.version, "data": self.data})
        return text if self.decoded_as is None else f"{text} ({self.newer_note})"

    @property
    def newer_note(self) -> str:
        """What a record of a version newer than the schema table was read as (``decoded_as`` set)."""
        return (f"{BY_API_KEY[self.api_key].name} v{self.version} is newer than kraftlog knows: "
                f"decoded as v{self.decoded_as}, {len(self.unknown_tags)} unknown tagged field(s) kept raw")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetadataRecord):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        if self.error is not None:
            return f"MetadataRecord({self.type} v{self.version}, error={self.error!r})"
        return f"MetadataRecord({self.type} v{self.version}, {self.data!r})"


class _Rejected(Exception):
    """A value refused before its body is read; the message is the full error text."""


def _read_frame(value: bytes) -> tuple[int, int, int]:
    """Frame version, api key and version, with Kafka's checks (the general, slow path)."""
    pos = 0
    parts = []
    for what in ("frame version", "type", "version"):
        try:
            n, pos = read_uvarint(value, pos)
        except CorruptRecordError as exc:
            raise _Rejected(f"MetadataParseException: {what}: {exc}") from None
        if n > 0x7FFF:
            raise _Rejected(f"MetadataParseException: Value for {what} was too large ({n})")
        if what == "frame version" and n != FRAME_VERSION:
            if n == 0:
                raise _Rejected("MetadataParseException: Could not deserialize metadata record with frame "
                                "version 0 (the KRaft preview format of Kafka 2.8 is not supported)")
            raise _Rejected(f"MetadataParseException: unknown frame version {n} "
                            f"(only frame version {FRAME_VERSION} is supported)")
        parts.append(n)
    return parts[1], parts[2], pos


_decoders: dict[int, Callable] = {}  # by api_key << 16 | version, for the versions the table declares


class _Wholes(dict):
    """A value's first three bytes -> the whole-value decoder (``codegen.whole_decoder``) of the record
    version they name (frame version 1, api key and version of one-byte varints, a version the table
    declares), or None. Built on first sight, so a record type always read whole never builds its
    general decoder. At most 128 * 128 entries: other prefixes are not kept."""

    def __missing__(self, head: bytes) -> Callable | None:
        if len(head) < 3 or head[0] != FRAME_VERSION or head[1] > 0x7F or head[2] > 0x7F:
            return None
        message = BY_API_KEY.get(head[1])
        fn = self[head] = (whole_decoder(message, head[2])
                           if message is not None and head[2] <= message.highest_version else None)
        return fn


_wholes = _Wholes()


def _decoder_for(api_key: int, version: int) -> tuple[Callable, int | None]:
    """The decoder of a version not yet cached, and the version it reads (None: the record's own).

    A version above the highest known is read at the highest known one (every metadata record is
    flexible from version 0, and Kafka adds fields to a flexible version as tagged fields); the
    caller keeps it only when the bytes parse to their exact end."""
    message = BY_API_KEY.get(api_key)
    if message is None:
        raise _Rejected(f"UnsupportedVersionException: Unknown metadata id {api_key}")
    if version > message.highest_version:  # every record's versions start at 0
        return decoder(message, message.highest_version), message.highest_version
    fn = _decoders[api_key << 16 | version] = decoder(message, version)
    return fn, None


def _newer(api_key: int, version: int, reason: str) -> str:
    message = BY_API_KEY[api_key]
    return (f"UnsupportedVersionException: Can't read version {version} of {message.name} (highest known "
            f"version is {message.highest_version}); read as version {message.highest_version}, {reason}")


#: Values decoded recently -> their records, shared: a log repeats its ISR changes, leader elections and
#: heartbeats (a dense log's 330 k values are 64 k distinct, most seen again within 16 k values), and the
#: columnar path decodes each distinct value once too. The one cache of decoded values: the walk's
#: records (``files.records``) are decoded here as well. Bounded: ``_RARE_FULL`` values of at most
#: ``_RECENT_VALUE_BYTES`` each. What happens when it is full depends on what the records it keeps cost
#: the garbage collector, whose full collections visit them all:
#: - while full collections are rare (the oldest generation's threshold raised above ``_GC_OLD``, as
#:   ``files.reader`` and replay do while they read), it holds up to ``_RARE_FULL`` values and, when
#:   full, keeps the ``_RECENT_ENTRIES`` decoded last (a value found again is not moved): the 16-32 k
#:   values decoded last, the bound the older generation that hits moved out of had, for one lookup a
#:   miss instead of two and no moves (a dense log's object decode 0.54 -> 0.50 CPU-s; its peak RSS
#:   56 -> 60 MB, as the two generations seldom held their 32 k; quiet logs' unchanged);
#: - otherwise it holds ``_RECENT_ENTRIES`` and is dropped when full, and after a fill hit fewer than
#:   ``_PAYS`` times (the columnar walks, which decode each distinct value of a walk once, on a dense log)
#:   the next ``_REST`` values are decoded without it: the records kept alive would cost more in
#:   collections than the decodes they save.
_RECENT_ENTRIES, _RECENT_VALUE_BYTES = 1 << 14, 512
_RARE_FULL = 2 * _RECENT_ENTRIES
_PAYS, _REST = _RECENT_ENTRIES // 4, 16 * _RECENT_ENTRIES
_GC_OLD = gc.get_threshold()[2]
_recent: dict[bytes, MetadataRecord] = {}
_full = _RECENT_ENTRIES  # how many values ``_recent`` holds before it is cut (``_RARE_FULL`` while collections are rare)
_hits = _resting = 0


def decode_metadata(value: bytes) -> MetadataRecord:
    """Decode one record value. Never raises on bad input: the result's ``error`` says why. A value
    seen recently may give the same record object: callers never change a decoded record."""
    global _recent, _full, _hits, _resting
    try:
        rec = _recent.get(value)
    except (TypeError, ValueError):  # a bytearray, a writable memoryview: not hashable
        return decode_metadata(bytes(value))
    if rec is not None:
        _hits += 1
        return rec
    if type(value) is not bytes:
        if value is None:
            return MetadataRecord(-1, -1, {}, (), "MetadataParseException: the record value is null")
        value = bytes(value)
    if len(value) > _RECENT_VALUE_BYTES:
        return _decode_metadata(value)
    if _resting and gc.get_threshold()[2] <= _GC_OLD:
        _resting -= 1
        return _decode_metadata(value)
    rec = _decode_metadata(value)
    if len(_recent) >= _full:
        if gc.get_threshold()[2] > _GC_OLD:
            _full = _RARE_FULL
            if len(_recent) >= _full:  # the values decoded last kept
                _recent = dict(islice(_recent.items(), len(_recent) - _RECENT_ENTRIES, None))
        else:
            _full, _recent = _RECENT_ENTRIES, {}
            if _hits < _PAYS:
                _resting, _hits = _REST, 0
                return rec
        _hits = 0
    _recent[value] = rec
    return rec


def _decode_metadata(value: bytes) -> MetadataRecord:
    whole = _wholes[value[:3]]
    if whole is not None:
        data = whole(value, 3)
        if data is not None:  # a value as writers write it, read by its whole-value decoder
            rec = _new_record(MetadataRecord)  # its slots set here: cheaper than a call into __init__
            rec.api_key = value[1]
            rec.version = value[2]
            rec.data = data
            rec.unknown_tags = ()
            rec.error = None
            rec.raw = value
            rec.decoded_as = None
            return rec
    api_key = version = -1
    try:
        if len(value) > 2 and value[0] == FRAME_VERSION and value[1] < 0x80 and value[2] < 0x80:
            api_key, version, pos = value[1], value[2], 3
        else:
            api_key, version, pos = _read_frame(value)
        fn = _decoders.get(api_key << 16 | version)
        decoded_as = None
        if fn is None:
            fn, decoded_as = _decoder_for(api_key, version)
        unknown: list[UnknownTag] = []
        data, pos = fn(value, pos, unknown)
    except _Rejected as exc:
        return MetadataRecord(api_key, version, {}, (), str(exc), value)
    except DECODE_ERRORS as exc:
        error = (f"MetadataParseException: {BY_API_KEY[api_key].name} v{version}: {locate(exc)}"
                 if decoded_as is None else _newer(api_key, version, locate(exc)))
        return MetadataRecord(api_key, version, {}, (), error, value)
    if pos != len(value):
        error = (f"MetadataParseException: Found {len(value) - pos} byte(s) of garbage after "
                 f"{BY_API_KEY[api_key].name} v{version} (body ends at byte {pos})" if decoded_as is None else
                 _newer(api_key, version, f"{len(value) - pos} byte(s) are left after its body (ends at byte {pos})"))
        return MetadataRecord(api_key, version, {}, (), error, value)
    return MetadataRecord(api_key, version, data, tuple(unknown) if unknown else (), None, value, decoded_as)


_new_record = object.__new__


def key_fields(rec: MetadataRecord) -> dict:
    """For a record kept raw: the fields that lead its body in every version of its type (untagged,
    versions ``0+``, fixed-width or strings), read from ``raw`` as far as they parse. These name the
    entity a replay could not update (a PartitionChangeRecord's partition, a broker id)."""
    message = BY_API_KEY.get(rec.api_key)
    out: dict = {}
    if message is None or not rec.raw:
        return out
    try:
        *_, pos = _read_frame(rec.raw)
        for f in message.fields:
            if f.tag is not None or f.versions != "0+" or f.nullable != "none":
                break
            if isinstance(f.type, Fixed):
                (value,) = struct.unpack_from(">" + f.type.code, rec.raw, pos)
                out[f.json], pos = uuid_text(value) if f.type is UUID else value, pos + f.type.size
            elif f.type is STRING:
                n, pos = read_uvarint(rec.raw, pos)
                if not 0 < n <= len(rec.raw) - pos + 1:
                    break
                out[f.json], pos = rec.raw[pos:pos + n - 1].decode(), pos + n - 1
            else:
                break
    except (_Rejected, struct.error, CorruptRecordError, UnicodeDecodeError):
        pass
    return out


def message_of(type_or_api_key: int | str) -> Message:
    """The schema by api key, enum name (``PARTITION_RECORD``) or spec name (``PartitionRecord``)."""
    if isinstance(type_or_api_key, int):
        message = BY_API_KEY.get(type_or_api_key)
    else:
        message = BY_TYPE_NAME.get(type_or_api_key) or next(
            (m for m in BY_API_KEY.values() if m.name == type_or_api_key), None)
    if message is None:
        raise ValueError(f"unknown metadata record type {type_or_api_key!r}")
    return message


def encode_metadata(type_or_api_key: int | str, version: int, data: dict[str, Any],
                    unknown_tags: Iterable[UnknownTag] = ()) -> bytes:
    """The value bytes, frame included. Missing fields take their defaults; raises ValueError on
    data that does not fit the schema (unknown field, out-of-range int, null where not allowed)."""
    message = message_of(type_or_api_key)
    if version not in message.valid_versions:
        raise ValueError(f"{message.name} has no version {version}")
    out = bytearray((FRAME_VERSION,))
    out += write_uvarint(message.api_key)
    out += write_uvarint(version)
    by_path: dict[str, list[tuple[int, bytes]]] = {}
    for path, tag, raw in unknown_tags:
        by_path.setdefault(path, []).append((tag, raw))
    try:
        encoder(message, version)(data, out, by_path, "")
    except ENCODE_ERRORS as exc:
        raise ValueError(f"{message.name} v{version}: {locate(exc)}") from None
    return bytes(out)


def encode_record(rec: MetadataRecord) -> bytes:
    """Re-encode a decoded record, unknown tagged fields included (byte-identical for Kafka's values)."""
    if rec.error is not None:
        return rec.raw
    if rec.decoded_as is not None:  # the table cannot write the newer version: it is re-emitted as read
        return rec.raw
    return encode_metadata(rec.api_key, rec.version, rec.data, rec.unknown_tags)
