"""Control records (types 0-6): the 4-byte key, the value schemas, and decoding.

Sources: ``ControlRecordType``, ``EndTransactionMarker`` and the flexible schemas
``LeaderChangeMessage``, ``SnapshotHeaderRecord``, ``SnapshotFooterRecord``, ``KRaftVersionRecord``,
``VotersRecord`` (reference section 1.7). Unlike metadata records, a control value has no frame:
the message starts with its own int16 ``Version`` field, and that is the version it is read at.
(Kafka 3.9 reads them at a fixed version 0, which is the only one its writers use.)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import construct

from kraftlog.schema.codegen import DECODE_ERRORS, ENCODE_ERRORS, decoder, encoder, locate
from kraftlog.schema.fields import INT16, INT32, INT64, STRING, UINT16, UUID, Field, Message, Struct, array
from kraftlog.schema.render import b64, compact_json


def _fixed(layout: construct.Struct) -> struct.Struct:
    """A ``struct.Struct`` from a construct declaration of fixed-width fields (read without construct)."""
    return struct.Struct(">" + "".join(sc.subcon.fmtstr.lstrip("<>=") for sc in layout.subcons))


#: Control record key: fixed width, not varints. A higher key version is still read as v0.
CONTROL_KEY = construct.Struct("keyVersion" / construct.Int16sb, "type" / construct.Int16sb)
#: ABORT / COMMIT value: the pre-flexible fixed schema. A higher version is read as v0.
END_TXN_MARKER = construct.Struct("version" / construct.Int16sb, "coordinatorEpoch" / construct.Int32sb)
_KEY = _fixed(CONTROL_KEY)
_END_TXN = _fixed(END_TXN_MARKER)
_VERSION = _fixed(construct.Struct("version" / construct.Int16sb))  # first field of every KRaft control value

# Field(name, type, versions, nullable, tag, default)
LeaderChangeVoter = Struct("Voter", [
    Field("VoterId",                INT32,          "0+"),
    Field("VoterDirectoryId",       UUID,           "1+"),
])
LeaderChangeMessage = Message(None, "LeaderChangeMessage", valid="0-1", fields=[
    Field("Version",                INT16,          "0+"),
    Field("LeaderId",               INT32,          "0+"),
    Field("Voters",                 array(LeaderChangeVoter), "0+"),
    Field("GrantingVoters",         array(LeaderChangeVoter), "0+"),
])
SnapshotHeaderRecord = Message(None, "SnapshotHeaderRecord", valid="0", fields=[
    Field("Version",                INT16,          "0+"),
    Field("LastContainedLogTimestamp", INT64,       "0+"),
])
SnapshotFooterRecord = Message(None, "SnapshotFooterRecord", valid="0", fields=[
    Field("Version",                INT16,          "0+"),
])
KRaftVersionRecord = Message(None, "KRaftVersionRecord", valid="0", fields=[
    Field("Version",                INT16,          "0+"),
    Field("KRaftVersion",           INT16,          "0+"),
])
Endpoint = Struct("Endpoint", [
    Field("Name",                   STRING,         "0+"),
    Field("Host",                   STRING,         "0+"),
    Field("Port",                   UINT16,         "0+"),
])
KRaftVersionFeature = Struct("KRaftVersionFeature", [
    Field("MinSupportedVersion",    INT16,          "0+"),
    Field("MaxSupportedVersion",    INT16,          "0+"),
])
Voter = Struct("Voter", [
    Field("VoterId",                INT32,          "0+"),
    Field("VoterDirectoryId",       UUID,           "0+"),
    Field("Endpoints",              array(Endpoint), "0+"),
    Field("KRaftVersionFeature",    KRaftVersionFeature, "0+"),
])
VotersRecord = Message(None, "VotersRecord", valid="0", fields=[
    Field("Version",                INT16,          "0+"),
    Field("Voters",                 array(Voter),   "0+"),
])


@dataclass(frozen=True, slots=True)
class ControlType:
    """One ``ControlRecordType``; ``label`` is kafka-dump-log's prefix when it prints the JSON."""

    id: int
    name: str
    schema: Message | None  # None: the fixed EndTxnMarker layout
    label: str | None = None


CONTROL_TYPES: tuple[ControlType, ...] = (
    ControlType(0, "ABORT",           None),
    ControlType(1, "COMMIT",          None),
    ControlType(2, "LEADER_CHANGE",   LeaderChangeMessage),
    ControlType(3, "SNAPSHOT_HEADER", SnapshotHeaderRecord, "SnapshotHeader"),
    ControlType(4, "SNAPSHOT_FOOTER", SnapshotFooterRecord, "SnapshotFooter"),
    ControlType(5, "KRAFT_VERSION",   KRaftVersionRecord,   "KRaftVersion"),
    ControlType(6, "KRAFT_VOTERS",    VotersRecord,         "KRaftVoters"),
)
BY_ID: dict[int, ControlType] = {c.id: c for c in CONTROL_TYPES}
BY_NAME: dict[str, ControlType] = {c.name: c for c in CONTROL_TYPES}


class ControlRecord:
    """One control record. ``value_version`` is the value's leading int16; ``data`` is None for
    UNKNOWN types and when ``error`` is set."""

    __slots__ = ("key_version", "type_id", "value_version", "data", "error", "key", "value")

    def __init__(self, key_version: int, type_id: int, value_version: int | None, data: dict | None,
                 error: str | None, key: bytes, value: bytes | None) -> None:
        self.key_version = key_version
        self.type_id = type_id
        self.value_version = value_version
        self.data = data
        self.error = error
        self.key = key
        self.value = value

    @property
    def type(self) -> str:
        known = BY_ID.get(self.type_id)
        return known.name if known else "UNKNOWN"

    def to_json(self) -> dict:
        """The golden ``control`` object (``data`` is base64 of the value for UNKNOWN types)."""
        out: dict = {"type": self.type, "typeId": self.type_id, "version": self.key_version}
        if self.error is not None:
            out["error"] = self.error
        elif self.type_id in BY_ID:
            out["data"] = self.data
        else:
            out["data"] = None if self.value is None else b64(self.value)
        return out

    def dump_text(self) -> str:
        """What ``kafka-dump-log`` prints for it: the JSON for header, footer, kraft.version and
        voters, the marker for ABORT/COMMIT, and only the type for LEADER_CHANGE and the rest."""
        known = BY_ID.get(self.type_id)
        if self.error is None and known is not None:
            if known.schema is None:
                return f"endTxnMarker: {known.name} coordinatorEpoch: {self.data['coordinatorEpoch']}"
            if known.label is not None:
                return f"{known.label} {compact_json(self.data)}"
        text = f"controlType: {self.type}({self.type_id})"
        return text if self.error is None else f"{text} error: {self.error}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ControlRecord):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        detail = f"error={self.error!r}" if self.error is not None else repr(self.data)
        return f"ControlRecord({self.type} key v{self.key_version}, {detail})"


def decode_control(key: bytes | None, value: bytes | None) -> ControlRecord:
    """Decode a control record's key and value. Never raises on bad input: see ``error``."""
    key = b"" if key is None else bytes(key)
    value = None if value is None else bytes(value)
    if len(key) < _KEY.size:
        return ControlRecord(-1, -1, None, None, "InvalidRecordException: Invalid record size: expected to read "
                             f"{_KEY.size} bytes in control record key, but found only {len(key)}", key, value)
    key_version, type_id = _KEY.unpack_from(key)

    def failed(message: str, value_version: int | None = None) -> ControlRecord:
        return ControlRecord(key_version, type_id, value_version, None, message, key, value)

    if key_version < 0:
        return failed(f"InvalidRecordException: Invalid version found for control record: {key_version}. "
                      "May indicate data corruption")
    known = BY_ID.get(type_id)
    if known is None:
        return ControlRecord(key_version, type_id, None, None, None, key, value)
    if value is None:
        return failed(f"InvalidRecordException: {known.name} control record has a null value")
    if known.schema is None:
        return _end_txn_marker(key_version, type_id, key, value)
    if len(value) < 2:
        return failed(f"InvalidRecordException: {known.schema.name} of {len(value)} bytes has no version")
    version = _VERSION.unpack_from(value)[0]
    if version not in known.schema.valid_versions:
        return failed(f"UnsupportedVersionException: Can't read version {version} of {known.schema.name}", version)
    try:
        data, pos = decoder(known.schema, version)(value, 0, [])
    except DECODE_ERRORS as exc:
        return failed(f"InvalidRecordException: {known.schema.name} v{version}: {locate(exc)}", version)
    if pos != len(value):
        return failed(f"InvalidRecordException: Found {len(value) - pos} byte(s) of garbage after "
                      f"{known.schema.name} v{version} (body ends at byte {pos})", version)
    return ControlRecord(key_version, type_id, version, data, None, key, value)


def _end_txn_marker(key_version: int, type_id: int, key: bytes, value: bytes) -> ControlRecord:
    if len(value) < _END_TXN.size:
        return ControlRecord(key_version, type_id, None, None, "InvalidRecordException: Invalid end transaction "
                             f"marker of {len(value)} bytes, expected {_END_TXN.size}", key, value)
    version, coordinator_epoch = _END_TXN.unpack_from(value)
    if version < 0:
        error = f"InvalidRecordException: Invalid version found for end transaction marker: {version}. " \
                "May indicate data corruption"
    elif version == 0 and len(value) != _END_TXN.size:
        error = f"InvalidRecordException: Found {len(value) - _END_TXN.size} byte(s) of garbage after " \
                "end transaction marker v0"
    else:
        error = None
    data = None if error else {"version": version, "coordinatorEpoch": coordinator_epoch}
    return ControlRecord(key_version, type_id, version, data, error, key, value)


def encode_control(type_or_id: int | str, data: dict, key_version: int = 0) -> tuple[bytes, bytes]:
    """Key and value bytes of a control record; ``data`` as ``ControlRecord.data`` (its
    ``version`` picks the schema version). Raises ValueError on data that does not fit."""
    known = BY_ID.get(type_or_id) if isinstance(type_or_id, int) else BY_NAME.get(type_or_id)
    if known is None:
        raise ValueError(f"unknown control record type {type_or_id!r}")
    key = _KEY.pack(key_version, known.id)
    version = data.get("version", 0)
    if known.schema is not None and version not in known.schema.valid_versions:
        raise ValueError(f"{known.schema.name} has no version {version}")
    try:
        if known.schema is None:
            return key, _END_TXN.pack(version, data.get("coordinatorEpoch", 0))
        out = bytearray()
        encoder(known.schema, version)(data, out, {}, "")
    except ENCODE_ERRORS as exc:
        raise ValueError(f"{known.name}: {locate(exc)}") from None
    return key, bytes(out)
