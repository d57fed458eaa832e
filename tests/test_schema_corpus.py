"""The schema layer against ground truth: Kafka's own decodings of the shared corpus.

Every metadata payload and control object must equal what Kafka's JSON converters printed
(golden), every kafka-dump-log text payload must match character for character, and every value
Kafka wrote must re-encode to the same bytes.
"""

import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import CORPUS, NO_CORPUS, golden_files, read_golden
from kraftlog.files.reader import read_log_file
from kraftlog.schema import decode_control, decode_metadata, encode_metadata, encode_record
from kraftlog.wire.batch import Batch

pytestmark = pytest.mark.corpus

if not CORPUS.is_dir():
    pytest.skip(NO_CORPUS, allow_module_level=True)


def _decoded_golden() -> list[tuple[Path, Path]]:
    """Golden files whose records carry a decoded ``metadata`` or ``control`` object."""
    return [(raw, g) for raw, g in golden_files()
            if any("metadata" in line or "control" in line for line in read_golden(g))]


def _records(path: Path):
    """(batch, record) in file order, failing on anything the reader could not take as a batch."""
    for item in read_log_file(path):
        assert isinstance(item, Batch), f"{path}: {item}"
        assert item.error is None, f"{path}: {item.error}"
        for r in item.records:
            yield item, r


def _real_metadata_files() -> list[Path]:
    """Segments and snapshots (live or ``.deleted``) of every metadata log dir, and bootstrap files."""
    name = re.compile(r"\d{20}(\.log|-\d{10}\.checkpoint(\.deleted)?)")
    return sorted(p for p in (CORPUS / "real").rglob("*") if p.is_file() and (
        p.name == "bootstrap.checkpoint" or (p.parent.name == "__cluster_metadata-0" and name.fullmatch(p.name))))


DECODED = _decoded_golden()
REAL_METADATA = _real_metadata_files()


def test_corpus_has_what_these_tests_need():
    assert len(DECODED) >= 20
    assert len(REAL_METADATA) >= 200


@pytest.mark.parametrize("raw,golden", DECODED, ids=[str(g.relative_to(CORPUS / "golden")) for _, g in DECODED])
def test_every_payload_equals_kafkas_json(raw, golden):
    expected = [line for line in read_golden(golden) if line["kind"] == "record"]
    ours = list(_records(raw))
    assert len(ours) == len(expected)
    compared = 0
    for (batch, r), line in zip(ours, expected, strict=True):
        assert r.offset == line["offset"]
        if "metadata" in line:
            assert not batch.is_control
            assert decode_metadata(r.value).to_json() == line["metadata"], f"offset {r.offset}"
            compared += 1
        elif "control" in line:
            assert batch.is_control
            assert decode_control(r.key, r.value).to_json() == line["control"], f"offset {r.offset}"
            compared += 1
    assert compared == sum("metadata" in line or "control" in line for line in expected) > 0


def test_golden_covers_every_control_type_and_several_versions():
    seen = Counter()
    for _, golden in DECODED:
        for line in read_golden(golden):
            if "control" in line:
                seen[line["control"]["type"]] += 1
            elif "metadata" in line:
                seen[(line["metadata"]["type"], line["metadata"]["version"])] += 1
    assert {"ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "KRAFT_VERSION",
            "KRAFT_VOTERS"} <= set(seen)
    assert {("PARTITION_RECORD", v) for v in range(3)} <= set(seen)


def _round_trip(path: Path) -> Counter:
    kinds = Counter()
    for batch, r in _records(path):
        if batch.is_control:
            rec = decode_control(r.key, r.value)
            assert rec.error is None, f"{path} offset {r.offset}: {rec.error}"
            continue
        rec = decode_metadata(r.value)
        assert rec.error is None, f"{path} offset {r.offset}: {rec.error}"
        assert not rec.unknown_tags  # Kafka 3.9's classes found none either (golden README)
        assert encode_metadata(rec.type, rec.version, rec.data) == r.value, f"{path} offset {r.offset}"
        assert encode_record(rec) == r.value
        kinds[(rec.type, rec.version)] += 1
    return kinds


def test_all_metadata_record_types_round_trip_byte_identically():
    kinds = _round_trip(CORPUS / "kafka-serde/metadata/out/all-metadata-record-types.log")
    assert len(kinds) == 34 and sum(kinds.values()) == 34  # every type of 3.9, every version once


def test_kafka_serde_metadata_log_round_trips_including_compressed_batches():
    kinds = _round_trip(CORPUS / "kafka-serde/metadata/out/__cluster_metadata-0/00000000000000000000.log")
    assert sum(kinds.values()) == 38  # 39 offsets, one of them the LeaderChange control record


def test_every_real_metadata_file_decodes_without_error_and_round_trips():
    total = Counter()
    for path in REAL_METADATA:
        total += _round_trip(path)
    assert total[("NO_OP_RECORD", 0)] > 100_000
    assert total[("PARTITION_RECORD", 2)] > 1000 and total[("PARTITION_CHANGE_RECORD", 0)] > 1000
    assert {("REGISTER_BROKER_RECORD", 2), ("REGISTER_BROKER_RECORD", 3), ("BROKER_REGISTRATION_CHANGE_RECORD", 1),
            ("BEGIN_TRANSACTION_RECORD", 0), ("ZK_MIGRATION_STATE_RECORD", 0)} <= set(total)


def _text_dumps() -> list[Path]:
    return sorted((CORPUS / "kafka-serde").rglob("*.metadata-dump.txt"))


@pytest.mark.parametrize("dump", _text_dumps(), ids=lambda p: p.name)
def test_dump_text_matches_kafka_dump_log(dump):
    """The part of each ``| offset: ...`` line after the record header, character for character."""
    raw = dump.with_name(dump.name.removesuffix(".metadata-dump.txt"))
    expected = {}
    for line in dump.read_text().splitlines():
        m = re.fullmatch(r"\| offset: (\d+) .*? headerKeys: \[\] (.*)", line)
        if m:
            expected[int(m.group(1))] = m.group(2)
    ours = {}
    for batch, r in _records(raw):
        rec = decode_control(r.key, r.value) if batch.is_control else decode_metadata(r.value)
        ours[r.offset] = rec.dump_text()
    assert ours == expected and len(expected) >= 5
