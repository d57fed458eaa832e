"""A run that appends (``--mode append``, a daily archive job) publishes tables that hold the rows of
the runs before it and its own, each run's rows those a run that replaces gives, told apart by
``run_id`` and listed in the manifest; an output it cannot append to is refused in one line, exit 2,
and left as it was (issue 15)."""

import errno
import hashlib
import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from cluster_support import _rows
from kraftlog.spark.job import TABLES, Options, run
from kraftlog.spark.output import storage_options
from spark_support import kraft_metadata

pytestmark = pytest.mark.spark

AT = [100]


@pytest.fixture(scope="module")
def reference(spark, fixtures, tmp_path_factory):
    """A run that replaces: its manifest, output folder and each table's rows (without ``run_id``)."""
    out = tmp_path_factory.mktemp("reference") / "out"
    manifest = run(spark, Options(inputs=[str(fixtures / "single-node")], output=str(out), at_offsets=AT))
    return manifest, out, _tables(out, [manifest["run_id"]], _roots(fixtures))[manifest["run_id"]]


def _roots(folder: Path) -> dict[str, str]:
    return {"ROOT": str((folder / "single-node").resolve())}


def _by_run(t: pa.Table, run_ids: list[str], roots: dict[str, str]) -> dict[str, list[tuple]]:
    """A table's rows of each run (``cluster_support._rows``); a row of no run in ``run_ids`` fails."""
    assert set(t.column("run_id").to_pylist()) <= set(run_ids)
    return {r: _rows(t.filter(pc.equal(t.column("run_id"), r)), roots) for r in run_ids}


def _tables(out: Path, run_ids: list[str], roots: dict[str, str]) -> dict[str, dict[str, list]]:
    """run id -> table -> rows, of a local output read as other readers read it (pyarrow's hive dataset)."""
    got = {r: {} for r in run_ids}
    for name in TABLES:
        for r, rows in _by_run(ds.dataset(out / name, format="parquet", partitioning="hive").to_table(), run_ids,
                               roots).items():
            got[r][name] = rows
    return got


def _files(out: Path) -> dict[str, tuple[int, str]]:
    """Every file of an output's tables: inode and digest."""
    return {str(p.relative_to(out)): (p.stat().st_ino, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(out.rglob("*.parquet"))}


def _manifest(out: Path) -> dict:
    return json.loads((out / "_manifest.json").read_text())


def test_runs_appended_to_local_parquet_each_hold_a_replacing_runs_rows(spark, fixtures, reference, tmp_path):
    ref_manifest, _, ref = reference
    roots = _roots(fixtures)
    out = tmp_path / "archive"
    opts = {"inputs": [str(fixtures / "single-node")], "output": str(out), "at_offsets": AT, "mode": "append"}
    first = run(spark, Options(**opts))
    earlier = _files(out)
    second = run(spark, Options(**opts))
    ids = [first["run_id"], second["run_id"]]
    manifest = _manifest(out)
    assert manifest["run_id"] == second["run_id"] and manifest["mode"] == "append"
    assert [r["run_id"] for r in manifest["runs"]] == ids
    assert [r["counts"] for r in manifest["runs"]] == [ref_manifest["counts"]] * 2 == [manifest["counts"]] * 2
    got = _tables(out, ids, roots)
    assert got[ids[0]] == got[ids[1]] == ref
    assert sum(map(len, ref.values())) > 10_000
    # the first run's files are in the new output as they were: the same inodes (hard links, no copy)
    # and bytes; a table without rows keeps one schema-only file (this run's), one with rows none
    now = _files(out)
    assert {k: v for k, v in earlier.items() if "cluster_id=" in k}.items() <= now.items()
    for name in TABLES:
        beside = [k for k in now if k.startswith(f"{name}/") and "cluster_id=" not in k]
        assert beside == ([] if ref_manifest["counts"][name] else [f"{name}/part-00000-empty-{ids[1]}.parquet"])
    # a third run without points adds no view rows; every table still reads in Spark (a schema-only
    # file beside partition folders would not)
    third = run(spark, Options(**{**opts, "at_offsets": []}))
    for name in TABLES:
        rows = spark.read.parquet(str(out / name)).groupBy("run_id").count().collect()
        want = {r: ref_manifest["counts"][name] for r in ids}
        if not name.startswith("state_"):
            want[third["run_id"]] = ref_manifest["counts"][name]
        assert {r["run_id"]: r["count"] for r in rows} == {r: n for r, n in want.items() if n}, name
    assert [r["run_id"] for r in _manifest(out)["runs"]] == [*ids, third["run_id"]]
    for name in TABLES:  # a schema-only file and partition folders never side by side
        files = [k for k in _files(out) if k.startswith(f"{name}/")]
        beside = [k for k in files if "cluster_id=" not in k]
        assert beside == [] if len(beside) < len(files) else len(beside) == 1, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["archive"]


def test_a_run_that_replaces_keeps_only_its_own_rows(spark, fixtures, reference, tmp_path):
    """After appends, the default mode replaces the output: one run, one entry in ``runs``."""
    _, out, _ = reference
    archive = tmp_path / "archive"
    shutil.copytree(out, archive)
    again = run(spark, Options(inputs=[str(fixtures / "single-node")], output=str(archive), at_offsets=AT))
    assert [r["run_id"] for r in _manifest(archive)["runs"]] == [again["run_id"]]
    assert set(ds.dataset(archive / "records", partitioning="hive").to_table().column("run_id").to_pylist()) == {
        again["run_id"]}


def _refused(argv: list[str], capsys) -> str:
    try:
        code = kraft_metadata.main(argv)
    except SystemExit as e:  # refused as the command line is read
        code = e.code
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_an_output_of_other_tables_or_columns_is_refused_and_left_as_it_was(spark, fixtures, reference, tmp_path,
                                                                            monkeypatch, capsys):
    _, out, _ = reference
    monkeypatch.setattr(kraft_metadata, "session", lambda *_, **__: spark)
    args = ["--input", str(fixtures / "single-node"), "--mode", "append", "--at-offset", "100", "--output"]
    # an older version's output: one table has no column ``seeds_replay`` (rewritten in a copy)
    older = tmp_path / "older"
    shutil.copytree(out, older)
    for part in (older / "files").rglob("*.parquet"):
        t = pq.read_table(part)
        part.unlink()
        pq.write_table(t.drop_columns(["seeds_replay"]), part)
    before = _files(older)
    line = _refused([*args, str(older)], capsys)
    assert line == (f"kraftlog-spark: error: --output {older}: cannot append: it holds in table files no column "
                    "'seeds_replay', which this version writes (written by kraftlog "
                    f"{_manifest(older)['versions']['kraftlog']}); append to an output of this version, or replace "
                    "it (--mode replace)")
    assert _files(older) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["older"]
    # one whose manifest names a table this version does not write: refused before any work
    manifest = _manifest(older)
    manifest["counts"]["topic_history_v0"] = 0
    (older / "_manifest.json").write_text(json.dumps(manifest))
    (older / "topic_history_v0").mkdir()
    line = _refused([*args, str(older)], capsys)
    assert "cannot append: it holds table 'topic_history_v0', which this version does not write" in line
    # a folder kraftlog did not write, and --overwrite with --mode append: before Spark starts
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("theirs")
    monkeypatch.setattr(kraft_metadata, "session", lambda *_, **__: pytest.fail("a session was started"))
    assert _refused([*args, str(theirs)], capsys).endswith(
        "exists and is not a kraftlog output (no _manifest.json); an append adds only to an output kraftlog wrote")
    assert _refused([*args, str(theirs), "--overwrite"], capsys) == (
        "kraftlog-spark: error: --mode append adds runs to an output kraftlog wrote, --overwrite replaces a folder it "
        "did not write: give one or the other")
    assert (theirs / "notes.txt").read_text() == "theirs"


def test_runs_appended_to_delta_tables_in_s3_each_hold_a_replacing_runs_rows(spark_s3, s3, fixtures, reference):
    """Each append is one append commit per table, which the manifest names. Commits after the ones a
    manifest names (a run killed between its commits, another writer) are taken back by the next
    append's own commit: the tables hold exactly the runs the manifest lists."""
    from deltalake import DeltaTable, write_deltalake

    ref_manifest, _, ref = reference
    out = s3.bucket("append") + "/archive"
    options = storage_options(out)

    def append() -> dict:
        run(spark_s3, Options(inputs=[str(fixtures / "single-node")], output=out, at_offsets=AT, mode="append"))
        return json.loads(s3.client().get_object(Bucket="append", Key="archive/_manifest.json")["Body"].read())

    first, second = append(), append()
    ids = [first["run_id"], second["run_id"]]
    assert [r["run_id"] for r in second["runs"]] == ids and second["run_id"] == ids[1]
    assert [r["counts"] for r in second["runs"]] == [ref_manifest["counts"]] * 2
    assert [r["delta_versions"] for r in second["runs"]] == [first["delta_versions"], second["delta_versions"]]
    assert {t: v - 1 for t, v in second["delta_versions"].items()} == first["delta_versions"]
    for name in TABLES:
        got = _by_run(DeltaTable(f"{out}/{name}", storage_options=options).to_pyarrow_table(), ids, _roots(fixtures))
        assert got[ids[0]] == got[ids[1]] == ref[name], name
        # the version the first manifest names is the first run's table, as it was
        older = DeltaTable(f"{out}/{name}", version=first["delta_versions"][name], storage_options=options)
        assert set(older.to_pyarrow_table().column("run_id").to_pylist()) <= {ids[0]}
    for name, mode in (("records", "append"), ("batches", "overwrite")):
        t = DeltaTable(f"{out}/{name}", storage_options=options).to_pyarrow_table().slice(0, 5)
        at = t.schema.get_field_index("run_id")
        write_deltalake(f"{out}/{name}", t.set_column(at, t.schema.field(at), pa.array(["stray"] * 5)), mode=mode,
                        storage_options=options)
    third = append()
    ids.append(third["run_id"])
    assert [r["run_id"] for r in third["runs"]] == ids
    for name in TABLES:
        table = DeltaTable(f"{out}/{name}", storage_options=options)
        assert table.version() == third["delta_versions"][name]
        got = _by_run(table.to_pyarrow_table(), ids, _roots(fixtures))  # no "stray" row
        assert got[ids[0]] == got[ids[1]] == got[ids[2]] == ref[name], name
    assert not [k for k in s3.keys(out) if k.startswith("_staging-")]


def test_an_append_that_fails_as_it_links_leaves_the_previous_output_whole(spark, fixtures, reference, tmp_path,
                                                                         monkeypatch):
    """Publishing fails half way through linking the earlier files (as with EMLINK): the previous
    output is as it was, nothing of the run is left, and the next append holds both runs. The earlier
    output's manifest predates ``runs``: it holds its own run's rows."""
    ref_manifest, out, ref = reference
    archive = tmp_path / "archive"
    shutil.copytree(out, archive)
    manifest = _manifest(archive)
    del manifest["runs"]
    (archive / "_manifest.json").write_text(json.dumps(manifest))
    before = _files(archive), (archive / "_manifest.json").read_bytes()
    link, linked = os.link, []

    def fails_half_way(src, dst):
        if len(linked) == len(before[0]) // 2:
            raise OSError(errno.EMLINK, os.strerror(errno.EMLINK), src)
        linked.append(dst)
        link(src, dst)

    monkeypatch.setattr(os, "link", fails_half_way)
    opts = Options(inputs=[str(fixtures / "single-node")], output=str(archive), at_offsets=AT, mode="append")
    with pytest.raises(OSError, match="Too many links"):
        run(spark, opts)
    assert linked and (_files(archive), (archive / "_manifest.json").read_bytes()) == before
    assert all((archive / k).stat().st_nlink == 1 for k in before[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["archive"]
    monkeypatch.setattr(os, "link", link)
    again = run(spark, opts)
    ids = [ref_manifest["run_id"], again["run_id"]]
    assert [r["run_id"] for r in _manifest(archive)["runs"]] == ids
    got = _tables(archive, ids, _roots(fixtures))
    assert got[ids[0]] == got[ids[1]] == ref
