"""Arrow decoding of one file's bytes, in the passes the job makes over its inputs.

``read_file``: every batch of every copy written as ``batches`` rows, the notes the driver plans
with (offset runs, block digests, skipped regions), and the records of the copy likely to supply
its cluster's log staged (``decoded``, with notes of transaction markers and topic names).
``decode_file`` stages those of another copy's file at the offsets it turns out to supply.
``seed_file``: the records of a snapshot a timeline starts from, as events. ``finish_records``: the
``records`` table and the timelines' events from the staged records of the offsets a file
supplies, once every file's markers and names are known.

Record values are decoded once per distinct value (a NoOp once per worker) and spread to their rows
with Arrow ``take``: no Python object per record, and no row crosses into the JVM.
"""

import json
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kraftlog.files.reader import Limits, too_many_records
from kraftlog.files.storage import Source, Stat, StorageError
from kraftlog.files.walk import Walk, distinct, overlaps, walk
from kraftlog.schema import decode_control, decode_metadata, entity_of, redact
from kraftlog.schema.records import tags_json
from kraftlog.schema.render import b64
from kraftlog.spark.entities import REPLAYED_TYPES
from kraftlog.spark.events import EVENTS, EVENTS_TABLE, SOURCE, controller_rows, routed
from kraftlog.spark.sink import Parts, Sink, read_staged
from kraftlog.spark.transactions import COMMITTED
from kraftlog.state.image import ABORT, BEGIN, END
from kraftlog.wire.batch import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    decode_batch_at,
)
from kraftlog.wire.codecs import CODEC_NAMES

#: Offsets per block digest: copies whose digests agree on a block are not compared batch by batch.
BLOCK_OFFSETS = 4096
MARKERS = (BEGIN, END, ABORT)
_ROWS = 65536
_MS = pa.timestamp("ms", tz="UTC")
_WHERE = [("log_dir", pa.string()), ("node_id", pa.int32()), ("file", pa.string())]

#: The ``batches`` table (``cluster_id`` is its partition folder).
BATCHES = pa.schema([
    *_WHERE, ("file_kind", pa.string()), ("position", pa.int64()), ("base_offset", pa.int64()),
    ("last_offset", pa.int64()), ("batch_length", pa.int32()), ("leader_epoch", pa.int32()), ("magic", pa.int8()),
    ("crc", pa.int64()), ("crc_valid", pa.bool_()), ("attributes", pa.int16()), ("compression", pa.string()),
    ("timestamp_type", pa.string()), ("is_transactional", pa.bool_()), ("is_control", pa.bool_()),
    ("base_timestamp", pa.int64()), ("max_timestamp", pa.int64()), ("max_time", _MS), ("producer_id", pa.int64()),
    ("producer_epoch", pa.int16()), ("base_sequence", pa.int32()), ("records_count", pa.int32()),
    ("run_id", pa.string()),
])
_VALUES = [("record_type", pa.string()), ("version", pa.int16()), ("payload", pa.string()),
           ("data_json", pa.string()), ("unknown_tags", pa.string()), ("error", pa.string()),
           ("topic_id", pa.string()), ("topic_name", pa.string()), ("partition_id", pa.int32()),
           ("broker_id", pa.int32()), ("resource_type", pa.string()), ("resource_name", pa.string())]
#: Decoded records of one file, staged for ``finish_records`` and the timelines.
DECODED = pa.schema([
    ("file_id", pa.int32()), ("position", pa.int64()), ("base_offset", pa.int64()), ("epoch", pa.int32()),
    ("crc_valid", pa.bool_()), ("is_control", pa.bool_()), ("offset", pa.int64()), ("timestamp", pa.int64()),
    *_VALUES,
])
#: The ``records`` table (``cluster_id`` is its partition folder).
RECORDS = pa.schema([
    *_WHERE, ("offset", pa.int64()), ("batch_position", pa.int64()), ("batch_base_offset", pa.int64()),
    ("timestamp", pa.int64()), ("time", _MS), ("leader_epoch", pa.int32()), ("is_control", pa.bool_()),
    *(f for f in _VALUES if f[0] != "data_json"), ("crc_valid", pa.bool_()),
    ("txn_begin_offset", pa.int64()), ("txn_state", pa.string()), ("run_id", pa.string()),
])


class FileMeta(NamedTuple):
    """What a task needs to know about the file it decodes."""

    file_id: int
    cluster_id: str
    node_id: int | None
    log_dir: str
    file: str
    kind: str
    seen: Stat | None = None  # what discovery saw of it: a task reads it only while it is still that


Note = tuple[int, str, str]  # (file_id, kind, JSON body): what a task tells the driver


def _b64(value) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return b64(bytes(value))
    raise TypeError(f"{type(value).__name__} is not JSON")


#: ``json.dumps(jsonable(value))`` without walking the tree first: the C encoder asks only for bytes.
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_b64).encode


def decode_value(control: bool, key: bytes | None, value: bytes | None) -> tuple:
    """The decoded columns (``_VALUES``) of one record, by the schema layer."""
    if control:
        rec = decode_control(key, value)
        if rec.error is not None:
            return (rec.type, rec.value_version, None, None, None, rec.error) + (None,) * 6
        return (rec.type, rec.value_version, _dumps(rec.to_json().get("data")), None, None, None) + (None,) * 6
    rec = decode_metadata(value)
    if rec.error is not None:
        return (rec.type, rec.version, None, None, None, rec.error) + (None,) * 6
    shown = redact(rec)
    tags = _dumps(tags_json(shown.unknown_tags)) if shown.unknown_tags else None  # secrets' bytes redacted
    e = entity_of(rec)
    return (rec.type, rec.version, _dumps(shown.data), None if shown is rec else _dumps(rec.data), tags, None,
            e["topic_id"], e["topic_name"], e["partition_id"], e["broker_id"], e["resource_type"],
            e["resource_name"])


_decoded: dict[tuple, tuple] = {}  # (control, key, value) -> decode_value, for small values
#: Values remembered by a worker: a busy log repeats its partition changes across segments (8 of
#: the bench fleet's: 8192 entries read them in 2.5 s, 65536 in 2.1 s), at some 1 KB an entry.
_DECODED_MAX_ENTRIES = 1 << 16


def _values(w: Walk, control: np.ndarray) -> tuple[dict[str, pa.Array], np.ndarray]:
    """Decoded columns of the distinct (value, control) pairs, and each record's row among them."""
    uniq, inverse = distinct(w.rec_kv * 2 + control, 2 * len(w.kv))
    rows = []
    for k in uniq.tolist():
        key, value = w.kv[k >> 1]
        memo = (k & 1, key, value)
        row = _decoded.get(memo)
        if row is None:
            row = decode_value(bool(k & 1), key, value)
            if value is None or len(value) <= 256:
                if len(_decoded) >= _DECODED_MAX_ENTRIES:
                    _decoded.clear()
                _decoded[memo] = row
        rows.append(row)
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(_VALUES)
    return {name: pa.array(col, t) for (name, t), col in zip(_VALUES, columns, strict=True)}, inverse


def _batch_rows(meta: FileMeta, w: Walk, run_id: str) -> pa.RecordBatch:
    h, n = w.header, w.count
    attributes = h["attributes"]
    codec = attributes & COMPRESSION_MASK
    names = pa.array([CODEC_NAMES.get(c, f"unknown({c})") for c in range(8)])

    def const(value, t):
        return pa.repeat(pa.scalar(value, t), n)

    max_ts = h["maxTimestamp"]
    return pa.RecordBatch.from_arrays([
        const(meta.log_dir, pa.string()), const(meta.node_id, pa.int32()), const(meta.file, pa.string()),
        const(meta.kind, pa.string()), pa.array(w.positions), pa.array(h["baseOffset"]),
        pa.array(h["baseOffset"] + h["lastOffsetDelta"]), pa.array(h["batchLength"]),
        pa.array(h["partitionLeaderEpoch"]), pa.array(h["magic"]), pa.array(h["crc"].astype(np.int64)),
        pa.array(w.crc_valid), pa.array(attributes), names.take(pa.array(codec)),
        pc.if_else(pa.array((attributes & TIMESTAMP_TYPE_BIT) != 0), "LogAppendTime", "CreateTime"),
        pa.array((attributes & TRANSACTIONAL_BIT) != 0), pa.array((attributes & CONTROL_BIT) != 0),
        pa.array(h["baseTimestamp"]), pa.array(max_ts), _time(max_ts),
        pa.array(h["producerId"]), pa.array(h["producerEpoch"]), pa.array(h["baseSequence"]),
        pa.array(h["recordsCount"]), const(run_id, pa.string()),
    ], schema=BATCHES)


def _time(ms: np.ndarray) -> pa.Array:
    """Kafka's unset timestamps (-1, 0) are null times."""
    return pa.array(ms, _MS, mask=ms <= 0)


def _record_rows(file_id: int, w: Walk, keep: np.ndarray | None = None, redact: bool = True
                 ) -> Iterable[pa.RecordBatch]:
    """The decoded records of a walk (only those ``keep`` selects), in batches of ``DECODED``. With
    ``redact`` the unredacted data (``data_json``) is never kept: staging (a killed run's folder, a
    task's spill) holds no secret in clear unless the run was asked to write secrets."""
    idx = np.arange(len(w.rec_offset)) if keep is None else np.flatnonzero(keep)
    if not idx.size:
        return
    h = w.header
    control = (h["attributes"] & CONTROL_BIT) != 0
    values, inverse = _values(w, control[w.rec_batch].astype(np.int64))
    for lo in range(0, idx.size, _ROWS):
        rows = idx[lo : lo + _ROWS]
        b = w.rec_batch[rows]
        yield pa.RecordBatch.from_arrays([
            pa.repeat(pa.scalar(file_id, pa.int32()), rows.size), pa.array(w.positions[b]),
            pa.array(h["baseOffset"][b]), pa.array(h["partitionLeaderEpoch"][b]), pa.array(w.crc_valid[b]),
            pa.array(control[b]), pa.array(w.rec_offset[rows]), pa.array(w.rec_timestamp[rows]),
            *(pa.nulls(rows.size, t) if redact and name == "data_json" else values[name].take(pa.array(inverse[rows]))
              for name, t in _VALUES),
        ], schema=DECODED)


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
    """What a file's scan tells the driver, accumulated over its walks."""

    def __init__(self, meta: FileMeta) -> None:
        self.meta = meta
        self.runs: list[list[int]] = []
        self.info = {"batches": 0, "records": 0, "invalid_batches": 0, "skipped_bytes": 0, "first_offset": None,
                     "last_offset": None, "first_timestamp": None, "last_timestamp": None, "last_epoch": None,
                     "snapshot_timestamp": None}
        self.blocks: dict[int, list[int]] = {}  # block -> [digest, lo, hi, batches]
        self.notes: list[Note] = []

    def note(self, kind: str, body) -> None:
        self.notes.append((self.meta.file_id, kind, json.dumps(body)))

    def add(self, w: Walk) -> None:
        info, h = self.info, w.header
        for r in w.regions:
            info["skipped_bytes"] += r.length
            self.note("region", {"position": r.position, "length": r.length, "reason": r.reason, "detail": r.detail})
        if not w.count:
            return
        base, last = h["baseOffset"], h["baseOffset"] + h["lastOffsetDelta"]
        for i in np.flatnonzero(~w.crc_valid).tolist():
            self.note("invalid", {"position": int(w.positions[i]), "offset": int(base[i]),
                                  "length": int(h["batchLength"][i]) + LOG_OVERHEAD})
        info["batches"] += w.count
        info["records"] += int(h["recordsCount"].clip(min=0).sum())
        info["invalid_batches"] += int((~w.crc_valid).sum())
        if info["first_offset"] is None:
            info["first_offset"], info["first_timestamp"] = int(base[0]), int(h["maxTimestamp"][0])
        info["last_offset"], info["last_timestamp"] = int(last[-1]), int(h["maxTimestamp"][-1])
        info["last_epoch"] = int(h["partitionLeaderEpoch"][-1])
        breaks = np.flatnonzero(base[1:] != last[:-1] + 1) + 1
        for s, e in zip(np.r_[0, breaks].tolist(), np.r_[breaks - 1, w.count - 1].tolist(), strict=True):
            lo, hi = int(base[s]), int(last[e])
            if self.runs and self.runs[-1][1] + 1 == lo:
                self.runs[-1][1] = hi
            else:
                self.runs.append([lo, hi])
        if self.meta.kind == "segment":
            self._blocks(base, last, h["partitionLeaderEpoch"], h["crc"])

    def _blocks(self, base, last, epoch, crc) -> None:
        block = base // BLOCK_OFFSETS
        order = np.argsort(block, kind="stable")
        block, digest, lo_, hi_ = block[order], _digest(base, last, epoch, crc)[order], base[order], last[order]
        starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
        for b, x, a, z, c in zip(block[starts].tolist(), np.bitwise_xor.reduceat(digest, starts).tolist(),
                                 np.minimum.reduceat(lo_, starts).tolist(), np.maximum.reduceat(hi_, starts).tolist(),
                                 np.diff(np.r_[starts, len(block)]).tolist(), strict=True):
            acc = self.blocks.setdefault(b, [0, a, z, 0])
            acc[0] ^= x
            acc[1], acc[2], acc[3] = min(acc[1], a), max(acc[2], z), acc[3] + c

    def finish(self) -> list[Note]:
        self.note("file", {**self.info, "runs": self.runs})
        for b, (digest, lo, hi, n) in sorted(self.blocks.items()):
            self.note("block", {"block": b, "digest": digest, "lo": lo, "hi": hi, "batches": n})
        return self.notes


def _errors(meta: FileMeta, w: Walk, out: list[Note]) -> None:
    for i, error in enumerate(w.errors):
        if error is not None:
            out.append((meta.file_id, "batch-error", json.dumps({
                "position": int(w.positions[i]), "offset": int(w.header["baseOffset"][i]),
                "length": int(w.header["batchLength"][i]) + LOG_OVERHEAD, "detail": error})))


def _unreadable(meta: FileMeta, e: StorageError) -> Note:
    """A file that could not be read, or not to its end, as the one line that says why (whether it
    vanished, changed since it was listed, changed while read, or cannot be opened)."""
    return (meta.file_id, "unreadable", json.dumps({"detail": str(e).removeprefix(f"{meta.file}: ")}))


def read_file(meta: FileMeta, buf: bytes | Source, batches: Parts, root: str, run_id: str, limits: Limits = Limits(),
              records: bool = True, redact: bool = True) -> list[Note]:
    """Pass one, over every file of every copy: its batches into ``batches`` (the task's file of its
    cluster). With ``records``, a segment's records go to the ``decoded`` staging table (see
    ``_Decoded``); without, that waits for ``decode_file``, if the file supplies offsets. A
    snapshot's records are decoded only if a timeline starts from it (``seed_file``). A file that
    cannot be read (to its end) is an ``unreadable`` note; what was read of it before counts."""
    summary = _Summary(meta)
    rows = batches.of(meta.cluster_id)
    decoded = _Decoded(root, meta, redact) if meta.kind == "segment" and records else None
    try:
        for w in walk(buf, limits, want=None if decoded else []):
            rows.write(_batch_rows(meta, w, run_id))
            summary.add(w)
            if decoded is not None:
                decoded.add(w, summary.notes)
            elif meta.kind != "segment" and w.count and summary.info["snapshot_timestamp"] is None:
                summary.info["snapshot_timestamp"] = _header_timestamp(buf, int(w.positions[0]), limits)
    except StorageError as e:
        summary.notes.append(_unreadable(meta, e))
    if decoded is not None:
        decoded.close()
    return summary.finish()


def decode_file(meta: FileMeta, buf: bytes | Source, want: list[tuple[int, int]], root: str,
                limits: Limits = Limits(), redact: bool = True) -> list[Note]:
    """The records of a segment that ``read_file`` left undecoded, at the offsets it supplies."""
    notes: list[Note] = []
    decoded = _Decoded(root, meta, redact)
    try:
        for w in walk(buf, limits, want=want):
            decoded.add(w, notes, overlaps(w.rec_offset, w.rec_offset, want))
    except StorageError as e:
        notes.append(_unreadable(meta, e))
    decoded.close()
    return notes


class _Decoded:
    """A segment's records into the ``decoded`` staging table, with notes of their transaction
    markers, topic names and what could not be decoded (each with its offset: the driver keeps
    those of the offsets the file supplies)."""

    def __init__(self, root: str, meta: FileMeta, redact: bool = True) -> None:
        self.meta, self.redact = meta, redact
        self.sink = Sink(root, "decoded", DECODED, str(meta.file_id), staged=True)

    def add(self, w: Walk, notes: list[Note], keep: np.ndarray | None = None) -> None:
        _errors(self.meta, w, notes)
        for rb in _record_rows(self.meta.file_id, w, keep, self.redact):
            self.sink.write(rb)
            _notes_of(self.meta.file_id, rb, notes)

    def close(self) -> None:
        self.sink.close()


def _header_timestamp(buf: bytes | Source, position: int, limits: Limits) -> int | None:
    """``lastContainedLogTimestamp`` of the SnapshotHeader a snapshot's first batch holds."""
    if isinstance(buf, Source):  # that batch alone (a header batch is bytes long)
        buf, position = buf.read_at(position, min(limits.max_batch_bytes, buf.size - position)), 0
    if too_many_records(int.from_bytes(buf[position + HEADER_SIZE - 4 : position + HEADER_SIZE], "big", signed=True),
                        limits):
        return None
    batch = decode_batch_at(buf, position, position, limits.max_decompressed, verify_crc=False)
    if batch.error is not None or not batch.is_control or not batch.records:
        return None
    r = batch.records[0]
    record_type, _, payload, *_ = decode_value(True, r.key, r.value)
    return json.loads(payload).get("lastContainedLogTimestamp") if record_type == "SNAPSHOT_HEADER" and payload \
        else None


def _notes_of(file_id: int, rb: pa.RecordBatch, notes: list[Note]) -> None:
    types = rb.column("record_type")
    wanted = pc.is_in(types, pa.array([*MARKERS, "TOPIC_RECORD"])).to_numpy(zero_copy_only=False) \
        | pc.is_valid(rb.column("error")).to_numpy(zero_copy_only=False)
    for r in rb.filter(pa.array(wanted)).to_pylist():
        if r["error"] is not None:
            notes.append((file_id, "undecodable", json.dumps({"position": r["position"], "offset": r["offset"],
                                                              "detail": r["error"]})))
        elif r["record_type"] == "TOPIC_RECORD":
            notes.append((file_id, "topic", json.dumps({"topic_id": r["topic_id"], "name": r["topic_name"],
                                                        "offset": r["offset"]})))
        else:
            notes.append((file_id, "marker", json.dumps({"offset": r["offset"], "timestamp": r["timestamp"],
                                                         "record_type": r["record_type"], "payload": r["payload"]})))


#: Bytes of events a task holds unwritten, over all the buckets it writes.
EVENTS_PENDING_BYTES = 32 << 20


def staged_events(root: str, part: str) -> Parts:
    """A task's staged timeline events, one file per bucket it reaches."""
    return Parts(root, EVENTS_TABLE, EVENTS, part, staged=True, column="bucket", pending_bytes=EVENTS_PENDING_BYTES)


def _stage(events: Parts, rows: list[tuple[int, pa.Table]]) -> None:
    for bucket, table in rows:
        for rb in table.to_batches():
            events.write(bucket, rb)


def _source(rb: pa.RecordBatch | pa.Table, eff_offset: pa.Array, offset: pa.Array, seq: pa.Array,
            eff_time: pa.Array) -> pa.Table:
    """``events.SOURCE`` columns of decoded rows: the unredacted data (secrets are hidden when the
    timelines are written, not before the state is folded)."""
    return pa.table({"eff_offset": eff_offset, "offset": offset, "seq": seq, "eff_time": eff_time,
                     "epoch": rb.column("epoch"), "record_type": rb.column("record_type"),
                     "data": pc.coalesce(rb.column("data_json"), rb.column("payload")),
                     **{c: rb.column(c) for c in SOURCE[7:]}})


#: The decoded columns ``_source`` reads.
_SOURCED = ["offset", "timestamp", "epoch", "record_type", "data_json", "payload", *SOURCE[7:]]


def _replayed(rb: pa.RecordBatch) -> np.ndarray:
    """Metadata records some timeline replays."""
    return (pc.is_in(rb.column("record_type"), pa.array(REPLAYED_TYPES)).to_numpy(zero_copy_only=False)
            & pc.is_null(rb.column("error")).to_numpy(zero_copy_only=False)
            & ~rb.column("is_control").to_numpy(zero_copy_only=False))


def seed_file(meta: FileMeta, buf: bytes | Source, seed_offset: int, seed_time: int | None, root: str,
              buckets: int, limits: Limits = Limits(), redact: bool = True) -> list[Note]:
    """A snapshot a cluster's timelines start from: its records as events at its last contained
    offset (in snapshot order); notes of its topic names and what could not be decoded."""
    notes: list[Note] = []
    events = staged_events(root, f"seed-{meta.file_id}")
    try:
        for w in walk(buf, limits):
            _errors(meta, w, notes)
            for rb in _record_rows(meta.file_id, w, redact=redact):
                _notes_of(meta.file_id, rb, notes)
                rb = rb.filter(pa.array(_replayed(rb)))
                n = rb.num_rows
                at = pa.repeat(pa.scalar(seed_offset, pa.int64()), n)
                src = _source(rb, at, at, rb.column("offset"), pa.repeat(pa.scalar(seed_time, pa.int64()), n))
                _stage(events, routed(meta.cluster_id, src, buckets, {}))
    except StorageError as e:
        notes.append(_unreadable(meta, e))
    events.close()
    return notes


def finish_records(meta: FileMeta, root: str, run_id: str, want: list[tuple[int, int]], names: dict[str, str],
                   txns: list[tuple[int, int | None, int | None, str]], ranges: list[tuple[int, int]],
                   redact_payloads: bool, times: list[int], buckets: int, records: Parts, events: Parts
                   ) -> list[Note]:
    """The ``records`` rows of the offsets ``want`` names, from the file's staged records: where they
    come from, the topic name of topic-id records, and the metadata transaction each belongs to
    (``txns``: begin, end, end timestamp, state); the timelines' events of those in the replayable
    ``ranges`` (into ``events``, see ``staged_events``); notes of where leader epochs start and of
    the first record later than each time."""
    sink = records.of(meta.cluster_id)
    written = 0
    epochs: dict[int, tuple[int, int]] = {}
    later: list[int | None] = [None] * len(times)
    for rb in _supplied(read_staged(root, f"decoded/part-{meta.file_id}"), want):
        n = rb.num_rows
        offset = rb.column("offset").to_numpy()
        control = rb.column("is_control").to_numpy(zero_copy_only=False)
        known = _named(rb.column("topic_id"), names)
        begin, end, end_ts, state = _transaction_of(offset, control, txns)
        payload = rb.column("payload")
        if not redact_payloads:
            payload = pc.coalesce(rb.column("data_json"), payload)
        cols = {name: rb.column(name) for name in rb.schema.names}
        topic_name = pc.coalesce(cols["topic_name"], known)
        written += n
        sink.write(pa.RecordBatch.from_arrays([
            pa.repeat(pa.scalar(meta.log_dir), n), pa.repeat(pa.scalar(meta.node_id, pa.int32()), n),
            pa.repeat(pa.scalar(meta.file), n), cols["offset"], cols["position"], cols["base_offset"],
            cols["timestamp"], _time(rb.column("timestamp").to_numpy()), cols["epoch"], cols["is_control"],
            *(payload if name == "payload" else topic_name if name == "topic_name"
              else cols[name] for name, _ in _VALUES if name != "data_json"),
            cols["crc_valid"], begin, state, pa.repeat(pa.scalar(run_id), n),
        ], schema=RECORDS))
        rb = rb.set_column(rb.schema.get_field_index("topic_name"), "topic_name", topic_name)
        committed = pc.fill_null(pc.equal(state, COMMITTED), False).to_numpy(zero_copy_only=False)
        replayed = _replayed(rb) & (pc.is_null(state).to_numpy(zero_copy_only=False) | committed) \
            & overlaps(offset, offset, ranges)
        eff = pc.if_else(pa.array(committed), end, rb.column("offset")).filter(pa.array(replayed))
        eff_ts = pc.if_else(pa.array(committed), end_ts, rb.column("timestamp")).filter(pa.array(replayed))
        sourced = rb.select(_SOURCED)
        log = sourced.filter(pa.array(replayed))
        _stage(events, routed(meta.cluster_id, _source(log, eff, log.column("offset"), pa.repeat(
            pa.scalar(0, pa.int64()), log.num_rows), eff_ts), buckets, names))
        raft = sourced.filter(pa.array(control & pc.is_null(rb.column("error")).to_numpy(zero_copy_only=False)))
        _stage(events, controller_rows(meta.cluster_id, _source(
            raft, raft.column("offset"), raft.column("offset"), pa.repeat(pa.scalar(0, pa.int64()), raft.num_rows),
            raft.column("timestamp")), buckets))
        _epochs(rb, epochs)
        ts = rb.column("timestamp").to_numpy()
        for k, t in enumerate(times):
            after = offset[ts > t]
            if after.size and (later[k] is None or after.min() < later[k]):
                later[k] = int(after.min())
    return [(meta.file_id, "finished", json.dumps({"records": written, "later": later})),
            *((meta.file_id, "epoch", json.dumps({"epoch": e, "offset": o, "timestamp": t}))
              for e, (o, t) in epochs.items())]


def _supplied(staged: Iterable[pa.RecordBatch], want: list[tuple[int, int]]) -> Iterable[pa.RecordBatch]:
    """The rows of the offsets ``want`` names, at most ``_ROWS`` a batch."""
    for rb in staged:
        offsets = rb.column("offset").to_numpy()
        supplied = overlaps(offsets, offsets, want)
        if not supplied.all():
            rb = rb.filter(pa.array(supplied))
        for lo in range(0, rb.num_rows, _ROWS):
            yield rb.slice(lo, _ROWS)


def _named(topic_ids: pa.Array, names: dict[str, str]) -> pa.Array:
    """Each row's topic name by its topic id, looked up once per distinct id."""
    ids = pc.dictionary_encode(topic_ids)
    return pa.array([names.get(t) for t in ids.dictionary.to_pylist()], pa.string()).take(ids.indices)


def _epochs(rb: pa.RecordBatch, epochs: dict[int, tuple[int, int]]) -> None:
    """The first (offset, timestamp) of each leader epoch among the rows."""
    epoch, offset, ts = (rb.column(c).to_numpy() for c in ("epoch", "offset", "timestamp"))
    for e in np.unique(epoch).tolist():
        at = np.flatnonzero(epoch == e)
        first = at[np.argmin(offset[at])]
        if e not in epochs or offset[first] < epochs[e][0]:
            epochs[e] = (int(offset[first]), int(ts[first]))


def _transaction_of(offset: np.ndarray, control: np.ndarray, txns: list[tuple[int, int | None, int | None, str]]
                    ) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """Each metadata record's transaction, from Begin to End or Abort: its begin offset, the End's or
    Abort's offset and timestamp, and its state."""
    n = len(offset)
    if not txns:
        return pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64()), pa.nulls(n, pa.string())
    begins = np.asarray([b for b, _, _, _ in txns], np.int64)
    ends = np.asarray([e if e is not None else np.iinfo(np.int64).max for _, e, _, _ in txns], np.int64)
    i = np.searchsorted(begins, offset, side="right") - 1
    j = np.maximum(i, 0)
    outside = ~((i >= 0) & (offset <= ends[j]) & ~control)
    at = pa.array(j)
    return (pa.array(begins[j], mask=outside),
            pc.if_else(pa.array(outside), None, pa.array([e for _, e, _, _ in txns], pa.int64()).take(at)),
            pc.if_else(pa.array(outside), None, pa.array([t for _, _, t, _ in txns], pa.int64()).take(at)),
            pc.if_else(pa.array(outside), None, pa.array([s for _, _, _, s in txns], pa.string()).take(at)))
