"""Line renderers for ``kraftlog dump``: the golden JSON-lines schema and kafka-dump-log's text."""

import base64
import json
from datetime import UTC, datetime

from kraftlog.files.paths import LogFile
from kraftlog.files.reader import Region
from kraftlog.schema.redact import redacted_bytes
from kraftlog.wire.batch import Batch, Record
from kraftlog.wire.text import printable


class TerminalSafe:
    """A text stream that escapes control characters (``printable(lines=True)``) in what is written
    through it: the one gate every command's stdout and stderr pass, so escape sequences from a log
    never reach a terminal. JSON stays valid (``\\uXXXX`` is JSON's own escape); ``unescaped`` is
    the stream itself, for the progress bar's own sequences."""

    def __init__(self, stream) -> None:
        self.unescaped = stream

    def write(self, s: str) -> int:
        self.unescaped.write(printable(s, lines=True))
        return len(s)

    def __getattr__(self, name: str):
        return getattr(self.unescaped, name)


def _b64(blob: bytes | None) -> str | None:
    return None if blob is None else base64.b64encode(blob).decode()


#: 10000-01-01T00:00:00Z: Python's dates end before it, a corrupt or hostile timestamp need not.
_YEAR_10000_MS = 253_402_300_800_000


def iso_time(ms: int | None) -> str | None:
    """UTC time with milliseconds, or None for the unset timestamps (-1, 0) Kafka writes."""
    if ms is None or ms <= 0:
        return None
    if ms >= _YEAR_10000_MS:
        return f"{ms} ms (after year 9999)"
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
#: What ``json.dumps`` builds on every call (its C encoder, with the arguments ``JSONEncoder.iterencode``
#: gives it), built once: a dump writes a line per batch and per record. Without ``_json``, dumps itself.
_C_ENCODE = json.encoder.c_make_encoder and json.encoder.c_make_encoder(
    None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, True)


def dumps(obj: dict) -> str:
    """Compact JSON, as ``json.dumps(obj, separators=(",", ":"), ensure_ascii=False)`` writes it."""
    if _C_ENCODE is None:
        return _ENCODER.encode(obj)
    return "".join(_C_ENCODE(obj, 0))


def batch_json(b: Batch) -> dict:
    return {
        "kind": "batch",
        "position": b.position,
        "baseOffset": b.base_offset,
        "lastOffset": b.last_offset,
        "count": b.records_count,
        "size": b.size,
        "magic": b.magic,
        "crc": b.crc,
        "isValid": b.is_valid,
        "compression": b.compression_name,
        "timestampType": b.timestamp_type,
        "isTransactional": b.is_transactional,
        "isControl": b.is_control,
        "deleteHorizonMs": b.delete_horizon_ms,
        "partitionLeaderEpoch": b.partition_leader_epoch,
        "producerId": b.producer_id,
        "producerEpoch": b.producer_epoch,
        "baseSequence": b.base_sequence,
        "lastSequence": b.last_sequence,
        "firstTimestamp": b.base_timestamp,
        "maxTimestamp": b.max_timestamp,
    }


def record_json(b: Batch, r: Record, payload: tuple[str, object] | None, hidden: bool = False) -> dict:
    """``payload`` is ("control"|"metadata", object), or None for raw key/value; a ``hidden`` raw
    value is shown as ``redacted_bytes``."""
    out = {
        "kind": "record",
        "offset": r.offset,
        "timestamp": r.timestamp,
        "keySize": -1 if r.key is None else len(r.key),
        "valueSize": -1 if r.value is None else len(r.value),
        "sequence": b.record_sequence(r),
        "headers": [[k.decode("utf-8", "replace"), _b64(v)] for k, v in r.headers],
    }
    if payload is None or payload[0] == "error":
        out["key"] = _b64(r.key)
        out["value"] = redacted_bytes(len(r.value)) if hidden and r.value is not None else _b64(r.value)
        if payload is not None:
            out["error"] = payload[1]
    else:
        out[payload[0]] = payload[1]
    return out


def region_json(region: Region) -> dict:
    return {
        "kind": "error",
        "scope": "walk",
        "position": region.position,
        "length": region.length,
        "reason": region.reason,
        "error": f"{'InvalidRecordException' if region.reason == 'corrupt' else 'Skipped'}: {region.detail}",
    }


def batch_error_json(b: Batch) -> dict:
    return {
        "kind": "error",
        "scope": "batch",
        "position": b.position,
        "baseOffset": b.base_offset,
        "error": b.error,
    }


# --- kafka-dump-log text (reference §7.1) ---------------------------------------------------


def file_header_text(f: LogFile) -> list[str]:
    lines = [f"Dumping {printable(str(f.path))}"]
    if f.kind == "segment":
        lines.append(f"Log starting offset: {f.offset}")
    elif f.kind == "snapshot":
        lines.append(f"Snapshot end offset: {f.offset}, epoch: {f.epoch}")
    elif f.kind == "bootstrap":
        lines.append("KRaft bootstrap snapshot")
    return lines


def _bool(v: bool) -> str:
    return "true" if v else "false"


def batch_text(b: Batch) -> str:
    horizon = b.delete_horizon_ms
    return (
        f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.records_count} "
        f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} producerId: {b.producer_id} "
        f"producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.partition_leader_epoch} "
        f"isTransactional: {_bool(b.is_transactional)} isControl: {_bool(b.is_control)} "
        f"deleteHorizonMs: {'OptionalLong.empty' if horizon is None else f'OptionalLong[{horizon}]'} "
        f"position: {b.position} {b.timestamp_type}: {b.max_timestamp} size: {b.size} magic: {b.magic} "
        f"compresscodec: {b.compression_name} crc: {b.crc} isvalid: {_bool(b.is_valid)}"
    )


def record_text(b: Batch, r: Record, payload_text: str) -> str:
    keys = ",".join(k.decode("utf-8", "replace") for k, _ in r.headers)
    return (
        f"| offset: {r.offset} {b.timestamp_type}: {r.timestamp} "
        f"keySize: {-1 if r.key is None else len(r.key)} valueSize: {-1 if r.value is None else len(r.value)} "
        f"sequence: {b.record_sequence(r)} headerKeys: [{keys}]{payload_text}"
    )


def raw_payload_text(r: Record, hidden: bool = False) -> str:
    key = "null" if r.key is None else r.key.decode("utf-8", "replace")
    value = "null" if r.value is None else redacted_bytes(len(r.value)) if hidden else r.value.decode("utf-8", "replace")
    return f" key: {key} payload: {value}"
