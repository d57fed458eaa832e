"""Fuzz the batch reader, the record decoders, replay and the dump/inspect commands (issue 7).

Targets: ``reader`` walks the bytes and checks that batches and regions tile them exactly;
``record`` decodes a metadata or control value and re-encodes what decoded; ``replay`` replays a
file's entries into a ClusterImage and renders it; ``cli`` runs dump and inspect on the file and
checks that the jsonl batch sizes plus error lengths add up to its size.

Operators open these files when something is already wrong, so any exception other than a
``KraftlogError`` is a crash, as is an input of at most 64 KiB that takes over a second or a
process whose peak RSS passes 300 MB. Seeds are the real segments and checkpoints of
``../shared/corpus/real``, ``fixtures/`` and segments generated here from the schema tables;
mutations know the batch and record layouts (length fields, truncation at boundaries, splicing,
varint overflow, huge counts and string lengths, invalid UTF-8, negative sizes).

The engine is atheris (libFuzzer's coverage guidance plus these mutations) when installed, else a
seeded mutation loop that keeps inputs showing new behaviour. Crashing inputs are saved to a
temporary directory outside the repository; the last stdout line is a JSON report.

    nice -n 10 .venv/bin/python scripts/fuzz.py --target reader --runs 300000 --time-limit 600
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import re
import resource
import signal
import struct
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = (REPO.parent / "shared" / "corpus" / "real", REPO / "fixtures")
SLOW_SECONDS = 1.0  # an input of <= 64 KiB taking longer is a finding
HANG_SECONDS = 10.0  # the timer interrupts an input after this long
RSS_BUDGET_MB = 300
ADDRESS_SPACE_MB = 1024  # a blow-up past this is a MemoryError finding, not the machine's OOM killer
POOL_BYTES = 64 << 20  # the mutation loop's pool of inputs showing new behaviour
SEED_CHUNK = 4096  # besides each file's head, seeds are SEED_SLICES runs of whole batches this big
SEED_SLICES = 8


def _load_kraftlog() -> None:
    """Import kraftlog late, so that atheris can instrument it for coverage when it drives."""
    global LogFile, classify, reader, records, KraftlogError, Fixed, Struct, Compact, read_varint, read_varlong
    global Batch, Record, CONTROL_BIT, crc_of, decode_batch, encode_batch, write_uvarint, cli_main
    global UUID, BYTES, METADATA_RECORDS, CONTROL_TYPES, decode_control, decode_metadata, encode_control
    global encode_metadata, encode_record, entity_of, redact, diff, metadata_response, render_tree, replay
    from kraftlog.cli.main import main as cli_main
    from kraftlog.files import reader, records
    from kraftlog.files.paths import LogFile, classify
    from kraftlog.schema import (
        METADATA_RECORDS,
        decode_control,
        decode_metadata,
        encode_control,
        encode_metadata,
        encode_record,
        entity_of,
        redact,
    )
    from kraftlog.schema.control import CONTROL_TYPES
    from kraftlog.schema.fields import BYTES, UUID, Compact, Fixed, Struct
    from kraftlog.state import diff, metadata_response, render_tree, replay
    from kraftlog.wire.batch import CONTROL_BIT, Batch, Record, crc_of, decode_batch, encode_batch
    from kraftlog.wire.errors import KraftlogError
    from kraftlog.wire.varint import read_varint, read_varlong, write_uvarint


def _limits():
    """Production limits, except a 1 MiB decompression cap so bombs fail fast."""
    return reader.Limits(max_decompressed=1 << 20)


# ------------------------------------------------------------------------------------------ seeds


def _spans(data: bytes) -> list[tuple[int, int]]:
    """Whole v2 batches from the start of ``data``, by their length fields, until one does not fit."""
    out, pos = [], 0
    while pos + 61 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        end = pos + 12 + length
        if length < 49 or end > len(data):
            break
        out.append((pos, end))
        pos = end
    return out


def _file_seeds(data: bytes, max_len: int) -> Iterator[bytes]:
    """A file's head up to ``max_len`` (cut at a batch end), then a few runs of whole batches from
    along the file, each about SEED_CHUNK bytes."""
    spans = _spans(data)
    head = [e for _, e in spans if e <= max_len]
    yield data[: head[-1]] if head else data[:max_len]
    for i in range(0, len(spans), max(1, len(spans) // SEED_SLICES)):
        start = end = spans[i][0]
        for _, e in spans[i:]:
            if e - start > SEED_CHUNK and end > start:
                break
            end = e
        yield data[start:end]


def corpus_files(dirs: list[Path]) -> Iterator[Path]:
    """Segments and checkpoints below ``dirs`` (files are only read, never copied)."""
    for d in dirs:
        if d.is_dir():
            for p in sorted(d.rglob("*")):
                if p.is_file() and classify(p).kind != "other":
                    yield p


def _sample(t, rng: random.Random, version: int):
    """A value of schema type ``t`` with structure for the mutator to work on (non-empty arrays)."""
    if isinstance(t, Fixed):
        if t is UUID:
            return rng.choice(("AAAAAAAAAAAAAAAAAAAAAQ", "3ql6QVjQQWKGtGd-HqfNxA"))
        return {"bool": True, "float64": 0.5}.get(t.name, rng.randint(0, 3))
    if isinstance(t, Struct):
        return {f.json: _sample(f.type, rng, version) for f in t.fields_at(version)}
    if isinstance(t, Compact):
        return b"\x00\x01" if t is BYTES else rng.choice(("", "t", "metadata.version", "é"))
    return [_sample(t.element, rng, version) for _ in range(2)]


def generated_values(rng: random.Random) -> Iterator[tuple[bytes | None, bytes]]:
    """(key, value) of every metadata record version and every control type, with sample data."""
    for m in METADATA_RECORDS:
        for version in m.valid_versions:
            yield None, encode_metadata(m.api_key, version, _sample(m, rng, version))
    for c in CONTROL_TYPES:
        versions = c.schema.valid_versions if c.schema else (0,)
        for version in versions:
            data = _sample(c.schema, rng, version) if c.schema else {"coordinatorEpoch": 3}
            data["version"] = version
            yield encode_control(c.id, data)


def generated_files(rng: random.Random) -> Iterator[bytes]:
    """Segments of every record type, one per codec, and a compression bomb per codec."""
    values = list(generated_values(rng))
    data_values = [v for k, v in values if k is None]
    controls = [(k, v) for k, v in values if k is not None]
    for codec in range(5):
        out, offset = bytearray(), 0
        for i in range(0, len(data_values), 4):
            chunk = data_values[i : i + 4]
            recs = [Record(0, 0, None, v, (), 0, 0, j) for j, v in enumerate(chunk)]
            out += encode_batch(recs, base_offset=offset, base_timestamp=1_700_000_000_000 + i,
                                partition_leader_epoch=1, attributes=codec)
            offset += len(chunk)
        recs = [Record(0, 0, k, v, (), 0, 0, j) for j, (k, v) in enumerate(controls)]
        out += encode_batch(recs, base_offset=offset, base_timestamp=1_700_000_000_000,
                            partition_leader_epoch=2, attributes=codec | CONTROL_BIT)
        yield bytes(out)
        if codec:
            bomb = Record(0, 0, None, bytes(2 << 20), (), 0, 0, 0)
            yield encode_batch([bomb], base_offset=0, base_timestamp=0, attributes=codec)


def record_input(key: bytes | None, value: bytes | None, control: bool) -> bytes:
    """The record target's input: a flag byte (1 = control, 2 = null value), the 4-byte key, the value."""
    flag = control | (value is None) << 1
    return bytes((flag,)) + ((key or b"").ljust(4, b"\0")[:4] if control else b"") + (value or b"")


def _split_record(data: bytes) -> tuple[bool, bytes, bytes | None]:
    flag = data[0] if data else 0
    control = bool(flag & 1)
    body = data[1:]
    key, value = (body[:4], body[4:]) if control else (b"", body)
    return control, key, None if flag & 2 else value


def load_seeds(target: str, dirs: list[Path], max_len: int, rng: random.Random) -> list[bytes]:
    """File seeds (corpus and generated), or for ``record`` the distinct values found in them."""
    files: list[bytes] = []
    for p in corpus_files(dirs):
        with open(p, "rb") as f:
            files.extend(_file_seeds(f.read(), max_len))
    files.extend(generated_files(rng))
    if target != "record":
        seeds = files
    else:
        seeds = [record_input(k, v, k is not None) for k, v in generated_values(rng)]
        for data in files:
            for s, e in _spans(data):
                try:
                    batch = decode_batch(data[s:e])
                except KraftlogError:
                    continue
                seeds.extend(record_input(r.key, r.value, batch.is_control) for r in batch.records)
        # one value per record type, version and size class: a log repeats its records a lot
        seeds = list({(s[:6], len(s).bit_length()): s for s in seeds}.values())
    unique = {hashlib.sha1(s).digest(): s[:max_len] for s in seeds}
    return [unique[k] for k in sorted(unique)]


# -------------------------------------------------------------------------------------- mutations

_INTERESTING = (0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, -0x80000000, 48, 49, 61)
#: Zig-zag varints of the record layer that no writer produces: negative, huge, over-long.
_HOSTILE_VARINTS = (b"\x03", b"\x07", b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x7f",
                    b"\xff\xff\xff\xff\xff\x01", b"\x80\x00", b"\xff\xff\x03")
#: Unsigned varints of the schema layer: null, huge counts and lengths, over-long, just over a string cap.
_HOSTILE_UVARINTS = (b"\x00", b"\xff\xff\xff\xff\x0f", b"\x81\x80\x80\x80\x08", b"\x80\x80\x80\x80\x10",
                     b"\xff\xff\xff\xff\xff\x01", b"\x82\x80\x02", b"\x80\x80\x04", b"\xff\x7f", b"\x80\x00")
_BAD_UTF8 = (b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\x80", b"\xff\xfe", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80")
#: (offset, width) of every BatchHeader field, for mutations that set one.
_HEADER_FIELDS = ((0, 8), (8, 4), (12, 4), (16, 1), (17, 4), (21, 2), (23, 4), (27, 8), (35, 8), (43, 8),
                  (51, 2), (53, 4), (57, 4))


def _put_int(data: bytearray, pos: int, width: int, value: int) -> None:
    data[pos : pos + width] = (value & ((1 << 8 * width) - 1)).to_bytes(width, "big")


def _fix_crcs(data: bytes, spans: list[tuple[int, int]]) -> bytes:
    """The CRCs of these batches made right again, so the reader decodes what lies behind a mutation."""
    out = bytearray(data)
    view = memoryview(data)
    for s, e in spans:
        struct.pack_into(">I", out, s + 17, crc_of(view[s:e]))
    return bytes(out)


def flip_bits(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    if not data:
        return bytes((rng.randrange(256),))
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def interesting_int(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    width = rng.choice((1, 2, 4, 8))
    if len(data) < width:
        return data + bytes(width)
    out = bytearray(data)
    _put_int(out, rng.randrange(len(data) - width + 1), width, rng.choice(_INTERESTING))
    return bytes(out)


def truncate(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    """Cut at a batch boundary, at the 17/61-byte header marks, inside a record, or anywhere."""
    cuts = [c + d for s, e in _spans(data) for c in (s, e) for d in (-1, 0, 1, 17, 61, 62)]
    cuts = [c for c in cuts if 0 <= c < len(data)] or [len(data) // 2]
    return data[: rng.choice(cuts) if rng.random() < 0.7 else rng.randrange(len(data) + 1)]


def delete_range(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    if not data:
        return data
    a = rng.randrange(len(data))
    return data[:a] + data[a + rng.randint(1, 64) :]


def insert_bytes(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    a = rng.randrange(len(data) + 1)
    blob = rng.choice((_HOSTILE_UVARINTS, _HOSTILE_VARINTS, _BAD_UTF8))
    extra = rng.choice(blob) if rng.random() < 0.7 else rng.randbytes(rng.randint(1, 16))
    return data[:a] + extra + data[a:]


def splice(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    """Put a piece of another input (a whole batch when it has one) at a batch boundary of this one."""
    other = rng.choice(pool)
    spans = _spans(other)
    s, e = rng.choice(spans) if spans and rng.random() < 0.8 else sorted(
        (rng.randrange(len(other) + 1), rng.randrange(len(other) + 1)))
    piece = other[s:e]
    marks = [0, len(data)] + [e for _, e in _spans(data)]
    at = rng.choice(marks) if rng.random() < 0.8 else rng.randrange(len(data) + 1)
    if rng.random() < 0.3:  # replace what follows instead of inserting
        return data[:at] + piece + data[at + len(piece) :]
    return data[:at] + piece + data[at:]


def header_field(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    """Set one header field of one batch to an edge value or a near miss, then maybe fix the CRC."""
    spans = _spans(data)
    if not spans:
        return interesting_int(data, rng, pool)
    span = rng.choice(spans)
    off, width = rng.choice(_HEADER_FIELDS)
    out = bytearray(data)
    pos = span[0] + off
    current = int.from_bytes(out[pos : pos + width], "big", signed=True)
    _put_int(out, pos, width, rng.choice((*_INTERESTING, current + rng.randint(-3, 3), -current)))
    return _fix_crcs(bytes(out), [span]) if rng.random() < 0.5 and off > 17 else bytes(out)


def _record_fields(data: bytes, span: tuple[int, int]) -> list[int]:
    """Positions of the varints of an uncompressed batch's records: lengths, key/value sizes, header counts."""
    pos, end, out = span[0] + 61, span[1], []
    try:
        while pos < end:
            out.append(pos)
            length, body = read_varint(data, pos)
            if length <= 0:
                break
            p = body + 1
            _, p = read_varlong(data, p)
            _, p = read_varint(data, p)
            for _ in range(2):  # key, value
                out.append(p)
                n, p = read_varint(data, p)
                p += max(n, 0)
            out.append(p)
            pos = body + length
    except (KraftlogError, IndexError):
        pass
    return [p for p in out if p < end]


def hostile_record_varint(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    """Replace a record's length, key/value size or header count by a hostile varint; keep the batch framed."""
    spans = [sp for sp in _spans(data) if not data[sp[0] + 22] & 0x07]
    if not spans:
        return insert_bytes(data, rng, pool)
    span = rng.choice(spans)
    fields = _record_fields(data, span)
    if not fields:
        return data
    at = rng.choice(fields)
    _, after = read_varint(data, at) if data[at] < 0x80 else (0, at + 1)
    new = rng.choice(_HOSTILE_VARINTS)
    out = bytearray(data[:at] + new + data[after:])
    s, e = span
    e += len(new) - (after - at)
    struct.pack_into(">i", out, s + 8, e - s - 12)
    return _fix_crcs(bytes(out), [(s, e)])


def rewrite_record(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    """Decode a batch, make one of its records hostile (value, key, headers, deltas, count), re-encode it."""
    spans = _spans(data)
    if not spans:
        return flip_bits(data, rng, pool)
    s, e = rng.choice(spans)
    try:
        batch = decode_batch(data[s:e], max_decompressed=1 << 20)
    except KraftlogError:
        return data
    recs = batch.records
    if not recs:
        return data
    r = rng.choice(recs)
    attributes = batch.attributes
    choice = rng.randrange(6)
    if choice == 0:
        r.value = mutate_value(r.value or b"", rng, pool)
    elif choice == 1:
        r.key = rng.choice((None, b"", b"\x00\x00\x00\x02", b"\xff\xff\x00\x03", rng.randbytes(3)))
    elif choice == 2:
        r.headers = ((rng.choice(_BAD_UTF8), rng.choice((None, b"v"))),) * rng.randint(1, 3)
    elif choice == 3:
        r.offset_delta, r.timestamp_delta = rng.choice(((-1, 0), (2**31 - 1, 2**63 - 1), (0, -(2**63))))
    elif choice == 4:
        recs.append(r) if rng.random() < 0.5 else recs.remove(r)
    else:
        attributes = (attributes & ~0x07) | rng.randrange(5)
    try:
        new = encode_batch(recs, base_offset=batch.base_offset, base_timestamp=batch.base_timestamp,
                           partition_leader_epoch=batch.partition_leader_epoch, attributes=attributes)
    except (KraftlogError, ValueError, OverflowError, struct.error):
        return data
    return data[:s] + new + data[e:]


def _pick(data: bytes, rng: random.Random, fits: Callable[[int], bool], tries: int = 32) -> int:
    """A position where ``fits`` holds, by sampling (a scan would cost O(n) per mutation), else any."""
    for _ in range(tries if data else 0):
        i = rng.randrange(len(data))
        if fits(i):
            return i
    return rng.randrange(len(data) + 1)


def hostile_uvarint(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    """Put a huge count, string length or over-long varint where a small one was, or anywhere."""
    at = _pick(data, rng, lambda i: data[i] < 0x20)
    return data[:at] + rng.choice(_HOSTILE_UVARINTS) + data[at + 1 :]


def invalid_utf8(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    """Overwrite bytes (inside a string, with luck) with an invalid UTF-8 sequence."""
    bad = rng.choice(_BAD_UTF8)
    at = _pick(data, rng, lambda i: 0x20 < data[i] < 0x7F)
    return data[:at] + bad + data[at + len(bad) :]


#: Strings that are valid UTF-8 yet trip code that treats names as numbers or text as ASCII.
_ODD_TEXT = ("²", "--5", "-", "1" * 5000, "٣", "\u0000", "\u202e", "𝟙𝟚", "9" * 20, " 1", "\ud7ff", "NaN")


def odd_text(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    """Replace what looks like a compact string (length prefix, then that many printable bytes)."""
    at = _pick(data, rng, lambda i: 1 < data[i] < 0x80 and i + data[i] <= len(data)
               and all(0x20 <= c < 0x7F for c in data[i + 1 : i + data[i]]), tries=256)
    old = data[at] - 1 if at < len(data) and 1 < data[at] < 0x80 else 0
    text = rng.choice(_ODD_TEXT).encode()
    return data[:at] + write_uvarint(len(text) + 1) + text + data[at + 1 + old :]


def reframe(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    """Read the body under another frame: other api key or version, frame 0 or 2, non-minimal varints."""
    m = rng.choice(METADATA_RECORDS)
    version = rng.choice(list(m.valid_versions)) if rng.random() < 0.8 else rng.choice((-1, 0x7FFF, 0x8000, 99))
    frame = rng.choice((b"\x01", b"\x01", b"\x00", b"\x02", b"\x81\x00"))
    uvarint = write_uvarint
    head = frame + uvarint(m.api_key if rng.random() < 0.9 else 13) + uvarint(version & 0xFFFFFFFF)
    return head + (data[3:] if len(data) > 3 else data)


def _value_splice(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    other = rng.choice(pool)
    a, b = sorted((rng.randrange(len(other) + 1), rng.randrange(len(other) + 1)))
    at = rng.randrange(len(data) + 1)
    return data[:at] + other[a:b] + data[at:]


def _append_garbage(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    return data + rng.choice((b"\x00", b"\x01\x00", rng.randbytes(rng.randint(1, 8))))


def _cut_value(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


Mutation = Callable[[bytes, random.Random, list[bytes]], bytes]
VALUE_MUTATIONS: tuple[Mutation, ...] = (
    flip_bits, interesting_int, hostile_uvarint, hostile_uvarint, invalid_utf8, odd_text, reframe, delete_range,
    insert_bytes, _value_splice, _append_garbage, _cut_value,
)
FILE_MUTATIONS: tuple[Mutation, ...] = (
    flip_bits, interesting_int, header_field, header_field, truncate, splice, splice, rewrite_record,
    rewrite_record, rewrite_record, hostile_record_varint, hostile_record_varint, insert_bytes, delete_range,
)


def mutate_value(value: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    for _ in range(rng.randint(1, 3)):
        value = rng.choice(VALUE_MUTATIONS)(value, rng, pool)
    return value


def mutate_record_input(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    control, key, value = _split_record(data)
    roll = rng.random()
    if roll < 0.05:
        control = not control
    elif roll < 0.15:
        key = rng.choice((b"\x00\x00", b"\xff\xff\x00\x02", b"\x00\x07\x00\x06", b"\x00\x00\x00" + bytes(
            (rng.randrange(8),)), rng.randbytes(4)))
    elif roll < 0.17:
        value = None
    else:
        values = [_split_record(p)[2] or b"" for p in rng.sample(pool, min(4, len(pool)))]
        value = mutate_value(value or b"", rng, values or [b""])
    return record_input(key, value, control)


def mutate_file(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    for _ in range(rng.randint(1, 3)):
        data = rng.choice(FILE_MUTATIONS)(data, rng, pool)
    if rng.random() < 0.2:
        data = _fix_crcs(data, _spans(data))
    return data


# ---------------------------------------------------------------------------------------- targets


def _shape(text: str) -> str:
    """A message with its numbers blanked: distinct shapes are distinct behaviour."""
    return re.sub(r"-?\d+", "N", text)[:100]


def reader_target(data: bytes) -> set:
    """Walk the bytes; batches and regions must tile them exactly, with or without record decoding."""
    read = reader.read_log_stream
    limits = _limits()
    items = list(read(io.BytesIO(data), len(data), limits))
    tiles, pos, seen = [], 0, set()
    for item in items:
        size = item.size if isinstance(item, Batch) else item.length
        if item.position != pos or size <= 0:
            raise AssertionError(f"accounting: item at {item.position} of {size} bytes, expected at {pos}")
        tiles.append((pos, size, isinstance(item, Batch)))
        pos += size
        if isinstance(item, Batch):
            seen.add((item.attributes, item.crc_valid, min(len(item.records), 2),
                      item.error and _shape(item.error)))
        else:
            seen.add(f"region {item.reason} {_shape(item.detail)}")
    if pos != len(data):
        raise AssertionError(f"accounting: items cover {pos} of {len(data)} bytes")
    headers = [(i.position, i.size if isinstance(i, Batch) else i.length, isinstance(i, Batch))
               for i in read(io.BytesIO(data), len(data), limits, records=False)]
    if headers != tiles:
        raise AssertionError("accounting: a header-only walk splits the file differently")
    return seen


def _check_metadata(value: bytes | None) -> set[str]:
    rec = decode_metadata(value)
    json.dumps(rec.to_json())
    rec.dump_text(0)
    redact(rec).to_json()
    if rec.error is not None:
        return {f"metadata {rec.api_key} {_shape(rec.error)}"}
    entity_of(rec)
    canonical = encode_record(rec)
    again = decode_metadata(canonical)
    if again.error is not None or encode_record(again) != canonical:
        raise AssertionError(f"metadata round trip: {again.error or 'bytes differ'}")
    return {f"metadata {rec.api_key} v{rec.version} tags={len(rec.unknown_tags)}"}


def _check_control(key: bytes, value: bytes | None) -> set[str]:
    rec = decode_control(key, value)
    json.dumps(rec.to_json())
    rec.dump_text()
    if rec.error is not None or rec.data is None:
        return {f"control {rec.type_id} {_shape(rec.error or 'no data')}"}
    k2, v2 = encode_control(rec.type_id, rec.data, rec.key_version)
    again = decode_control(k2, v2)
    if again.error is not None or encode_control(again.type_id, again.data, again.key_version) != (k2, v2):
        raise AssertionError(f"control round trip: {again.error or 'bytes differ'}")
    return {f"control {rec.type_id} v{rec.value_version}"}


def record_target(data: bytes) -> set[str]:
    """Decode as a metadata or control record; what decodes must re-encode to a fixed point."""
    control, key, value = _split_record(data)
    return _check_control(key, value) if control else _check_metadata(value)


class FileTarget:
    """A target that reads a real file, as the commands do, in a directory outside the repository."""

    def __init__(self, workdir: Path) -> None:
        d = workdir / "__cluster_metadata-0"
        d.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        self.lf = LogFile(d / "00000000000000000000.log", "segment", 0)


class ReplayTarget(FileTarget):
    """Replay the file's entries into an image, then render it every way the commands do."""

    def __call__(self, data: bytes) -> set[str]:
        self.lf.path.write_bytes(data)
        problems = records.ReadProblems()
        image = replay(records.iter_entries(self.lf, _limits(), problems)).image
        json.dumps(image.to_json(redact=False))
        image.to_json()
        render_tree(image)
        metadata_response(image)
        diff(type(image).empty(), image)
        return {_shape(p.type + " " + p.message) for p in image.problems} | {
            _shape(m.split(": ", 1)[-1]) for m in problems.messages}


class CliTarget(FileTarget):
    """``dump`` (text, jsonl, --stats) and ``inspect`` (text, json) as an operator runs them; the
    jsonl batch sizes plus the lengths of its error lines must add up to the file size."""

    def __call__(self, data: bytes) -> set[str]:
        self.lf.path.write_bytes(data)
        path, where = str(self.lf.path), str(self.workdir)
        lines = [json.loads(line) for line in self._cli("dump", "--format", "jsonl", path).splitlines()]
        covered = sum(x["size"] if x["kind"] == "batch" else x.get("length", 0) for x in lines)
        if covered != len(data):
            raise AssertionError(f"dump accounting: batches and error lengths cover {covered} of {len(data)} bytes")
        self._cli("dump", path)
        self._cli("dump", "--stats", path)
        self._cli("inspect", where)
        self._cli("inspect", "--format", "json", where)
        return {f"{x['kind']} {_shape(str(x.get('error', '')))}" for x in lines}

    @staticmethod
    def _cli(*argv: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            status = cli_main([argv[0], "--max-decompressed", "1MiB", *argv[1:]])
        if status not in (0, 1):
            raise AssertionError(f"kraftlog {' '.join(argv)} exited {status}")
        return out.getvalue()


# ----------------------------------------------------------------------------------------- runner


class Hang(BaseException):
    """Raised by the interval timer inside an input that runs past HANG_SECONDS."""


def _on_alarm(signum, frame):
    raise Hang(f"input still running after {HANG_SECONDS} s")


def peak_rss_mb() -> float:
    """``getrusage``'s peak RSS. Linux carries it over ``exec`` from the parent, so a run started
    by a large process (a test session) starts from that process's peak."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def own_peak_rss_mb() -> float:
    """The peak RSS of this program alone (``VmHWM``), where ``/proc`` has it; else ``peak_rss_mb``."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return peak_rss_mb()


class Runner:
    """Runs inputs through a target, counting runs, typed errors, crashes and the slowest input."""

    def __init__(self, name: str, target: Callable[[bytes], set], crash_dir: Path, max_len: int,
                 alarm: bool) -> None:
        self.name, self.target, self.crash_dir, self.max_len = name, target, crash_dir, max_len
        self.runs = self.typed = 0
        self.crashes: dict[str, dict] = {}
        self.slowest = (0.0, 0)  # CPU seconds, input length
        self.slowest_wall = 0.0
        self.seen: set = set()
        self.start = time.monotonic()
        self.alarm = alarm  # off under libFuzzer, whose -timeout owns SIGALRM
        if alarm:
            signal.signal(signal.SIGALRM, _on_alarm)

    def run(self, data: bytes) -> bool:
        """Run one input; True when it showed behaviour not seen before."""
        data = data[: self.max_len]
        self.runs += 1
        if self.alarm:
            signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            seen = self.target(data)
        except KraftlogError:
            self.typed += 1
            seen = set()
        except (Exception, Hang) as exc:  # everything else is a finding
            self._finding(data, exc)
            seen = set()
        finally:
            if self.alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
        # CPU time decides: on a shared, niced machine the wall clock also counts other processes
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        self.slowest_wall = max(self.slowest_wall, wall)
        if cpu > self.slowest[0]:
            self.slowest = (cpu, len(data))
            if cpu > SLOW_SECONDS / 10:  # kept for a look at what costs time
                (self.crash_dir / f"{self.name}-slowest.bin").write_bytes(data)
        if cpu > SLOW_SECONDS:
            self._finding(data, TimeoutError(f"{cpu:.2f} s of CPU for {len(data)} bytes"), "slow input")
        if own_peak_rss_mb() > RSS_BUDGET_MB:
            self._finding(data, MemoryError(f"peak RSS {own_peak_rss_mb():.0f} MB"), "peak RSS over budget")
        new = seen - self.seen
        self.seen |= new
        return bool(new)

    def _finding(self, data: bytes, exc: BaseException, sig: str | None = None) -> None:
        """Count a finding under a signature (exception type and innermost line); keep 3 inputs of each."""
        if sig is None:
            tb = traceback.extract_tb(exc.__traceback__)
            sig = f"{type(exc).__name__} at " + next((f"{Path(f.filename).name}:{f.lineno}" for f in tb[-1:]), "?")
        entry = self.crashes.setdefault(sig, {"count": 0, "message": str(exc)[:200], "inputs": []})
        entry["count"] += 1
        if len(entry["inputs"]) < 3:
            path = self.crash_dir / f"{self.name}-{hashlib.sha1(data).hexdigest()[:16]}.bin"
            path.write_bytes(data)
            entry["inputs"].append(str(path))
            if len(entry["inputs"]) == 1:
                print(f"fuzz: new finding {sig}: {exc}\n" + "".join(traceback.format_exception(exc)),
                      file=sys.stderr, flush=True)

    def report(self, engine: str, seeds: int) -> dict:
        elapsed = time.monotonic() - self.start
        return {
            "target": self.name, "engine": engine, "seeds": seeds, "runs": self.runs,
            "crashes": sum(c["count"] for c in self.crashes.values()), "findings": self.crashes,
            "typed_errors": self.typed, "behaviours": len(self.seen), "elapsed_s": round(elapsed, 1),
            "rate_per_s": round(self.runs / elapsed, 1) if elapsed else None,
            "slowest_cpu_s": round(self.slowest[0], 4), "slowest_len": self.slowest[1],
            "slowest_wall_s": round(self.slowest_wall, 4),
            "peak_rss_mb": round(peak_rss_mb(), 1), "own_peak_rss_mb": round(own_peak_rss_mb(), 1),
            "crash_dir": str(self.crash_dir),
        }


def run_loop(runner: Runner, seeds: list[bytes], mutate, args) -> None:
    """The seeded mutation loop: inputs showing new behaviour join the pool (bounded in bytes)."""
    rng = random.Random(args.seed)
    pool = list(seeds)
    pool_bytes = sum(map(len, pool))
    deadline = runner.start + args.time_limit if args.time_limit else None
    for s in seeds:
        runner.run(s)
    while runner.runs < args.runs and (deadline is None or time.monotonic() < deadline):
        data = mutate(rng.choice(pool), rng, pool)[: args.max_len]
        if runner.run(data) and data:
            while pool_bytes + len(data) > POOL_BYTES and len(pool) > len(seeds):  # evict a kept input
                i = rng.randrange(len(seeds), len(pool))
                pool_bytes -= len(pool[i])
                pool[i] = pool[-1]
                pool.pop()
            if pool_bytes + len(data) <= POOL_BYTES:
                pool.append(data)
                pool_bytes += len(data)


def run_atheris(runner: Runner, seeds: list[bytes], mutate, args, report: Callable[[], None]) -> None:
    """libFuzzer drives; half the mutations are ours. libFuzzer's corpus is a temp copy of the seeds."""
    import atheris

    corpus = Path(tempfile.mkdtemp(prefix=f"kraftlog-fuzz-{runner.name}-corpus-"))
    for s in seeds:
        (corpus / hashlib.sha1(s).hexdigest()).write_bytes(s)
    deadline = runner.start + args.time_limit if args.time_limit else None

    def one(data: bytes) -> None:
        runner.run(data)
        if runner.runs >= args.runs or (deadline is not None and time.monotonic() >= deadline):
            report()
            os._exit(1 if runner.crashes else 0)  # libFuzzer would exit without returning to us

    def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if rng.random() < 0.5:
            return atheris.Mutate(data, max_size)
        return mutate(data, rng, seeds)[:max_size]

    argv = [sys.argv[0], f"-max_len={args.max_len}", f"-seed={args.seed or 1}", "-rss_limit_mb=2048",
            f"-timeout={int(HANG_SECONDS)}", f"-artifact_prefix={runner.crash_dir}/", str(corpus)]
    atheris.Setup(argv, one, custom_mutator=custom_mutator)
    atheris.Fuzz()


#: Target name -> a function of one input, or a FileTarget class to instantiate with a work directory.
TARGETS = {"reader": reader_target, "record": record_target, "replay": ReplayTarget, "cli": CliTarget}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", choices=list(TARGETS), required=True)
    p.add_argument("--runs", type=int, default=100_000, help="inputs to run (seeds included)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-len", type=int, default=64 * 1024, help="largest input in bytes")
    p.add_argument("--corpus-dir", type=Path, action="append",
                   help="seed directory, repeatable (default: ../shared/corpus/real and fixtures/)")
    p.add_argument("--time-limit", type=float, default=0, help="stop after this many seconds (0: no limit)")
    p.add_argument("--engine", choices=["auto", "atheris", "loop"], default="auto",
                   help="auto: atheris when installed, else the seeded mutation loop")
    p.add_argument("--crash-dir", type=Path,
                   help="where crashing inputs (and the file targets' work file) go (default: a new temp dir)")
    args = p.parse_args(argv)

    engine = args.engine
    if engine == "auto":
        try:
            import atheris  # noqa: F401

            engine = "atheris"
        except ImportError:
            engine = "loop"
    if engine == "atheris":
        import atheris

        with atheris.instrument_imports(include=["kraftlog"]):
            _load_kraftlog()
    else:
        _load_kraftlog()

    crash_dir = args.crash_dir or Path(tempfile.mkdtemp(prefix=f"kraftlog-fuzz-{args.target}-"))
    if REPO in (crash_dir.resolve(), *crash_dir.resolve().parents):
        p.error("--crash-dir must be outside the repository")
    crash_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    seeds = load_seeds(args.target, args.corpus_dir or list(DEFAULT_CORPUS), args.max_len, rng)
    target = TARGETS[args.target]
    if isinstance(target, type):
        target = target(crash_dir / "work")
    mutate = mutate_record_input if args.target == "record" else mutate_file
    runner = Runner(args.target, target, crash_dir, args.max_len, alarm=engine == "loop")

    def report() -> None:
        print(json.dumps(runner.report(engine, len(seeds))), flush=True)

    if engine == "atheris":
        run_atheris(runner, seeds, mutate, args, report)
    run_loop(runner, seeds, mutate, args)
    report()
    return 1 if runner.crashes else 0


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_MB << 20, ADDRESS_SPACE_MB << 20))
    sys.exit(main())
