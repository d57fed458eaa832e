"""`kraftlog dump --format jsonl` against what Kafka's own readers print, line for line."""

import io
import json

import pytest

from conftest import golden_files, read_golden
from kraftlog.cli.dump import DumpOptions, dump_file
from kraftlog.files.paths import classify

GOLDEN = golden_files()


def _dump(path) -> list[dict]:
    out = io.StringIO()
    dump_file(classify(path), out, DumpOptions(fmt="jsonl", redact=False))
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.skipif(not GOLDEN, reason="the shared corpus (../shared/corpus) is absent")
@pytest.mark.parametrize("raw,golden", GOLDEN, ids=[str(g.name) for _, g in GOLDEN])
def test_dump_equals_kafka_line_for_line(raw, golden):
    lines = _dump(raw)
    assert lines[0] == {"kind": "file", "path": str(raw), "bytes": raw.stat().st_size}
    expected = read_golden(golden)
    assert len(lines) - 1 == len(expected)
    for mine, theirs in zip(lines[1:], expected, strict=True):
        assert mine == theirs, f"at {theirs.get('kind')} offset {theirs.get('offset', theirs.get('baseOffset'))}"


def _text_dumps():
    from conftest import CORPUS

    return sorted((CORPUS / "kafka-serde").rglob("*.metadata-dump.txt")) if CORPUS.is_dir() else []


@pytest.mark.skipif(not _text_dumps(), reason="the shared corpus (../shared/corpus) is absent")
@pytest.mark.parametrize("expected", _text_dumps(), ids=lambda p: p.name)
def test_text_dump_matches_kafka_dump_log_layout(expected, capsys):
    from kraftlog.cli.main import main

    raw = expected.with_name(expected.name.removesuffix(".metadata-dump.txt"))
    assert main(["dump", "--no-redact", "--decoder", "metadata", str(raw)]) == 0
    mine = capsys.readouterr().out.splitlines()
    theirs = expected.read_text().splitlines()
    assert mine[0] == f"Dumping {raw}"
    assert mine[1:] == theirs[1:]  # their first line names the path they were written from


def test_dump_exit_codes_and_accounting(tmp_path, capsys):
    from kraftlog.cli.main import main
    from kraftlog.wire.batch import Record, encode_batch

    good = encode_batch([Record(0, 0, None, b"\x01\x14\x00\x00", (), 0, 0, 0)], base_offset=0, base_timestamp=5)
    seg = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    seg.write_bytes(good + good[:70])
    assert main(["dump", "--format", "jsonl", str(seg)]) == 1
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    err = [x for x in lines if x["kind"] == "error"]
    assert err == [{"kind": "error", "scope": "walk", "position": len(good), "length": 70, "reason": "truncated",
                    "error": "Skipped: batch of 72 bytes is cut off at 70"}]
    end = lines[-1]
    assert end["validBytes"] + err[0]["length"] == end["bytes"] == len(good) + 70
    assert lines[2]["metadata"] == {"type": "NO_OP_RECORD", "version": 0, "data": {}}
    assert main(["dump", str(tmp_path / "missing.log")]) == 2
    assert main(["dump", str(seg.parent)]) == 1
    assert f"Found 70 invalid bytes at the end of {seg.name}" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert main(["dump", str(tmp_path / "empty")]) == 2  # a wrong folder must not look like a clean dump
    assert "no segments or checkpoints under" in capsys.readouterr().err
    assert main(["dump", str(tmp_path / "empty"), str(seg)]) == 1  # the empty one is only noted
