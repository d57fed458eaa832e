"""The Spark job over a damaged copy of the single-node fixture: a batch failing its CRC, a record
of an unknown type, a cut-off tail, a file of garbage named like a segment, a folder named like one
and a stray file. The run succeeds; each damage is a ``problems`` row at its position, and every
byte of every file is either a batch of ``batches`` or a skipped region of ``problems``."""

import shutil
from collections import defaultdict

import pytest

from kraftlog.files.reader import read_log_file
from kraftlog.spark.job import Options, run
from kraftlog.wire.batch import Batch, Record, encode_batch
from spark_support import table

pytestmark = pytest.mark.spark
UNKNOWN_TYPE = b"\x01\x7f\x00"  # frame version 1, api key 127 (no such record), version 0
MAX_TIMESTAMP_LOW_BYTE = 42  # of the batch header (maxTimestamp: bytes 35-42)


def _batches(path) -> list[Batch]:
    return [b for b in read_log_file(path) if isinstance(b, Batch)]


@pytest.fixture(scope="module")
def damaged(spark, fixtures, tmp_path_factory):
    root = tmp_path_factory.mktemp("damaged")
    node = root / "single-node"
    shutil.copytree(fixtures / "single-node", node)
    meta = node / "__cluster_metadata-0"
    segments = sorted(meta.glob("*.log"))
    first, last = segments[0], segments[-1]

    flipped = _batches(first)[len(_batches(first)) // 2]
    data = bytearray(first.read_bytes())
    data[flipped.position + MAX_TIMESTAMP_LOW_BYTE] ^= 0xFF  # the CRC no longer matches; the records still read
    first.write_bytes(bytes(data))

    tail = _batches(last)[-1]
    unknown_offset = tail.last_offset + 1
    appended = encode_batch([Record(unknown_offset, tail.max_timestamp, None, UNKNOWN_TYPE)],
                            base_offset=unknown_offset, base_timestamp=tail.max_timestamp,
                            partition_leader_epoch=tail.partition_leader_epoch)
    cut = encode_batch([Record(unknown_offset + 1, tail.max_timestamp, None, b"\x01\x00\x00\x00")],
                       base_offset=unknown_offset + 1, base_timestamp=tail.max_timestamp)[:40]
    with last.open("ab") as f:
        f.write(appended + cut)
    garbage = meta / "00000000000000099999.log"
    garbage.write_bytes(b"not a kafka segment at all\n" * 10)
    (meta / "NOTES.txt").write_text("copied from broker 1\n")
    folder = meta / "00000000000000088888.log"  # a folder where a segment should be: no file to read
    folder.mkdir()

    out = root / "out"
    manifest = run(spark, Options(inputs=[str(node)], output=str(out)))
    return {"out": out, "manifest": manifest, "first": first, "last": last, "garbage": garbage, "folder": folder,
            "flipped": flipped, "unknown_offset": unknown_offset, "tail_end": tail.position + tail.size,
            "appended": len(appended), "cut": len(cut)}


def _problems(d, file) -> list[dict]:
    return [p for p in table(d["out"], "problems") if p["file"] == str(file)]


def test_a_batch_that_fails_its_crc_is_reported_where_it_is(damaged):
    d = damaged
    [p] = _problems(d, d["first"])
    assert (p["kind"], p["position"], p["offset"], p["length"]) == (
        "invalid-batch", d["flipped"].position, d["flipped"].base_offset, d["flipped"].size)
    rows = [b for b in table(d["out"], "batches") if b["file"] == str(d["first"]) and not b["crc_valid"]]
    assert [b["position"] for b in rows] == [d["flipped"].position]
    kept = [r for r in table(d["out"], "records") if r["batch_position"] == d["flipped"].position
            and r["file"] == str(d["first"])]  # as replay does: applied, and reported
    assert [r["offset"] for r in kept] == [r.offset for r in d["flipped"].records] and not any(
        r["crc_valid"] for r in kept)


def test_an_unknown_record_type_is_kept_with_its_error_and_reported(damaged):
    d = damaged
    problems = _problems(d, d["last"])
    undecodable = [p for p in problems if p["kind"] == "undecodable-record"]
    assert [(p["offset"], p["position"]) for p in undecodable] == [(d["unknown_offset"], d["tail_end"])]
    assert "Unknown metadata id 127" in undecodable[0]["detail"]
    [record] = [r for r in table(d["out"], "records") if r["offset"] == d["unknown_offset"]]
    assert record["record_type"] == "UNKNOWN" and "127" in record["error"]


def test_a_cut_off_tail_and_a_garbage_file_are_skipped_regions(damaged):
    d = damaged
    skipped = [p for p in _problems(d, d["last"]) if p["kind"].startswith("skipped-")]
    assert [(p["position"], p["length"]) for p in skipped] == [(d["tail_end"] + d["appended"], d["cut"])]
    [garbage] = _problems(d, d["garbage"])
    assert garbage["kind"].startswith("skipped-") and (garbage["position"], garbage["length"]) == (0, 270)


def test_every_byte_is_a_batch_or_a_skipped_region(damaged):
    d = damaged
    covered = defaultdict(int)
    for b in table(d["out"], "batches"):
        covered[b["file"]] += b["batch_length"] + 12
    for p in table(d["out"], "problems"):
        if p["kind"].startswith("skipped-"):
            covered[p["file"]] += p["length"]
    files = [f for f in table(d["out"], "files") if f["kind"] not in ("skipped", "unreadable")]
    assert len(files) > 10
    for f in files:
        assert covered[f["file"]] == f["bytes"], f["file"]
    stray = [f for f in table(d["out"], "files") if f["file"].endswith("NOTES.txt")]
    assert [f["kind"] for f in stray] == ["skipped"] and stray[0]["skip_reason"]


def test_the_rest_of_the_log_is_still_replayed(damaged):
    d = damaged
    assert d["manifest"]["counts"]["partition_history"] > 0
    offsets = [r["offset"] for r in table(d["out"], "records")]
    assert len(offsets) == len(set(offsets)) and d["unknown_offset"] in offsets


def test_a_file_that_cannot_be_read_is_a_problem_not_a_failed_run(damaged):
    d = damaged
    [p] = _problems(d, d["folder"])
    assert (p["kind"], p["detail"]) == ("unreadable", "a directory where a segment should be")
    [f] = [f for f in table(d["out"], "files") if f["file"] == str(d["folder"])]
    assert (f["kind"], f["skip_reason"]) == ("unreadable", "a directory where a segment should be")


def test_a_cluster_id_too_long_for_a_folder_name_is_bounded_not_a_failed_fleet(spark, fixtures, tmp_path):
    """A cluster id whose ``cluster_id=`` folder would pass 255 bytes (ENAMETOOLONG on every table)
    gets a bounded, unique id, and a log-dir problem gives the whole one."""
    node = tmp_path / "single-node"
    shutil.copytree(fixtures / "single-node", node)
    long_id = "k" * 300
    props = node / "meta.properties"
    props.write_text("".join(f"cluster.id={long_id}\n" if line.startswith("cluster.id=") else line + "\n"
                             for line in props.read_text().splitlines()))
    out = tmp_path / "out"
    manifest = run(spark, Options(inputs=[str(node)], output=str(out)))
    [cluster] = manifest["clusters"]
    assert len(cluster) == 200 and cluster.startswith("k" * 183 + "~")
    assert {r["cluster_id"] for r in table(out, "records")} == {cluster}
    assert sum(1 for r in table(out, "records")) == manifest["counts"]["records"] > 0
    [problem] = [p for p in table(out, "problems") if p["kind"] == "log-dir"]
    assert "is too long for a folder name" in problem["detail"] and long_id[:250] in problem["detail"]


def _staged_text(root) -> str:
    """Every string of every staged Arrow table under ``root``."""
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.ipc as ipc

    out = []
    for part in Path(root).rglob("*.arrow"):
        with pa.memory_map(str(part)) as f:
            t = ipc.open_file(f).read_all()
        out += [str(v) for c in t.columns if pa.types.is_string(c.type) for v in c.to_pylist() if v is not None]
    return "\n".join(out)


@pytest.mark.parametrize("redact", [True, False])
def test_staged_tables_hold_no_secret_unless_asked(spark, fixtures, tmp_path, monkeypatch, redact):
    """A killed run leaves its staging behind: with redaction on (the default), the decoded records
    and the timeline events staged there hold no SCRAM salt in clear; with --no-redact they do."""
    from kraftlog.spark import job as job_module

    salt = "LQZqeRzCL3t1g+wne85iQBDU1aSdqnZu5mxIkfhKT3I="  # user carol's, in fixtures/single-node
    seen: list[str] = []
    finish, timelines = job_module.passes.finish, job_module.passes.timelines

    def finish_then_look(spark, inv, want, root, *rest):
        seen.append(_staged_text(root))
        return finish(spark, inv, want, root, *rest)

    def timelines_then_look(spark, root, *rest):
        seen.append(_staged_text(root))
        return timelines(spark, root, *rest)

    monkeypatch.setattr(job_module.passes, "finish", finish_then_look)
    monkeypatch.setattr(job_module.passes, "timelines", timelines_then_look)
    run(spark, Options(inputs=[str(fixtures / "single-node")], output=str(tmp_path / "out"), redact=redact))
    assert len(seen) == 2 and all(seen)
    assert all((salt in text) == (not redact) for text in seen)
