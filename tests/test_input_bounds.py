"""Bounded memory and safe output: a batch declaring more records than Kafka's controller writes is
reported, not expanded (CLI reader and the job's columnar walk alike); control characters from a log
never reach a terminal; a full disk or an unwritable output is one line and exit 1."""

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from kraftlog.cli.main import main
from kraftlog.files.reader import DEFAULT_MAX_RECORDS_PER_BATCH, Limits, read_log_stream
from kraftlog.files.walk import walk
from kraftlog.schema import encode_metadata
from kraftlog.schema.records import NOOP_VALUE
from kraftlog.wire import text
from kraftlog.wire.batch import Record, encode_batch
from kraftlog.wire.codecs import ZSTD
from kraftlog.wire.text import printable

SEGMENT = "00000000000000000000.log"
TOPIC = encode_metadata("TOPIC_RECORD", 0, {"name": "orders", "topicId": "3ql6QVjQQWKGtGd-HqfNxA"})


def _batch(values: list[bytes], base_offset: int = 0, attributes: int = 0) -> bytes:
    return encode_batch([Record(0, 0, None, v, (), 0, 0, i) for i, v in enumerate(values)],
                        base_offset=base_offset, base_timestamp=1_700_000_000_000, partition_leader_epoch=1,
                        attributes=attributes)


#: Some 16 KB of zstd holding 20,001 NoOps between two ordinary batches.
MANY = DEFAULT_MAX_RECORDS_PER_BATCH * 2 + 1
LOG = _batch([TOPIC]) + _batch([NOOP_VALUE] * MANY, 1, ZSTD) + _batch([TOPIC], 1 + MANY)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_the_reader_refuses_to_expand_an_over_limit_batch():
    assert len(LOG) < 32 * 1024  # some 16 KB
    items = list(read_log_stream(io.BytesIO(LOG), len(LOG)))
    assert [len(b.records) for b in items] == [1, 0, 1]
    big = items[1]
    assert (big.records_count, big.crc_valid, big.last_offset) == (MANY, True, MANY)
    assert big.error == (f"RecordBatchTooLarge: the batch declares {MANY} records, more than the 10000 allowed "
                         "(--max-records-per-batch); its records are not read")
    roomy = list(read_log_stream(io.BytesIO(LOG), len(LOG), Limits(max_records_per_batch=MANY)))
    assert [len(b.records) for b in roomy] == [1, MANY, 1] and roomy[1].error is None


def test_the_columnar_walk_refuses_it_the_same_way():
    (w,) = list(walk(LOG))
    assert w.errors == [None, list(read_log_stream(io.BytesIO(LOG), len(LOG)))[1].error, None]
    assert w.rec_offset.tolist() == [0, 1 + MANY]
    (w,) = list(walk(LOG, Limits(max_records_per_batch=MANY)))
    assert len(w.rec_offset) == MANY + 2 and w.errors == [None] * 3


def test_dump_and_replay_report_the_batch(tmp_path):
    path = tmp_path / "__cluster_metadata-0" / SEGMENT
    path.parent.mkdir()
    path.write_bytes(LOG)
    status, out, err = _cli("dump", "--format", "jsonl", str(path))
    lines = [json.loads(line) for line in out.splitlines()]
    assert status == 1
    assert sum(line["kind"] == "record" for line in lines) == 2
    (error,) = [line for line in lines if line["kind"] == "error"]
    assert error["scope"] == "batch" and error["baseOffset"] == 1 and "RecordBatchTooLarge" in error["error"]
    status, out, _ = _cli("dump", "--format", "jsonl", "--max-records-per-batch", str(MANY), str(path))
    assert status == 0 and sum('"kind":"record"' in line for line in out.splitlines()) == MANY + 2
    status, _, err = _cli("replay", "--offset", str(MANY + 1), str(tmp_path))
    assert status == 1 and "RecordBatchTooLarge" in err


ESC = "\x1b]0;owned\x07\x1b[2J\r\x9b31m\u202e"


def test_printable_escapes_every_control_character():
    assert printable(ESC) == "\\u001B]0;owned\\u0007\\u001B[2J\\u000D\\u009B31m\\u202E"
    assert printable("a\nb\tc") == "a\\u000Ab\\u0009c"
    assert printable("a\nb\tc\x1b", lines=True) == "a\nb\tc\\u001B"
    assert printable("plain text, ünïcode") == "plain text, ünïcode"


def test_printable_escapes_every_character_whatever_its_neighbours():
    """``printable`` passes text that ``str.isprintable`` accepts without its patterns: every character
    they match must be one isprintable refuses, alone and inside longer text, in either mode."""
    for code in range(0x110000):
        c = chr(code)
        if text._UNSAFE.match(c):
            assert printable("text " + c + " ünï\n", lines=c not in "\t\n") != "text " + c + " ünï\n", hex(code)


def test_escape_sequences_from_the_log_never_reach_the_terminal(tmp_path):
    """A topic named with escape sequences, in every text view (and jsonl stays JSON)."""
    name = "evil" + ESC
    topic = encode_metadata("TOPIC_RECORD", 0, {"name": name, "topicId": "3ql6QVjQQWKGtGd-HqfNxA"})
    meta = tmp_path / "node\x1b[31m\n" / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    (meta / SEGMENT).write_bytes(_batch([topic]) + _batch([NOOP_VALUE], 1))
    (meta.parent / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    for argv in (["dump", str(meta / SEGMENT)], ["dump", "--decoder", "raw", "--no-redact", str(meta / SEGMENT)],
                 ["replay", "--offset", "1", "--format", "tree", str(meta.parent)],
                 ["diff", "--from", "0", "--to", "1", str(meta.parent)],
                 ["inspect", str(meta.parent)], ["history", "--topic", name, str(meta.parent)]):
        status, out, err = _cli(*argv)
        for char in "\x1b\x07\r\x9b\u202e":
            assert char not in out and char not in err, (argv, out, err)
    status, out, _ = _cli("dump", "--format", "jsonl", str(meta / SEGMENT))
    records = [json.loads(line) for line in out.splitlines() if '"kind":"record"' in line]
    assert records[0]["metadata"]["data"]["name"] == name


def test_a_line_break_in_a_name_cannot_forge_a_line_of_text_output(tmp_path):
    """A log dir and a topic named to look like more output: ``inspect`` and the tree print each on its
    own line, escaped."""
    name = "t\n  forged:"
    topic = encode_metadata("TOPIC_RECORD", 0, {"name": name, "topicId": "3ql6QVjQQWKGtGd-HqfNxA"})
    meta = tmp_path / "node\n  problem: forged" / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    (meta / SEGMENT).write_bytes(_batch([topic]) + _batch([NOOP_VALUE], 1))
    (meta.parent / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    for argv in (["inspect", str(meta.parent)], ["replay", "--offset", "1", "--format", "tree", str(meta.parent)]):
        status, out, err = _cli(*argv)
        assert status == 0, err
        assert not [line for line in out.splitlines() if line.strip() in ("problem: forged", "forged:")], out
        assert "\\u000A" in out


def _process(*argv: str, **kw) -> subprocess.CompletedProcess:
    kw = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kw}
    return subprocess.run([sys.executable, "-c", "import sys; from kraftlog.cli.main import main; sys.exit(main())",
                           *argv], text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}, **kw)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "c"
    assert _process("generate", str(out), "--duration", "10m", "--seed", "3").returncode == 0
    return out


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this machine")
def test_a_full_disk_is_one_line(generated):
    with open("/dev/full", "w") as full:
        done = _process("dump", str(generated), stdout=full)
    assert done.returncode == 1
    assert done.stderr == "kraftlog: writing the output: No space left on device\n"


def test_an_unwritable_output_is_one_line(generated, tmp_path):
    done = _process("report", str(generated), "-o", "/proc/no/report.html")
    assert (done.returncode, done.stderr.splitlines()[-1]) == (1, "kraftlog: /proc/no/report.html: No such file or directory")
    done = _process("generate", "/proc/no-such/out", "--duration", "1m")
    assert done.returncode == 1 and "Traceback" not in done.stderr
