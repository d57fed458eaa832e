"""``kraftlog dump``: one file's batches and records, as kafka-dump-log prints them or as JSON lines."""

import argparse
import dataclasses
import errno
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import TextIO

import numpy as np

from kraftlog.cli import main, progress, render
from kraftlog.files.paths import LogFile, classify, log_files_under
from kraftlog.files.reader import FileChangedError, Limits, Region, open_regular, read_log_file
from kraftlog.files.records import iter_entries, unreadable
from kraftlog.files.walk import walk_file
from kraftlog.schema import MetadataRecord, decode_control, decode_metadata, entity_of
from kraftlog.schema.control import BY_ID as CONTROL_TYPES
from kraftlog.schema.metadata import BY_API_KEY, BY_TYPE_NAME
from kraftlog.schema.redact import hides_value, redact
from kraftlog.wire.batch import CONTROL_BIT, DELETE_HORIZON_BIT, LOG_OVERHEAD, Batch, Record


@dataclass(slots=True)
class FileSummary:
    """What the walk of one file found; ``bytes == valid_bytes + skipped_bytes`` always, and
    ``errors == regions + batch_errors + undecodable``."""

    bytes: int = 0
    valid_bytes: int = 0
    skipped_bytes: int = 0
    regions: int = 0  # stretches skipped, each reported with its position and length
    batches: int = 0
    invalid_batches: int = 0  # CRC mismatches (their records are still shown)
    batch_errors: int = 0  # batches whose records could not all be read (framing, codec)
    records: int = 0
    undecodable: int = 0  # records whose value did not decode
    errors: int = 0
    newer: dict[str, int] = field(default_factory=dict)  # records of versions newer than kraftlog, by note

    @property
    def clean(self) -> bool:
        return self.errors == 0 and self.invalid_batches == 0 and self.skipped_bytes == 0


def _looks_like_metadata(batch: Batch) -> bool:
    """Sniff a data batch: null keys and values framed as metadata records (frame version 1)."""
    return bool(batch.records) and all(
        r.key is None and r.value is not None and decode_metadata(r.value).error is None for r in batch.records
    )


#: Partition fields that name brokers (PartitionRecord and PartitionChangeRecord; the metadata JSON
#: schemas): ``--broker`` matches a partition record naming the broker in any of them.
PARTITION_BROKER_FIELDS = ("leader", "replicas", "isr", "eligibleLeaderReplicas", "lastKnownElr",
                           "addingReplicas", "removingReplicas")


def names_broker(rec: MetadataRecord, broker: int) -> bool:
    """A PartitionRecord or PartitionChangeRecord that names ``broker`` as leader or in a replica list."""
    if rec.type not in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
        return False
    for name in PARTITION_BROKER_FIELDS:
        value = rec.data.get(name)
        if value == broker or (isinstance(value, list) and broker in value):
            return True
    return False


@dataclass(slots=True)
class TopicFilter:
    """``--topic NAME|ID``: a name stands for every topic id a TopicRecord gave it in the files read,
    learned from every snapshot first (retention leaves the TopicRecord only there) and from the
    segments as they go by. Records about an id no file names may be about the topic: they are
    counted (``unresolved``) so the command can say its answer is incomplete."""

    topic: str
    ids: set[str] = field(default_factory=set)  # ids named ``topic``
    named: set[str] = field(default_factory=set)  # every id a TopicRecord named
    seen_ids: set[str] = field(default_factory=set)  # every topic id a record carried
    unresolved: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # id -> (records, first offset, file)

    def learn(self, rec) -> None:
        if isinstance(rec, MetadataRecord) and rec.type == "TOPIC_RECORD" and rec.error is None:
            self.named.add(rec.data["topicId"])
            if rec.data["name"] == self.topic:
                self.ids.add(rec.data["topicId"])

    def matches(self, e: dict, rec: MetadataRecord, offset: int, where: str) -> bool:
        tid = e["topic_id"]
        if tid is not None:
            self.seen_ids.add(tid)
        if e["topic_name"] == self.topic or tid == self.topic or tid in self.ids:
            return True
        if rec.type == "CLEAR_ELR_RECORD" and rec.data.get("topicName") == "":
            return True  # an empty name clears the ELR of every topic
        if tid is not None and e["topic_name"] is None and tid not in self.named:
            n, first, file = self.unresolved.get(tid, (0, offset, where))
            self.unresolved[tid] = (n + 1, first, file)
        return False

    def refusal(self) -> str | None:
        """Why the answer cannot be trusted to hold every record about the topic, or None."""
        if self.topic in self.seen_ids:
            return None  # given as an id: nothing to resolve
        if not self.ids:
            return (f"--topic {self.topic}: no TopicRecord in the files read names it, so records that carry "
                    f"only its topic id cannot be found (add the snapshot or segment that created it, or pass "
                    f"the topic id)")
        missed = {t: v for t, v in self.unresolved.items() if t not in self.named or t in self.ids}
        if not missed:
            return None
        n = sum(v[0] for v in missed.values())
        tid, (_, offset, file) = min(missed.items(), key=lambda kv: kv[1][1])
        return (f"--topic {self.topic}: {n} records name topic ids no TopicRecord in the files read names "
                f"before them (first: {tid} at offset {offset} in {file}); they may be about {self.topic} "
                f"and were not shown")


@dataclass(slots=True)
class DumpOptions:
    """What to print and what to leave out; defaults are kafka-dump-log's view with secrets hidden."""

    fmt: str = "text"
    decoder: str = "auto"
    limits: Limits = field(default_factory=Limits)
    redact: bool = True
    types: frozenset[str] = frozenset()  # enum names (metadata or control); empty = all
    offsets: tuple[int, int] | None = None  # inclusive range
    topic: TopicFilter | None = None
    broker: int | None = None
    skip_noop: bool = False

    @property
    def filtering(self) -> bool:
        return bool(self.types or self.offsets or self.topic or self.broker is not None or self.skip_noop)

    def wants(self, offset: int, rec, where: str) -> bool:
        if self.topic is not None:
            self.topic.learn(rec)  # before any other filter: a TopicRecord left out still names its id
        if self.offsets and not self.offsets[0] <= offset <= self.offsets[1]:
            return False
        kind = getattr(rec, "type", None) if rec is not None else None
        if self.skip_noop and kind == "NO_OP_RECORD":
            return False
        if self.types and kind not in self.types:
            return False
        if self.topic is None and self.broker is None:
            return True
        if not isinstance(rec, MetadataRecord) or rec.error is not None:
            return False
        e = entity_of(rec)
        if self.broker is not None and e["broker_id"] != self.broker and not names_broker(rec, self.broker):
            return False
        return self.topic is None or self.topic.matches(e, rec, offset, where)


def _payload_json(batch: Batch, rec, opts: DumpOptions) -> tuple[str, object] | None:
    """The record's decoded payload as (json kind, json object); None for a raw record."""
    if rec is None:
        return None
    if opts.redact:
        rec = redact(rec)
    if rec.error:
        return "error", rec.error
    return "control" if batch.is_control else "metadata", rec.to_json()


def _hidden(batch: Batch, r: Record, rec, opts: DumpOptions, metadata_log: bool) -> bool:
    """Whether the record's raw value, shown when it is not decoded, must be hidden (``redact.hides_value``)."""
    return opts.redact and not batch.is_control and (rec is None or rec.error is not None) \
        and hides_value(r.value, metadata_log)


def _payload_text(batch: Batch, r: Record, rec, opts: DumpOptions, hidden: bool) -> str:
    """The record's decoded payload as kafka-dump-log prints it after the record header."""
    if rec is None:
        return render.raw_payload_text(r, hidden)
    if opts.redact:
        rec = redact(rec)
    return " " + (rec.dump_text() if batch.is_control else rec.dump_text(r.offset))


def _batch_line(batch: Batch, jsonl: bool) -> str:
    return render.dumps(render.batch_json(batch)) if jsonl else render.batch_text(batch)


#: Values up to this size have their rendered payload remembered for the rest of a file's dump: a
#: quiet log is mostly the same few NoOp and heartbeat values.
_MEMO_VALUE_BYTES = 64
_MEMO_ENTRIES = 4096
#: Lines a dump holds before writing them (a write per line costs more than rendering one).
_BLOCK_LINES = 1024
#: Whether lines of a shape seen before are filled into its template (tests compare both ways).
TEMPLATES = True
_SENTINEL = re.compile(r"\d{22}")  # longer than any int64 a line can hold


class _Templates:
    """Lines of one shape rendered once: the line of a probe whose ``inputs`` varying fields hold
    22-digit sentinels is cut wherever one of ``slots`` (attributes of the object rendered, those
    fields and values derived from them) shows, and later lines of that shape are the cuts joined
    with the real object's values. The renderer stays the one source of the
    text; a shape whose probe does not cut cleanly, or whose first real line differs from the
    template's, is rendered the slow way for the rest of the file."""

    def __init__(self, render_line, probe, inputs: int, slots: tuple[str, ...]) -> None:
        self.render_line, self.probe, self.inputs, self.slots = render_line, probe, inputs, slots
        self.cache: dict = {}

    def line(self, shape, obj, *args) -> str:
        template = self.cache.get(shape, False)
        if template is False:
            template = self._cut(obj, args) if len(self.cache) < _MEMO_ENTRIES else None
            line = self.render_line(obj, *args)
            if template is not None and template[0] % template[1](obj) != line:
                template = None
            if len(self.cache) < _MEMO_ENTRIES:
                self.cache[shape] = template
            return line
        if template is None:
            return self.render_line(obj, *args)
        return template[0] % template[1](obj)

    def _cut(self, obj, args) -> tuple | None:
        """(%-format string, getter of the slot values, their names) from the probe's line, or None
        (``%`` formats a line of many literal braces, a JSON line, twice as fast as ``str.format``)."""
        probe = self.probe(obj, *(9 * 10**21 + k * 10**12 for k in range(self.inputs)))
        by_text = {str(getattr(probe, name)): name for name in self.slots if getattr(probe, name) is not None}
        text = self.render_line(probe, *args)
        parts, names, at = [], [], 0
        for m in _SENTINEL.finditer(text):
            if m[0] not in by_text:
                return None
            parts.append(text[at : m.start()].replace("%", "%%"))
            names.append(by_text[m[0]])
            at = m.end()
        parts.append(text[at:].replace("%", "%%"))
        if not names:
            return None
        getter = (lambda o: (getattr(o, names[0]),)) if len(names) == 1 else attrgetter(*names)
        return "%s".join(parts), getter, tuple(names)


def _batch_probe(batch: Batch, position: int, base: int, crc: int, first_ts: int, max_ts: int) -> Batch:
    h = batch.header
    return Batch(position, (base, *h[1:4], crc, *h[5:7], first_ts, max_ts, *h[9:]), batch.crc_valid)


_BATCH_SLOTS = ("position", "base_offset", "crc", "base_timestamp", "max_timestamp")


def _batch_templates(jsonl: bool) -> _Templates:
    """Batch lines by shape: every header field but the offset, CRC and timestamps, and the CRC check.
    The slots' derived values (lastOffset, deleteHorizonMs) are found as sentinels too."""
    return _Templates(lambda b: _batch_line(b, jsonl), _batch_probe, len(_BATCH_SLOTS),
                      _BATCH_SLOTS + ("last_offset", "delete_horizon_ms"))


#: Every slot the lines of a one-record batch can show, in the order ``_pair_values`` gives them.
_PAIR_SLOTS = _BATCH_SLOTS + ("last_offset", "delete_horizon_ms", "offset", "timestamp")


def _pair_values(b: Batch, r: Record) -> tuple:
    """``_PAIR_SLOTS`` of a batch and its record, read from the header tuple (the properties' rules)."""
    h = b.header
    return (b.position, h[0], h[4], h[7], h[8], h[0] + h[6], h[7] if h[5] & DELETE_HORIZON_BIT else None,
            r.offset, r.timestamp)


def _pair_key(b: Batch, r: Record, metadata: bool) -> tuple:
    """What a one-record batch's two lines depend on but their slots: the batch's shape, the record's
    bytes and offset delta (its sequence), and whether data records are decoded."""
    h = b.header
    return (h[1], h[2], h[3], h[5], h[6], h[9], h[10], h[11], h[12], b.crc_valid, metadata, r.key, r.value,
            r.headers, r.offset_delta)


def _pair(batch_template, record_template) -> tuple | None:
    """One template for both lines of a one-record batch, from the template of each (None unless both)."""
    if not batch_template or not record_template:
        return None
    picked = itemgetter(*(_PAIR_SLOTS.index(n) for n in batch_template[2] + record_template[2]))
    return batch_template[0] + "\n" + record_template[0] + "\n", picked


def _batch_shape(batch: Batch) -> tuple:
    h = batch.header
    return h[1:4] + h[5:7] + h[9:] + (batch.crc_valid,)


def _record_probe(r: Record, offset: int, timestamp: int) -> Record:
    return dataclasses.replace(r, offset=offset, timestamp=timestamp)


def _record_line(batch: Batch, r: Record, rec, opts: DumpOptions, jsonl: bool, memo: dict,
                 lines: _Templates, metadata_log: bool) -> str:
    """The record's line; a payload that decoded cleanly from a small value is rendered once per
    (control, key, value) and file (it is a function of those bytes and ``opts`` alone), and so is
    the rest of its line but the offset and timestamp."""
    if not _memoised(r, rec):
        hidden = _hidden(batch, r, rec, opts, metadata_log)
        payload = _payload_json(batch, rec, opts) if jsonl else _payload_text(batch, r, rec, opts, hidden)
        return _render_record(r, batch, payload, jsonl, hidden)
    key = (batch.is_control, r.key, r.value)  # a record that decoded: its value is never hidden
    payload = memo.get(key)
    if payload is None:
        payload = _payload_json(batch, rec, opts) if jsonl else _payload_text(batch, r, rec, opts, False)
        if len(memo) < _MEMO_ENTRIES:
            memo[key] = payload
    if TEMPLATES:
        return lines.line(_record_shape(batch, r), r, batch, payload)
    return _render_record(r, batch, payload, jsonl)


def _memoised(r: Record, rec) -> bool:
    """Whether a record's payload is remembered and its line templated: it decoded, from a small value."""
    return rec is not None and rec.error is None and r.value is not None and len(r.value) <= _MEMO_VALUE_BYTES


def _record_shape(batch: Batch, r: Record) -> tuple:
    """What a remembered record's line depends on but its offset and timestamp."""
    return batch.is_control, r.key, r.value, r.headers, batch.attributes, batch.record_sequence(r)


def _render_record(r: Record, batch: Batch, payload, jsonl: bool, hidden: bool = False) -> str:
    if jsonl:
        return render.dumps(render.record_json(batch, r, payload, hidden))
    return render.record_text(batch, r, payload)


def _decode(batch: Batch, r: Record, metadata: bool):
    if batch.is_control:
        return decode_control(r.key or b"", r.value or b"")
    if metadata and r.value is not None:
        return decode_metadata(r.value)
    return None


def dump_file(lf: LogFile, out: TextIO, opts: DumpOptions, stats: "Stats | None" = None) -> FileSummary:
    """Write one file's dump to ``out`` (or only count it into ``stats``) and return what the walk found.
    Raises ``OSError`` before writing anything when the file cannot be opened."""
    with open_regular(lf.path) as f:
        s = FileSummary(bytes=os.fstat(f.fileno()).st_size)
    jsonl = opts.fmt == "jsonl"
    quiet = stats is not None
    if quiet:
        pass  # --stats prints one summary at the end
    elif jsonl:
        out.write(render.dumps({"kind": "file", "path": str(lf.path), "bytes": s.bytes}) + "\n")
    else:
        out.write("\n".join(render.file_header_text(lf)) + "\n")
    out.flush()
    metadata = {"metadata": True, "raw": False}.get(opts.decoder, lf.is_metadata)
    if quiet and metadata and not opts.filtering and _stats_walked(lf, opts.limits, s, stats):
        return s
    sniffed = opts.decoder != "auto" or lf.is_metadata
    memo: dict = {}
    where = lf.path.name
    filtering = opts.filtering  # without filters ``wants`` keeps every record
    batch_lines = _batch_templates(jsonl)
    record_lines = _Templates(lambda r, batch, payload: _render_record(r, batch, payload, jsonl), _record_probe, 2,
                              ("offset", "timestamp"))

    def batch_line(batch: Batch) -> str:
        return batch_lines.line(_batch_shape(batch), batch) if TEMPLATES else _batch_line(batch, jsonl)
    pending: list[str] = []  # lines not yet written: they are written in blocks, not a call each
    write = pending.append

    def flush() -> None:
        text = "".join(pending)
        pending.clear()
        out.write(text)
    # a one-record batch whose two lines were templated before is written from one template, with
    # what the general path below would count (it made the template from a batch that decoded cleanly)
    pairs: dict = {}
    paired = TEMPLATES and not filtering and not quiet
    try:
        for item in read_log_file(lf.path, opts.limits):
            if len(pending) >= _BLOCK_LINES:
                flush()
            if paired and sniffed and type(item) is Batch and len(item.records) == 1 and item.error is None:
                r = item.records[0]
                pair = pairs.get(_pair_key(item, r, metadata))
                if pair is not None:
                    s.batches += 1
                    s.records += 1
                    s.valid_bytes += item.header[1] + LOG_OVERHEAD
                    s.invalid_batches += not item.crc_valid
                    write(pair[0] % pair[1](_pair_values(item, r)))
                    continue
            if isinstance(item, Region):
                s.skipped_bytes += item.length
                s.regions += 1
                s.errors += 1
                if quiet:
                    continue
                if jsonl:
                    write(render.dumps(render.region_json(item)) + "\n")
                elif item.reason == "truncated":
                    write(f"Found {item.length} invalid bytes at the end of {lf.path.name}\n")
                else:
                    write(f"Skipped {item.length} bytes at position {item.position}: {item.detail}\n")
                continue
            batch = item
            s.batches += 1
            s.valid_bytes += batch.size
            s.invalid_batches += not batch.is_valid
            if not sniffed and not batch.is_control and batch.records:
                metadata = _looks_like_metadata(batch)
                sniffed = True
            shown = not filtering and not quiet  # the batch line is rendered only when written
            if shown:
                write(batch_line(batch) + "\n")
            counted = False
            for r in batch.records:
                s.records += 1
                rec = _decode(batch, r, metadata)
                if isinstance(rec, MetadataRecord) and rec.decoded_as is not None:
                    s.newer[rec.newer_note] = s.newer.get(rec.newer_note, 0) + 1
                if rec is not None and rec.error:
                    s.undecodable += 1
                    s.errors += 1
                if filtering and not opts.wants(r.offset, rec, where):
                    continue
                if stats is not None:  # --stats counts what the filters keep
                    stats.add_record(rec)
                    counted = True
                    continue
                if not shown:
                    write(batch_line(batch) + "\n")
                    shown = True
                write(_record_line(batch, r, rec, opts, jsonl, memo, record_lines,
                                   metadata or lf.is_metadata) + "\n")
                if paired and len(batch.records) == 1 and batch.error is None and len(pairs) < _MEMO_ENTRIES \
                        and _memoised(r, rec) and getattr(rec, "decoded_as", None) is None:
                    pair = _pair(batch_lines.cache.get(_batch_shape(batch)),
                                 record_lines.cache.get(_record_shape(batch, r)))
                    if pair is not None:
                        pairs[_pair_key(batch, r, metadata)] = pair
            if counted or (stats is not None and not filtering):
                stats.add_batch(batch)
            if batch.error:
                s.batch_errors += 1
                s.errors += 1
                if quiet:
                    continue
                if jsonl:
                    write(render.dumps(render.batch_error_json(batch)) + "\n")
                else:
                    write(f"Error in batch at position {batch.position}: {batch.error}\n")
    finally:
        flush()
    if s.valid_bytes + s.skipped_bytes != s.bytes:  # shorter when reopened to be read than when first opened
        raise FileChangedError(lf.path, s.bytes, s.valid_bytes + s.skipped_bytes)
    if jsonl and not quiet:
        out.write(render.dumps({
            "kind": "end", "bytes": s.bytes, "validBytes": s.valid_bytes, "batches": s.batches,
            "records": s.records, "errors": s.errors, "walkError": None,
        }) + "\n")
    return s


def _stats_walked(lf: LogFile, limits: Limits, s: FileSummary, stats: "Stats") -> bool:
    """``--stats`` of a metadata file, every record kept, counted from the columnar walk
    (``files.walk``): each distinct record of a walk read once and counted as often as it occurs.
    False, with nothing counted, for a file that is not local, not all whole CRC-valid batches read
    without error, or not the size it had when opened: the reader then counts it and says what is wrong."""
    if not isinstance(lf.path, Path):
        return False
    mine, found = Stats(), FileSummary(bytes=s.bytes)
    try:
        for w in walk_file(lf.path, limits):
            if w.regions or not w.crc_valid.all() or w.errors.count(None) != w.count:
                return False
            h = w.header
            mine.add_batches(h["batchLength"] + LOG_OVERHEAD, h["maxTimestamp"])
            control = ((h["attributes"] & CONTROL_BIT) != 0)[w.rec_batch]
            keys, first, counts = np.unique(w.rec_kv * 2 + control, return_index=True, return_counts=True)
            for _, k, n in sorted(zip(first.tolist(), keys.tolist(), counts.tolist(), strict=True)):
                key, value = w.kv[k >> 1]
                rec = (decode_control(key or b"", value or b"") if k & 1 else
                       None if value is None else decode_metadata(value))
                found.records += n
                if isinstance(rec, MetadataRecord) and rec.decoded_as is not None:
                    found.newer[rec.newer_note] = found.newer.get(rec.newer_note, 0) + n
                if rec is not None and rec.error:
                    found.undecodable += n
                    found.errors += n
                mine.add_record(rec, n)
    except (OSError, FileChangedError):
        return False
    if mine.bytes != s.bytes:
        return False
    found.batches, found.valid_bytes = mine.batches, mine.bytes
    for f in dataclasses.fields(s):
        setattr(s, f.name, getattr(found, f.name))
    stats.update(mine)
    return True


class Stats:
    """Counts by record type and version, batch sizes, time span and NoOp share, in bounded memory."""

    def __init__(self) -> None:
        self.types: Counter[tuple[str, int]] = Counter()
        self.records = self.batches = self.bytes = 0
        self.size_min: int | None = None
        self.size_max = 0
        self.size_buckets: Counter[int] = Counter()  # power-of-two upper bounds
        self.first_ms: int | None = None
        self.last_ms: int | None = None

    def add_record(self, rec, n: int = 1) -> None:
        self.records += n
        key = ("RAW", 0) if rec is None else (rec.type, getattr(rec, "version", 0))
        self.types[key] += n

    def update(self, other: "Stats") -> None:
        """Add what ``other`` counted (of later batches)."""
        self.records += other.records
        self.types.update(other.types)
        if other.batches:
            self.add_span(other.batches, other.bytes, other.size_min, other.size_max, other.first_ms, other.last_ms)
            self.size_buckets.update(other.size_buckets)

    def add_span(self, batches: int, size: int, low: int, high: int, first_ms: int | None, last_ms: int | None) -> None:
        self.batches += batches
        self.bytes += size
        self.size_min = low if self.size_min is None else min(self.size_min, low)
        self.size_max = max(self.size_max, high)
        if first_ms is not None:
            self.first_ms = first_ms if self.first_ms is None else min(self.first_ms, first_ms)
            self.last_ms = last_ms if self.last_ms is None else max(self.last_ms, last_ms)

    def add_batches(self, sizes: np.ndarray, max_timestamps: np.ndarray) -> None:
        """``add_batch`` of batches given as columns of their sizes and maxTimestamps."""
        if not len(sizes):
            return
        timed = max_timestamps[max_timestamps > 0]
        self.add_span(len(sizes), int(sizes.sum()), int(sizes.min()), int(sizes.max()),
                      int(timed.min()) if len(timed) else None, int(timed.max()) if len(timed) else None)
        for size, n in zip(*(a.tolist() for a in np.unique(sizes, return_counts=True)), strict=True):
            self.size_buckets[1 << (size - 1).bit_length()] += n

    def add_batch(self, batch: Batch) -> None:
        self.batches += 1
        size = batch.size
        self.bytes += size
        self.size_min = size if self.size_min is None else min(self.size_min, size)
        self.size_max = max(self.size_max, size)
        self.size_buckets[1 << (size - 1).bit_length()] += 1
        ts = batch.max_timestamp
        if ts > 0:
            self.first_ms = ts if self.first_ms is None else min(self.first_ms, ts)
            self.last_ms = ts if self.last_ms is None else max(self.last_ms, ts)

    def to_json(self) -> dict:
        noop = sum(n for (t, _), n in self.types.items() if t == "NO_OP_RECORD")
        return {
            "kind": "stats", "batches": self.batches, "records": self.records, "bytes": self.bytes,
            "types": [{"type": t, "version": v, "records": n} for (t, v), n in sorted(self.types.items())],
            "batchSize": {"min": self.size_min, "max": self.size_max,
                          "mean": round(self.bytes / self.batches, 1) if self.batches else None,
                          "histogram": {f"<={b}": n for b, n in sorted(self.size_buckets.items())}},
            "firstTime": render.iso_time(self.first_ms), "lastTime": render.iso_time(self.last_ms),
            "noopShare": round(noop / self.records, 4) if self.records else 0.0,
        }

    def text(self) -> str:
        j = self.to_json()
        lines = [f"{j['batches']} batches, {j['records']} records, {j['bytes']} bytes; "
                 f"time {j['firstTime']} .. {j['lastTime']}; NoOp share {j['noopShare']:.1%}",
                 f"batch size: min {j['batchSize']['min']}, mean {j['batchSize']['mean']}, max {j['batchSize']['max']}",
                 f"{'type':<40} {'version':>7} {'records':>10}"]
        lines += [f"{t['type']:<40} {t['version']:>7} {t['records']:>10}" for t in j["types"]]
        return "\n".join(lines)


def _type_name(text: str) -> str:
    """An api key, an enum name, or a Kafka message name (PartitionChangeRecord) as the enum name."""
    t = text.strip()
    if t.isdigit():
        message = BY_API_KEY.get(int(t))
        if message is None:
            raise main.UsageError(f"--type: no metadata record type has api key {t}")
        return message.type_name
    if not t.isupper():
        t = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", t).upper()
    if t not in BY_TYPE_NAME and t not in {c.name for c in CONTROL_TYPES.values()}:
        raise main.UsageError(f"--type: unknown record type {text!r}")
    return t


def _offset_range(text: str) -> tuple[int, int]:
    lo, sep, hi = text.partition(":")
    try:
        return (int(lo) if lo else 0, int(hi) if hi else (1 << 63) - 1) if sep else (int(lo), int(lo))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an offset range A:B: {text!r}") from None


def dump_paths(paths: list[str], all_partitions: bool) -> tuple[list[LogFile], int]:
    """Files as given; a directory walked for segments and checkpoints in offset order, leaving out
    the data partitions' folders below it unless ``all_partitions`` (a partition folder given as
    PATH is read: it was named). Also how many folders could not be listed (each said on stderr)."""
    out: list[LogFile] = []
    empty: list[str] = []
    unlisted: list[OSError] = []
    for p in paths:
        if os.path.isdir(p):
            left_out: list[Path] = []
            found = log_files_under(p, all_partitions, left_out, unlisted)
            partitions = (f"{len(left_out)} data partition folders ({left_out[0].name}, ...): name one as PATH, "
                          "or pass --all-partitions") if left_out else ""
            if not found:
                empty.append(f"no segments or checkpoints under {p}" + (f" outside its {partitions}" if left_out else ""))
            elif left_out:
                print(f"kraftlog: {p}: left out {partitions}", file=sys.stderr)
            out.extend(found)
        elif os.path.exists(p):  # a file; one that is not regular is said when read
            out.append(classify(p))
        else:
            raise main.UsageError(f"no such file or directory: {p}")
    for e in unlisted:
        print(f"kraftlog: {unreadable(Path(e.filename), e)}", file=sys.stderr)
    if not out and not unlisted:
        raise main.UsageError("; ".join(empty))
    for message in empty if out else []:
        print(f"kraftlog: {message}", file=sys.stderr)
    return out, len(unlisted)


def learn_topics(files: list[LogFile], topic: TopicFilter, limits: Limits) -> None:
    """Every topic id the snapshots among ``files`` name: the TopicRecord of a topic created before
    the oldest segment kept survives only there. Unreadable parts are reported by the dump itself."""
    for lf in files:
        if lf.kind in ("snapshot", "bootstrap"):
            try:
                for entry in iter_entries(lf, limits):
                    topic.learn(entry.record)
            except OSError:
                continue  # the dump of this file says it cannot be read


def add_parser(sub) -> None:
    p = sub.add_parser("dump", help="print the batches and records of segments and snapshots",
                       description="Print every batch and record of the given files. A directory is "
                       "walked for *.log segments and *.checkpoint snapshots in offset order: a log dir gives "
                       "its metadata log (__cluster_metadata-N) and bootstrap.checkpoint, not its data "
                       "partitions (name one as PATH, or --all-partitions). Secrets (SCRAM salts and keys, "
                       "secret config values) are redacted unless --no-redact. Exit 0 when clean; 1 when a "
                       "batch was invalid, bytes were skipped, a record could not be decoded, a file could not "
                       "be read (the others are still dumped) or a --topic name could not be resolved; 2 on "
                       "usage errors.")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="segment, checkpoint, or directory (a log dir: its metadata log and bootstrap.checkpoint)")
    p.add_argument("--all-partitions", action="store_true",
                   help="in a directory, also walk the data partitions' folders (<topic>-<N>) below it")
    p.add_argument("--format", choices=["text", "jsonl"], default="text",
                   help="text: kafka-dump-log layout (default); jsonl: one JSON object per line")
    p.add_argument("--decoder", choices=["auto", "metadata", "raw"], default="auto",
                   help="decode data records as metadata records, or print raw key/value; auto "
                   "decides by location (__cluster_metadata-N, *.checkpoint) and content")
    p.add_argument("--type", action="append", default=[], metavar="TYPE",
                   help="only these record types: enum names (PARTITION_CHANGE_RECORD, LEADER_CHANGE), "
                   "message names (PartitionChangeRecord) or api keys; repeatable")
    p.add_argument("--offset-range", type=_offset_range, metavar="A:B", help="only offsets A..B (inclusive)")
    p.add_argument("--topic", metavar="NAME|ID",
                   help="only records about this topic: a name stands for every topic id a TopicRecord in the "
                   "files read (snapshots included) gives it; exit 1 when the name cannot be resolved")
    p.add_argument("--broker", type=int, metavar="ID",
                   help="only records about this broker: its registrations, fencing and configs, and the "
                   "PartitionRecords and PartitionChangeRecords naming it as leader or in replicas, ISR, ELR, "
                   "last known ELR, adding or removing replicas")
    p.add_argument("--skip-noop", action="store_true", help="leave out NoOpRecords")
    p.add_argument("--no-redact", action="store_true", help="show SCRAM keys and secret config values")
    p.add_argument("--stats", action="store_true",
                   help="print counts by type and version, batch sizes, time span and NoOp share instead, of the "
                   "records the filters keep (and the batches holding them); metadata and data partitions apart")
    main.add_limits(p)


#: Errors of writing (a full disk or quota, a file too large), never of reading a log file.
_OUTPUT_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


@progress.shown("paths", streams_stdout=True)
def run(args, out: TextIO | None = None) -> int:
    """Dump every file; exit 1 when any batch was invalid, any byte skipped, any record undecodable,
    any file unreadable, or a --topic name could not be resolved."""
    out = out or sys.stdout
    topic = TopicFilter(args.topic) if args.topic else None
    opts = DumpOptions(args.format, args.decoder, main.limits_of(args), not args.no_redact,
                       frozenset(_type_name(t) for t in args.type), args.offset_range, topic,
                       args.broker, args.skip_noop)
    files, unlisted = dump_paths(args.paths, args.all_partitions)
    if topic is not None:
        learn_topics(files, topic, opts.limits)
    stats = {True: Stats(), False: Stats()} if args.stats else None  # metadata files, data files
    status = 1 if unlisted else 0
    for lf in files:
        try:
            s = dump_file(lf, out, opts, None if stats is None else stats[lf.is_metadata or args.decoder == "metadata"])
        except OSError as e:
            if e.errno in _OUTPUT_ERRORS:  # writing the dump failed, not reading the file
                raise
            print(f"kraftlog: {unreadable(lf.path, e)}", file=sys.stderr)
            status = 1
            continue
        except FileChangedError as e:
            print(f"kraftlog: {e}", file=sys.stderr)
            status = 1
            continue
        for note, count in s.newer.items():
            print(f"kraftlog: {lf.path}: {count} record(s): {note}", file=sys.stderr)
        if not s.clean:
            status = 1
            print(f"kraftlog: {lf.path}: {s.bytes} bytes = {s.valid_bytes} in {s.batches} batches + "
                  f"{s.skipped_bytes} skipped in {s.regions} regions; {s.invalid_batches} invalid batches, "
                  f"{s.batch_errors} batch errors, {s.undecodable} undecodable records", file=sys.stderr)
    if stats is not None:
        for metadata, st in stats.items():
            if st.batches or (metadata and not stats[False].batches):
                kind = "metadata" if metadata else "data"
                out.write((render.dumps({**st.to_json(), "log": kind}) if args.format == "jsonl"
                           else (f"{kind} log files:\n" if stats[False].batches else "") + st.text()) + "\n")
    if topic is not None and (why := topic.refusal()) is not None:
        print(f"kraftlog: {why}", file=sys.stderr)
        status = 1
    return status
