"""The whole-log commands' fast paths give what their slow paths give, byte for byte (issue 18).

Each fast path has a switch; the tests run a command both ways on the fixtures, the real corpus and
a generated log with NoOps, metadata transactions and a batch whose CRC fails, and compare.
"""

import importlib
import io
import json
from pathlib import Path

import pytest

from conftest import corpus_log_files
from kraftlog.cli import dump as dump_cli
from kraftlog.cli import render
from kraftlog.cli.dump import DumpOptions, Stats, TopicFilter, dump_file
from kraftlog.files.logdir import find_nodes
from kraftlog.files.paths import classify
from kraftlog.files.reader import Limits
from kraftlog.synth import ClusterSpec, generate
from kraftlog.wire.batch import (
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    Record,
    encode_batch,
)

REPO = Path(__file__).resolve().parent.parent
START_MS = 1_735_689_600_000
NOOP = b"\x01\x14\x00\x00"


@pytest.fixture(scope="session")
def quiet_log(tmp_path_factory) -> Path:
    """A node's metadata log: NoOps every 500 ms, committed and aborted metadata transactions, and a
    copy of its first segment with one byte flipped inside a batch (its CRC fails)."""
    out = tmp_path_factory.mktemp("fast") / "cluster"
    spec = ClusterSpec(name="", seed="fast", metadata_versions=(21,), start_ms=START_MS, duration_ms=40 * 60_000,
                       brokers=4, topics=4, partitions=3, events_per_hour=240, max_records_per_batch=6,
                       segment_bytes=256 << 10)
    generate(out, [spec])
    meta = next(out.rglob("__cluster_metadata-0"))
    seg = sorted(meta.glob("*.log"))[0]
    damaged = bytearray(seg.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    (out.parent / "damaged").mkdir()
    (out.parent / "damaged" / "00000000000000000000.log").write_bytes(bytes(damaged))
    return meta


def _special_batches(tmp_path: Path) -> Path:
    """Batches of every kind a template must tell apart: LogAppendTime, a delete horizon, a
    transactional producer with sequences, a control record, headers, a raw value holding a 22-digit
    number, and NoOps in between."""
    noop = [Record(0, 0, None, NOOP)]
    parts = [
        encode_batch(noop, base_offset=0, base_timestamp=START_MS),
        encode_batch(noop, base_offset=1, base_timestamp=START_MS + 1, attributes=TIMESTAMP_TYPE_BIT,
                     max_timestamp=START_MS + 7),
        encode_batch(noop, base_offset=2, base_timestamp=START_MS + 2, attributes=DELETE_HORIZON_BIT),
        encode_batch([Record(0, 0, None, NOOP, offset_delta=0), Record(0, 0, None, NOOP, offset_delta=1)],
                     base_offset=3, base_timestamp=START_MS + 3, attributes=TRANSACTIONAL_BIT, producer_id=7,
                     producer_epoch=2, base_sequence=2**31 - 1),
        encode_batch([Record(0, 0, b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")], base_offset=5,
                     base_timestamp=START_MS + 5, attributes=CONTROL_BIT),
        encode_batch([Record(0, 0, None, NOOP, headers=((b"h{}", b"v"),))], base_offset=6, base_timestamp=START_MS + 6),
        encode_batch([Record(0, 0, None, b"9000000000000000000000")], base_offset=7, base_timestamp=START_MS + 8),
        encode_batch(noop, base_offset=8, base_timestamp=START_MS + 9),
        encode_batch(noop, base_offset=9, base_timestamp=START_MS + 9, attributes=TIMESTAMP_TYPE_BIT,
                     max_timestamp=START_MS + 10),
        # the same one-record batch twice (the second from one template for both lines), % in its text
        *(encode_batch([Record(0, 0, None, NOOP, headers=((b"%s%%{}", b"%d"),))], base_offset=10 + k,
                       base_timestamp=START_MS + 11 + k) for k in range(2)),
    ]
    path = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(b"".join(parts))
    return path


def _dump(path: Path, fast: bool, monkeypatch, **opts) -> str:
    monkeypatch.setattr(dump_cli, "TEMPLATES", fast)
    out = io.StringIO()
    dump_file(classify(path), out, DumpOptions(**opts))
    return out.getvalue()


VARIANTS = [dict(fmt="jsonl"), dict(fmt="text"), dict(fmt="jsonl", redact=False),
            dict(fmt="text", skip_noop=True), dict(fmt="jsonl", decoder="raw"),
            dict(fmt="text", offsets=(2, 50)), dict(fmt="jsonl", broker=1)]


def _same_both_ways(path: Path, monkeypatch) -> None:
    for opts in VARIANTS:
        slow = _dump(path, False, monkeypatch, **opts)
        assert _dump(path, True, monkeypatch, **opts) == slow, opts


def test_dump_lines_from_templates_equal_the_renderers(quiet_log, monkeypatch):
    files = sorted(quiet_log.glob("*.log")) + sorted(quiet_log.glob("*.checkpoint"))[:2]
    files.append(quiet_log.parents[1] / "damaged" / "00000000000000000000.log")
    for path in files:
        _same_both_ways(path, monkeypatch)
    text = _dump(files[-1], True, monkeypatch, fmt="text")
    assert "isvalid: false" in text  # the flipped byte was seen
    assert "BEGIN_TRANSACTION_RECORD" in "".join(_dump(p, True, monkeypatch, fmt="text") for p in files[:-1])


def test_dump_templates_tell_batch_kinds_apart(tmp_path, monkeypatch):
    path = _special_batches(tmp_path)
    _same_both_ways(path, monkeypatch)
    lines = [json.loads(x) for x in _dump(path, True, monkeypatch, fmt="jsonl").splitlines()]
    batches = [x for x in lines if x["kind"] == "batch"]
    assert [b["maxTimestamp"] for b in batches][:3] == [START_MS, START_MS + 7, START_MS + 2]
    assert batches[2]["deleteHorizonMs"] == START_MS + 2
    assert batches[3]["lastSequence"] == 0  # Integer.MAX_VALUE + 1 wraps to 0
    assert batches[-3]["timestampType"] == "LogAppendTime" and batches[-3]["maxTimestamp"] == START_MS + 10
    assert [(x["offset"], x["headers"]) for x in lines if x["kind"] == "record"][-2:] == [(o, [["%s%%{}", "JWQ="]]) for o in (10, 11)]


def test_template_with_a_sentinel_like_number_is_refused(tmp_path):
    """A 22-digit run that is not one of the probe's sentinels leaves the shape to the renderer."""
    t = dump_cli._Templates(lambda r: f"{r.offset} 9000000000000000000001 {r.timestamp}",
                            dump_cli._record_probe, 2, ("offset", "timestamp"))
    r = Record(5, 6, None, NOOP)
    assert t.line("shape", r) == "5 9000000000000000000001 6"
    assert t.cache["shape"] is None
    assert t.line("shape", Record(7, 8, None, NOOP)) == "7 9000000000000000000001 8"


@pytest.mark.parametrize("path", corpus_log_files(metadata_only=True) or [None],
                         ids=lambda p: p.parent.parent.name + "/" + p.name if p else "none")
def test_dump_templates_on_the_real_corpus(path, monkeypatch):
    if path is None:
        pytest.skip("the shared corpus (../shared/corpus) is absent")
    for opts in VARIANTS[:2]:
        assert _dump(path, True, monkeypatch, **opts) == _dump(path, False, monkeypatch, **opts)


def test_dump_stats_and_topic_filter_unchanged(quiet_log, monkeypatch):
    seg = sorted(quiet_log.glob("*.log"))[0]
    stats = {fast: Stats() for fast in (True, False)}
    for fast, st in stats.items():
        monkeypatch.setattr(dump_cli, "TEMPLATES", fast)
        dump_file(classify(seg), io.StringIO(), DumpOptions(), st)
    assert stats[True].to_json() == stats[False].to_json()
    assert stats[True].to_json()["noopShare"] > 0.5
    lines = [json.loads(x) for x in _dump(seg, False, monkeypatch, fmt="jsonl").splitlines()]
    name = next(x["metadata"]["data"]["name"] for x in lines if x.get("metadata", {}).get("type") == "TOPIC_RECORD")
    both = [_dump(seg, fast, monkeypatch, fmt="jsonl", topic=TopicFilter(name)) for fast in (True, False)]
    assert both[0] == both[1] and '"PARTITION_RECORD"' in both[0]


def test_dumps_is_json_dumps():
    for obj in ({"a": 1.5, "b": "é\u2028\x00\"", "c": [None, True, False, float("inf"), -0.0, 1e300, 2**70]},
                {"nested": {"x": [{"y": "z"}], "": []}}, {}):
        assert render.dumps(obj) == json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _whole_cluster_state(match, image, redacted: bool):
    """What ``history`` showed before issue 18: the whole cluster rendered, the entity picked from it."""
    if match.config:
        kind, name, key = match.config
        values = image.configs.to_json(redacted).get(f"{kind}:{name}", {})
        return values.get(key) if key else values
    if match.broker is not None:
        return image.brokers.to_json().get(str(match.broker))
    topic = image.topics.to_json().get(match.topic)
    if topic is None or match.partition is None:
        return topic
    return topic["partitions"].get(str(match.partition))


def test_history_renders_only_the_entity_as_the_cluster_shows_it(quiet_log, monkeypatch, capsys):
    from kraftlog.cli import history
    from kraftlog.cli.main import main

    compared = []
    held = history._Matcher.held

    def checked(self, image, redacted):  # rendered at once here; history renders a group of changes later
        mine = held(self, image, redacted)
        assert self.rendered(mine) == _whole_cluster_state(self, image, redacted)
        compared.append(self.rendered(mine))
        return mine

    monkeypatch.setattr(history._Matcher, "held", checked)
    lines = [json.loads(x) for x in _dump(sorted(quiet_log.glob("*.log"))[0], False, monkeypatch,
                                          fmt="jsonl").splitlines()]
    topic = next(x["metadata"]["data"]["name"] for x in lines if x.get("metadata", {}).get("type") == "TOPIC_RECORD")
    for target in (["--topic", topic], ["--topic", topic, "--partition", "1"], ["--topic", topic, "--partition", "99"],
                   ["--broker", "2"], ["--config", f"TOPIC:{topic}"], ["--config", "BROKER:"],
                   ["--config", f"TOPIC:{topic}:retention.ms"], ["--config", "NOPE:x"], ["--topic", "absent"]):
        before = len(compared)
        main(["history", str(quiet_log), *target, "--format", "jsonl"])
        capsys.readouterr()
        if target[1] not in ("absent", "NOPE:x"):
            assert len(compared) > before, target
    assert any(isinstance(c, dict) and c.get("partitions") for c in compared)
    assert any(isinstance(c, dict) and "brokerEpoch" in c for c in compared)


def test_report_noop_fast_path_writes_the_same_page(quiet_log, tmp_path, monkeypatch):
    from kraftlog.cli.main import main
    collect = importlib.import_module("kraftlog.report.collect")

    pages = {}
    for fast in (True, False):
        monkeypatch.setattr(collect, "FAST_NOOPS", fast)
        out = tmp_path / f"{fast}.html"
        assert main(["report", str(quiet_log), "-o", str(out)]) == 0
        pages[fast] = out.read_bytes()
    assert pages[True] == pages[False]
    model = collect.collect(find_nodes(str(quiet_log))[0])
    assert model.type_totals[collect.NO_OP] > model.records // 2 and model.aborted_records > 0


def test_noops_inside_a_transaction_wait_with_it():
    """A NoOp between Begin- and EndTransactionRecord is held as ``apply`` holds it: not the short way."""
    from kraftlog.files.records import is_no_op
    from kraftlog.schema import encode_metadata
    from kraftlog.state.image import ClusterImage

    image = ClusterImage.empty()
    image.apply(_decoded(encode_metadata("BEGIN_TRANSACTION_RECORD", 0, {"name": "t"})), 0, 1, 1)
    assert not image.pass_over(1, 2, 1) and image.provenance.offset == -1
    image.apply(_decoded(encode_metadata("END_TRANSACTION_RECORD", 0, {})), 2, 3, 1)
    assert image.pass_over(3, 4, 2) and image.provenance.to_json() == {"offset": 3, "epoch": 2, "timestamp": 4}
    assert image.raft.leader_epoch == 2
    assert is_no_op(_decoded(b"\x01\x14\x00\x00")) and not is_no_op(_decoded(b"\x01\x14\x00\x00\x00"))


def _decoded(value: bytes):
    from kraftlog.schema import decode_metadata

    return decode_metadata(value)


def test_replay_passes_over_noops_to_the_image_apply_gives(quiet_log):
    from kraftlog.files.records import ReadProblems
    from kraftlog.state.image import ClusterImage
    from kraftlog.state.rebuild import log_entries
    from kraftlog.state.replay import replay

    node = find_nodes(str(quiet_log))[0]
    entries = list(log_entries(node, 0, Limits(), ReadProblems()))
    fast = replay(entries).image
    slow = ClusterImage.empty()
    for e in entries:
        slow.apply(e.record, e.offset, e.timestamp, e.epoch)
    assert fast.to_json() == slow.to_json() and fast.provenance == slow.provenance
    assert (fast.raft.leader_epoch, fast.raft.leader_id) == (slow.raft.leader_epoch, slow.raft.leader_id)
    assert fast.problems == slow.problems


def _scans_both_ways(path: Path):
    """``scan_file`` and what it gave before issue 18: the reader's batches read through their properties."""
    from kraftlog.files.logdir import FileScan, scan_file
    from kraftlog.files.reader import Region, read_log_file

    lf = classify(path)
    s, expected, epochs = FileScan(lf, bytes=path.stat().st_size), None, []
    for item in read_log_file(lf.path, records=False):
        if isinstance(item, Region):
            s.regions.append(item)
            s.skipped_bytes += item.length
            continue
        s.batches += 1
        s.batch_bytes += item.size
        s.records += max(item.records_count, 0)
        s.invalid_batches += not item.is_valid
        if expected is not None and item.base_offset != expected:
            s.discontinuities.append((expected, item.base_offset))
        expected = item.last_offset + 1
        if s.first_offset is None:
            s.first_offset, s.first_timestamp = item.base_offset, item.max_timestamp
        s.last_offset, s.last_timestamp = item.last_offset, item.max_timestamp
        epochs.append(item.partition_leader_epoch)
    s.epochs = (min(epochs), max(epochs)) if epochs else None
    return scan_file(lf), s


def _batches(columns) -> int:
    return sum(len(h["baseOffset"]) for h in columns)


def test_inspect_reads_clean_headers_as_the_reader_does(quiet_log, tmp_path):
    from kraftlog.files.reader import NotClean
    from kraftlog.files.walk import clean_header_columns as clean_headers

    files = [*quiet_log.glob("*.log"), *quiet_log.glob("*.checkpoint"), *(REPO / "fixtures").rglob("*.log"),
             *corpus_log_files(metadata_only=True)]
    for path in files:
        fast, slow = _scans_both_ways(path)
        assert fast == slow, path
    seg = (quiet_log.parents[1] / "damaged" / "00000000000000000000.log").read_bytes()
    clean = sorted(quiet_log.glob("*.log"))[0].read_bytes()
    for name, data in {"crc": seg, "cut": clean[:-7], "tail": clean + b"\x00" * 30, "empty": b""}.items():
        path = tmp_path / name / "00000000000000000000.log"
        path.parent.mkdir()
        path.write_bytes(data)
        fast, slow = _scans_both_ways(path)
        assert fast == slow, name
        if name != "empty":
            with pytest.raises(NotClean):
                list(clean_headers(path))
    assert fast.batches == 0 and slow.regions == []
    assert _batches(clean_headers(sorted(quiet_log.glob("*.log"))[0])) == _scans_both_ways(
        sorted(quiet_log.glob("*.log"))[0])[1].batches
    assert _scans_both_ways(tmp_path / "crc" / "00000000000000000000.log")[0].invalid_batches == 1


def test_clean_headers_read_in_windows_are_the_readers_across_window_ends_and_offset_gaps(quiet_log, tmp_path):
    """Header columns found a window at a time: a batch a window cuts starts the next one, a gap in offsets
    across windows is a discontinuity, and offsets a column could not sum go the reader's way."""
    import struct

    from kraftlog.files.logdir import _scan_columns
    from kraftlog.files.walk import clean_header_columns

    first = sorted(quiet_log.glob("*.log"))[0]
    path = tmp_path / "gap" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(first.read_bytes() * 2)  # clean, with a jump back in offsets between the copies
    fast, slow = _scans_both_ways(path)
    assert fast == slow and len(slow.discontinuities) == 1 and slow.batches > 100
    lf = classify(path)
    for window in (61, 100, 997, 4096, 1 << 16):  # at most a batch or two a window, up to many
        assert _scan_columns(lf, clean_header_columns(path, window=window)) == slow, window
    assert _batches(clean_header_columns(path, window=61)) == slow.batches
    far = bytearray(path.read_bytes())
    far[:8] = struct.pack(">q", (1 << 63) - 1)  # baseOffset is outside the CRC: still a clean file
    path.write_bytes(far)
    fast, slow = _scans_both_ways(path)
    assert fast == slow and slow.first_offset == (1 << 63) - 1 and slow.discontinuities[0] == (1 << 63, 1)
