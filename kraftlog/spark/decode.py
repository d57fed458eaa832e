"""A file's bytes as Arrow rows for Spark: its records, batches, skipped regions, a summary, and
digests of its offset blocks (so that node copies are compared without shuffling every record).

Every row has ``file_id`` and ``row_kind``; the other columns belong to one kind and are null
elsewhere. A record row carries its batch's header fields too, so that the many one-record
batches of a quiet log cost one row, not two. Record values are decoded once per distinct value
(a NoOp is decoded once per worker) and spread to their rows with Arrow ``take``: no Python object
per record crosses into the JVM.
"""

import json
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from kraftlog.files.reader import Limits
from kraftlog.schema import decode_control, decode_metadata, entity_of, redact
from kraftlog.schema.render import b64, jsonable
from kraftlog.spark.walk import Walk, walk
from kraftlog.wire.batch import CONTROL_BIT

RECORD, BATCH, REGION, FILE, BLOCK = "record", "batch", "region", "file", "block"
#: Offsets per block digest; copies whose digests agree on a block are not compared record by record.
BLOCK_OFFSETS = 4096
_ROWS = 65536

_RUN = pa.struct([("lo", pa.int64()), ("hi", pa.int64())])
DECODED = pa.schema([
    ("file_id", pa.int32()),
    ("row_kind", pa.string()),
    # batch header (record and batch rows); position is also a region's
    ("position", pa.int64()),
    ("base_offset", pa.int64()),
    ("last_offset", pa.int64()),
    ("batch_length", pa.int32()),
    ("epoch", pa.int32()),
    ("magic", pa.int8()),
    ("crc", pa.int64()),
    ("crc_valid", pa.bool_()),
    ("attributes", pa.int16()),
    ("base_timestamp", pa.int64()),
    ("max_timestamp", pa.int64()),
    ("producer_id", pa.int64()),
    ("producer_epoch", pa.int16()),
    ("base_sequence", pa.int32()),
    ("records_count", pa.int32()),
    ("is_control", pa.bool_()),
    ("batch_error", pa.string()),
    ("first_in_batch", pa.bool_()),
    # record
    ("offset", pa.int64()),
    ("timestamp", pa.int64()),
    ("record_type", pa.string()),
    ("version", pa.int16()),
    ("payload", pa.string()),  # the record's data as JSON, secrets redacted
    ("data_json", pa.string()),  # unredacted, only where redaction changed something (replay needs it)
    ("unknown_tags", pa.string()),
    ("error", pa.string()),
    ("topic_id", pa.string()),
    ("topic_name", pa.string()),
    ("partition_id", pa.int32()),
    ("broker_id", pa.int32()),
    ("resource_type", pa.string()),
    ("resource_name", pa.string()),
    # region
    ("region_length", pa.int64()),
    ("region_reason", pa.string()),
    ("region_detail", pa.string()),
    # file summary
    ("runs", pa.list_(_RUN)),
    ("batches", pa.int64()),
    ("records", pa.int64()),
    ("first_offset", pa.int64()),
    ("last_offset_in_file", pa.int64()),
    ("first_timestamp", pa.int64()),
    ("last_timestamp", pa.int64()),
    ("last_epoch", pa.int32()),
    ("invalid_batches", pa.int64()),
    ("skipped_bytes", pa.int64()),
    ("snapshot_timestamp", pa.int64()),
    # block digest
    ("block", pa.int64()),
    ("block_digest", pa.int64()),
    ("block_lo", pa.int64()),
    ("block_hi", pa.int64()),
    ("block_batches", pa.int64()),
])
_VALUE_COLUMNS = ("record_type", "version", "payload", "data_json", "unknown_tags", "error",
                  "topic_id", "topic_name", "partition_id", "broker_id", "resource_type", "resource_name")
_HEADER_COLUMNS = {  # decoded column -> BatchHeader field
    "base_offset": "baseOffset", "batch_length": "batchLength", "epoch": "partitionLeaderEpoch", "magic": "magic",
    "crc": "crc", "attributes": "attributes", "base_timestamp": "baseTimestamp", "max_timestamp": "maxTimestamp",
    "producer_id": "producerId", "producer_epoch": "producerEpoch", "base_sequence": "baseSequence",
    "records_count": "recordsCount",
}


def _dumps(value) -> str:
    return json.dumps(jsonable(value), separators=(",", ":"), ensure_ascii=False)


def decode_value(control: bool, key: bytes | None, value: bytes | None) -> tuple:
    """The ``_VALUE_COLUMNS`` of one record, decoded by the schema layer."""
    if control:
        rec = decode_control(key, value)
        data = rec.to_json().get("data") if rec.error is None else None
        payload = None if rec.error is not None else _dumps(data)
        return (rec.type, rec.value_version, payload, None, None, rec.error) + (None,) * 6
    rec = decode_metadata(value)
    if rec.error is not None:
        return (rec.type, rec.version, None, None, None, rec.error) + (None,) * 6
    shown = redact(rec)
    tags = _dumps([{"path": p, "tag": t, "data": b64(raw)} for p, t, raw in rec.unknown_tags]) \
        if rec.unknown_tags else None
    e = entity_of(rec)
    return (rec.type, rec.version, _dumps(shown.data), None if shown is rec else _dumps(rec.data), tags, None,
            e["topic_id"], e["topic_name"], e["partition_id"], e["broker_id"], e["resource_type"],
            e["resource_name"])


_decoded: dict[tuple, tuple] = {}  # (control, key, value) -> decode_value, small values only


def _values(w: Walk, control: np.ndarray) -> tuple[dict[str, pa.Array], np.ndarray]:
    """Decoded columns of the distinct (value, control) pairs, and each record's row among them."""
    keys = w.rec_kv * 2 + control
    uniq, inverse = np.unique(keys, return_inverse=True)
    rows = []
    for k in uniq.tolist():
        key, value = w.kv[k >> 1]
        memo_key = (k & 1, key, value)
        row = _decoded.get(memo_key)
        if row is None:
            row = decode_value(bool(k & 1), key, value)
            if value is None or len(value) <= 256:
                if len(_decoded) >= 8192:
                    _decoded.clear()
                _decoded[memo_key] = row
        rows.append(row)
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(_VALUE_COLUMNS)
    arrays = {name: pa.array(col, DECODED.field(name).type) for name, col in zip(_VALUE_COLUMNS, columns, strict=True)}
    return arrays, inverse


def _rows(n: int, file_id: int, kind: str, columns: dict) -> pa.RecordBatch:
    """A batch of the ``DECODED`` schema; columns not given are null."""
    arrays = []
    for f in DECODED:
        if f.name == "file_id":
            arrays.append(pa.repeat(pa.scalar(file_id, pa.int32()), n))
        elif f.name == "row_kind":
            arrays.append(pa.repeat(pa.scalar(kind, pa.string()), n))
        elif f.name in columns:
            arrays.append(pa.array(columns[f.name], f.type))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=DECODED)


def _batch_columns(w: Walk) -> dict[str, np.ndarray | list]:
    h = w.header
    cols: dict = {name: h[field] for name, field in _HEADER_COLUMNS.items()}
    cols["position"] = w.positions
    cols["last_offset"] = h["baseOffset"] + h["lastOffsetDelta"]
    cols["crc_valid"] = w.crc_valid
    cols["is_control"] = (h["attributes"] & CONTROL_BIT) != 0
    cols["batch_error"] = w.errors
    return cols


def _take(column, index: np.ndarray):
    if isinstance(column, np.ndarray):
        return column[index]
    return pa.array(column, pa.string()).take(pa.array(index))


def _record_rows(file_id: int, w: Walk, batch: dict) -> Iterator[pa.RecordBatch]:
    n = len(w.rec_offset)
    if not n:
        return
    values, inverse = _values(w, batch["is_control"][w.rec_batch].astype(np.int64))
    first = np.ones(n, bool)
    first[1:] = w.rec_batch[1:] != w.rec_batch[:-1]
    for lo in range(0, n, _ROWS):
        sl = slice(lo, min(n, lo + _ROWS))
        idx = w.rec_batch[sl]
        take = pa.array(inverse[sl])
        cols = {name: _take(col, idx) for name, col in batch.items()}
        cols.update({name: arr.take(take) for name, arr in values.items()})
        cols.update(offset=w.rec_offset[sl], timestamp=w.rec_timestamp[sl], first_in_batch=first[sl])
        yield _rows(sl.stop - lo, file_id, RECORD, cols)


def _digest(base: np.ndarray, last: np.ndarray, epoch: np.ndarray, crc: np.ndarray) -> np.ndarray:
    """A 64-bit mix of each batch's identity: offsets, leader epoch and CRC (so: its bytes)."""
    x = base.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    x ^= last.astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
    x ^= epoch.astype(np.int64).astype(np.uint64) * np.uint64(0x165667B19E3779F9)
    x ^= crc.astype(np.uint64) * np.uint64(0x27D4EB2F165667C5)
    x ^= x >> np.uint64(31)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(29)
    return x


class _Summary:
    """What the file row and block rows say, accumulated over a file's walks."""

    def __init__(self) -> None:
        self.runs: list[list[int]] = []
        self.batches = self.records = self.invalid = self.skipped = 0
        self.first_offset = self.last_offset = self.first_ts = self.last_ts = self.last_epoch = None
        self.snapshot_ts = None
        self.blocks: dict[int, list[int]] = {}  # block -> [digest, lo, hi, batches]

    def add(self, w: Walk, batch: dict, blocks: bool) -> None:
        self.skipped += sum(r.length for r in w.regions)
        self.records += len(w.rec_offset)
        if not w.count:
            return
        base, last = batch["base_offset"], batch["last_offset"]
        self.batches += w.count
        self.invalid += int((~w.crc_valid).sum())
        if self.first_offset is None:
            self.first_offset, self.first_ts = int(base[0]), int(batch["max_timestamp"][0])
        self.last_offset, self.last_ts = int(last[-1]), int(batch["max_timestamp"][-1])
        self.last_epoch = int(batch["epoch"][-1])
        breaks = np.flatnonzero(base[1:] != last[:-1] + 1) + 1
        starts = np.concatenate([[0], breaks])
        ends = np.concatenate([breaks - 1, [w.count - 1]])
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            lo, hi = int(base[s]), int(last[e])
            if self.runs and self.runs[-1][1] + 1 == lo:
                self.runs[-1][1] = hi
            else:
                self.runs.append([lo, hi])
        if blocks:
            self._blocks(base, last, batch["epoch"], batch["crc"])

    def _blocks(self, base, last, epoch, crc) -> None:
        block = base // BLOCK_OFFSETS
        order = np.argsort(block, kind="stable")
        block, digest = block[order], _digest(base, last, epoch, crc)[order]
        lo_, hi_ = base[order], last[order]
        starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
        xor = np.bitwise_xor.reduceat(digest, starts)
        lo = np.minimum.reduceat(lo_, starts)
        hi = np.maximum.reduceat(hi_, starts)
        count = np.diff(np.r_[starts, len(block)])
        for b, x, a, z, c in zip(block[starts].tolist(), xor.tolist(), lo.tolist(), hi.tolist(), count.tolist(),
                                 strict=True):
            acc = self.blocks.setdefault(b, [0, a, z, 0])
            acc[0] ^= x
            acc[1], acc[2], acc[3] = min(acc[1], a), max(acc[2], z), acc[3] + c

    def note_snapshot_header(self, values: dict[str, pa.Array]) -> None:
        if self.snapshot_ts is not None:
            return
        types = values["record_type"].to_pylist()
        if "SNAPSHOT_HEADER" in types:
            payload = values["payload"][types.index("SNAPSHOT_HEADER")].as_py()
            self.snapshot_ts = json.loads(payload).get("lastContainedLogTimestamp") if payload else None

    def rows(self, file_id: int) -> Iterator[pa.RecordBatch]:
        yield _rows(1, file_id, FILE, {
            "runs": [[{"lo": lo, "hi": hi} for lo, hi in self.runs]], "batches": [self.batches],
            "records": [self.records], "first_offset": [self.first_offset], "last_offset_in_file": [self.last_offset],
            "first_timestamp": [self.first_ts], "last_timestamp": [self.last_ts], "last_epoch": [self.last_epoch],
            "invalid_batches": [self.invalid], "skipped_bytes": [self.skipped],
            "snapshot_timestamp": [self.snapshot_ts]})
        if self.blocks:
            keys = sorted(self.blocks)
            d, lo, hi, n = (list(c) for c in zip(*(self.blocks[k] for k in keys), strict=True))
            digest = np.asarray(d, np.uint64).view(np.int64)
            yield _rows(len(keys), file_id, BLOCK, {"block": keys, "block_digest": digest, "block_lo": lo,
                                                    "block_hi": hi, "block_batches": n})


def decode_file(file_id: int, kind: str, buf: bytes, limits: Limits = Limits()) -> Iterator[pa.RecordBatch]:
    """Rows of the ``DECODED`` schema for one segment, snapshot or bootstrap file's bytes."""
    summary = _Summary()
    for w in walk(buf, limits):
        batch = _batch_columns(w)
        for rb in _record_rows(file_id, w, batch):
            if kind != "segment":
                summary.note_snapshot_header({"record_type": rb.column("record_type"),
                                              "payload": rb.column("payload")})
            yield rb
        empty = np.flatnonzero(np.bincount(w.rec_batch, minlength=w.count) == 0)
        if empty.size:
            yield _rows(len(empty), file_id, BATCH, {name: _take(col, empty) for name, col in batch.items()})
        if w.regions:
            yield _rows(len(w.regions), file_id, REGION, {
                "position": [r.position for r in w.regions], "region_length": [r.length for r in w.regions],
                "region_reason": [r.reason for r in w.regions], "region_detail": [r.detail for r in w.regions]})
        summary.add(w, batch, blocks=kind == "segment")
    yield from summary.rows(file_id)
