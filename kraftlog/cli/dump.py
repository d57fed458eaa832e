"""``kraftlog dump``: one file's batches and records, as kafka-dump-log prints them or as JSON lines."""

import sys
from dataclasses import dataclass
from typing import TextIO

from kraftlog.cli import main, render
from kraftlog.files.paths import LogFile
from kraftlog.files.reader import Limits, Region, read_log_file
from kraftlog.schema import decode_control, decode_metadata
from kraftlog.wire.batch import Batch, Record

_CONTROL_TEXT_NAMES = {
    "SNAPSHOT_HEADER": "SnapshotHeader",
    "SNAPSHOT_FOOTER": "SnapshotFooter",
    "KRAFT_VERSION": "KRaftVersion",
    "KRAFT_VOTERS": "KRaftVoters",
}


@dataclass(slots=True)
class FileSummary:
    """What the walk of one file found; ``bytes == valid_bytes + skipped_bytes`` always."""

    bytes: int = 0
    valid_bytes: int = 0
    skipped_bytes: int = 0
    batches: int = 0
    invalid_batches: int = 0
    records: int = 0
    errors: int = 0

    @property
    def clean(self) -> bool:
        return self.errors == 0 and self.invalid_batches == 0 and self.skipped_bytes == 0


def _looks_like_metadata(batch: Batch) -> bool:
    """Sniff a data batch: null keys and values framed as metadata records (frame version 1)."""
    return bool(batch.records) and all(
        r.key is None and r.value is not None and decode_metadata(r.value).error is None for r in batch.records
    )


def _control_text(ctrl) -> str:
    obj = ctrl.to_json()
    name = obj["type"]
    if name in _CONTROL_TEXT_NAMES:
        return f" {_CONTROL_TEXT_NAMES[name]} {render.dumps(obj['data'])}"
    if name in ("COMMIT", "ABORT"):
        return f" endTxnMarker: {name} coordinatorEpoch: {obj['data']['coordinatorEpoch']}"
    return f" controlType: {name}({obj['typeId']})"


def _payload(batch: Batch, r: Record, metadata: bool, fmt: str) -> tuple[tuple[str, object] | None, str]:
    """The record's decoded payload as (json kind, json object) and as kafka-dump-log text."""
    if batch.is_control:
        ctrl = decode_control(r.key, r.value)
        if ctrl.error:
            return ("error", ctrl.error), f" Error at {r.offset}, skipping. {ctrl.error}"
        return ("control", ctrl.to_json()), (_control_text(ctrl) if fmt == "text" else "")
    if not metadata or r.value is None:
        return None, render.raw_payload_text(r)
    rec = decode_metadata(r.value)
    if rec.error:
        return ("error", rec.error), f" Error at {r.offset}, skipping. {rec.error}"
    obj = rec.to_json()
    return ("metadata", obj), " payload: " + render.dumps(obj)


def dump_file(lf: LogFile, out: TextIO, fmt: str = "text", decoder: str = "auto",
              limits: Limits = Limits()) -> FileSummary:
    """Write one file's dump to ``out`` and return what the walk found."""
    s = FileSummary(bytes=lf.path.stat().st_size)
    jsonl = fmt == "jsonl"
    if jsonl:
        out.write(render.dumps({"kind": "file", "path": str(lf.path), "bytes": s.bytes}) + "\n")
    else:
        out.write("\n".join(render.file_header_text(lf)) + "\n")
    out.flush()
    metadata = {"metadata": True, "raw": False}.get(decoder, lf.is_metadata)
    sniffed = decoder != "auto" or lf.is_metadata
    for item in read_log_file(lf.path, limits):
        if isinstance(item, Region):
            s.skipped_bytes += item.length
            s.errors += 1
            if jsonl:
                out.write(render.dumps(render.region_json(item)) + "\n")
            elif item.reason == "truncated":
                out.write(f"Found {item.length} invalid bytes at the end of {lf.path.name}\n")
            else:
                out.write(f"Skipped {item.length} bytes at position {item.position}: {item.detail}\n")
            continue
        batch = item
        s.batches += 1
        s.valid_bytes += batch.size
        s.invalid_batches += not batch.is_valid
        if not sniffed and not batch.is_control and batch.records:
            metadata = _looks_like_metadata(batch)
            sniffed = True
        out.write((render.dumps(render.batch_json(batch)) if jsonl else render.batch_text(batch)) + "\n")
        for r in batch.records:
            s.records += 1
            payload, text = _payload(batch, r, metadata, fmt)
            if payload is not None and payload[0] == "error":
                s.errors += 1
            out.write((render.dumps(render.record_json(batch, r, payload)) if jsonl
                       else render.record_text(batch, r, text)) + "\n")
        if batch.error:
            s.errors += 1
            if jsonl:
                out.write(render.dumps(render.batch_error_json(batch)) + "\n")
            else:
                out.write(f"Error in batch at position {batch.position}: {batch.error}\n")
    if jsonl:
        out.write(render.dumps({
            "kind": "end", "bytes": s.bytes, "validBytes": s.valid_bytes, "batches": s.batches,
            "records": s.records, "errors": s.errors, "walkError": None,
        }) + "\n")
    return s


def add_parser(sub) -> None:
    p = sub.add_parser("dump", help="print the batches and records of segments and snapshots",
                       description="Print every batch and record of the given files. A directory is "
                       "walked for *.log segments and *.checkpoint snapshots in offset order. "
                       "Exit 0 when clean, 1 when a batch was invalid, bytes were skipped or a record "
                       "could not be decoded, 2 on usage errors.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="segment, checkpoint, or directory")
    p.add_argument("--format", choices=["text", "jsonl"], default="text",
                   help="text: kafka-dump-log layout (default); jsonl: one JSON object per line")
    p.add_argument("--decoder", choices=["auto", "metadata", "raw"], default="auto",
                   help="decode data records as metadata records, or print raw key/value; auto "
                   "decides by location (__cluster_metadata-N, *.checkpoint) and content")
    main.add_limits(p)


def run(args, out: TextIO | None = None) -> int:
    """Dump every file; exit 1 when any batch was invalid, any byte skipped or any record undecodable."""
    out = out or sys.stdout
    status = 0
    limits = main.limits_of(args)
    for lf in main.expand_paths(args.paths):
        s = dump_file(lf, out, args.format, args.decoder, limits)
        if not s.clean:
            status = 1
            print(f"kraftlog: {lf.path}: {s.invalid_batches} invalid batches, {s.skipped_bytes} bytes skipped, "
                  f"{s.errors} errors", file=sys.stderr)
    return status
