"""The Spark job over kraftlog's fixtures (a single node with aborted metadata transactions, three
nodes of which one keeps an uncommitted tail, a fleet of three clusters): one run, then the views
against the local replay at checkpoints, inside and after transactions and at a time."""

import json
import os
import re
import shutil
import subprocess
from collections import Counter

import pyarrow.dataset as ds
import pytest

from cluster_support import clean_env, tables
from conftest import REPO
from kraftlog.files.coverage import compare_copies
from kraftlog.files.logdir import find_nodes, scan_file
from kraftlog.files.records import iter_entries
from kraftlog.spark import copies, entities, views
from kraftlog.spark.discover import cluster_of, discover
from kraftlog.spark.job import TABLES, Options, run
from kraftlog.spark.timelines import FOLD_BYTES_PER_EVENT, WORKER_BASE_BYTES
from kraftlog.state.image import ABORT, BEGIN, END
from kraftlog.state.rebuild import parse_time, rebuild
from spark_support import Views, compared, table

pytestmark = pytest.mark.spark
AT_TIME = "2025-01-01T00:10:00Z"


def _transactions(node) -> list[tuple[int, int, str]]:
    """(begin, end or abort offset, marker type) of a node's log, by the files layer's reader."""
    out, begin = [], None
    for seg in node.segments:
        for e in iter_entries(seg):
            if e.record.type == BEGIN:
                begin = e.offset
            elif e.record.type in (END, ABORT) and begin is not None:
                out.append((begin, e.offset, e.record.type))
                begin = None
    return out


@pytest.fixture(scope="module")
def nodes(fixtures):
    return {cluster_of(n): n for n in sorted(find_nodes(fixtures), key=lambda n: n.log_dir.name, reverse=True)
            if n.node_id != 3}  # the copy to replay: not node 3 of three-nodes, whose tail diverges


@pytest.fixture(scope="module")
def single(fixtures):
    return find_nodes(fixtures / "single-node")[0]


@pytest.fixture(scope="module")
def job(spark, fixtures, single, tmp_path_factory):
    offsets = sorted({o for b, e, _ in _transactions(single) for o in (b - 1, b, b + 1, e - 1, e, e + 1)})
    out = tmp_path_factory.mktemp("spark-fixtures") / "tables"
    # a worker's memory that takes 40 events a fold: every bucket is folded in parts, which must give
    # the timelines a replay gives
    manifest = run(spark, Options(inputs=[str(fixtures)], output=str(out), at_offsets=offsets, at_times=[AT_TIME],
                                  every_checkpoint=True, worker_memory=WORKER_BASE_BYTES + 40 * FOLD_BYTES_PER_EVENT))
    return out, manifest


def test_buckets_of_more_events_than_a_fold_takes_are_folded_in_parts(job):
    out, manifest = job
    names = {p.name for p in (out / "partition_history").rglob("*.parquet")}
    run = re.escape(manifest["run_id"])
    assert names and all(re.fullmatch(rf"part-b\d+-\d+-{run}\.parquet", n) for n in names), names


def test_views_equal_local_replay_at_every_point(job, nodes):
    out, manifest = job
    written = Views(out)
    points = written.points()
    assert len(manifest["clusters"]) == 5 and len(points) > 60
    for cluster, at in sorted(points):
        node = nodes[cluster]
        built = rebuild(node, offset=at, base="none")
        assert written.image(cluster, at) == compared(built.image.to_json()), (cluster, at)


def test_at_time_is_the_offset_before_the_first_later_record(job, nodes):
    out, _ = job
    ms = parse_time(AT_TIME)
    at = {(p["cluster_id"], p["at_offset"]) for p in table(out, "state_features") if p["at"] == f"time {AT_TIME}"}
    assert len(at) == 5
    for cluster, offset in at:
        later = next(e.offset for s in nodes[cluster].segments for e in iter_entries(s) if e.timestamp > ms)
        assert offset == later - 1


def test_aborted_transactions_are_kept_in_records_but_change_nothing(job, single):
    out, _ = job
    txns = _transactions(single)
    aborted = [(b, e) for b, e, kind in txns if kind == ABORT]
    assert aborted and len(aborted) < len(txns)
    cluster = cluster_of(single)
    records = {r["offset"]: r for r in table(out, "records") if r["cluster_id"] == cluster}
    assert len(records) == sum(scan_file(s).records for s in single.segments)
    for b, e in aborted:
        inside = [records[o] for o in range(b, e + 1) if not records[o]["is_control"]]
        assert {r["txn_state"] for r in inside} == {"aborted"} and {r["txn_begin_offset"] for r in inside} == {b}
    for name in ("topic_history", "partition_history", "broker_history", "config_history", "acl_history",
                 "feature_history"):
        for h in table(out, name):
            if h["cluster_id"] == cluster:
                assert not any(b < h["change_offset"] < e for b, e in aborted), (name, h)
    committed = [(b, e) for b, e, kind in txns if kind == END and e > b + 1]
    changes = Counter(h["valid_from_offset"] for h in table(out, "partition_history") if h["cluster_id"] == cluster)
    assert any(changes[e] for _, e in committed), "a committed transaction takes effect at its End"


def test_an_uncommitted_tail_diverges_and_is_not_kept(job, fixtures):
    out, _ = job
    copies = {n.node_id: n for n in find_nodes(fixtures / "three-nodes")}
    first = compare_copies(copies[1], copies[3]).offset
    last = scan_file(copies[3].segments[-1]).last_offset
    cluster = cluster_of(copies[1])
    div = sorted((d for d in table(out, "divergence") if d["cluster_id"] == cluster), key=lambda d: d["offset"])
    assert first is not None and [d["offset"] for d in div] == list(range(first, last + 1))
    assert {d["chosen_node_id"] for d in div} <= {1, 2}
    assert all(not c["agrees"] for d in div for c in d["copies"] if c["node_id"] == 3)
    records = [r for r in table(out, "records") if r["cluster_id"] == cluster and r["offset"] >= first]
    assert records and all(r["node_id"] != 3 for r in records)


def test_secrets_are_redacted_in_records(job):
    out, _ = job
    scram = [r for r in table(out, "records") if r["record_type"] == "USER_SCRAM_CREDENTIAL_RECORD"]
    assert scram and all('"salt":"[redacted]"' in r["payload"] for r in scram)


def test_every_table_reads_back_with_its_columns_even_when_empty(job, spark):
    """What the README's SQL does first: ``spark.read.parquet(OUT/table)``, with no schema given."""
    out, manifest = job
    assert manifest["counts"]["problems"] == 0  # so an empty table is among them
    for name in TABLES:
        df = spark.read.parquet(str(out / name))
        assert {"cluster_id", "run_id"} <= set(df.columns), name
        assert df.count() == manifest["counts"][name], name


def _columns(df_or_schema) -> list[tuple[str, str]]:
    schema = getattr(df_or_schema, "schema", df_or_schema)
    return sorted((f.name, f.dataType.simpleString()) for f in schema if f.name not in ("cluster_id", "run_id"))


def test_table_folders_hold_only_parquet_so_other_readers_scan_them(job):
    """No ``_SUCCESS``, ``.crc`` or hidden file beside the Parquet (polars' folder scan fails on them)."""
    import polars as pl

    out, manifest = job
    assert sorted(p.name for p in out.iterdir()) == sorted([*TABLES, "_manifest.json"])
    assert [p for p in out.rglob("*") if p.is_file() and p.suffix != ".parquet" and p.parent != out] == []
    for name in TABLES:
        assert pl.scan_parquet(out / name, hive_partitioning=True).collect().height \
            == manifest["counts"][name], name


def test_tables_a_run_writes_without_a_query_have_the_columns_the_query_gives(job, spark, fixtures):
    """With no points the views, and with no disagreeing copies the divergence, are written from
    declared columns; they are the columns the queries select (and this run's written tables)."""
    out, _ = job
    histories = {e.table: spark.read.parquet(str(out / e.table)) for e in entities.ENTITIES}
    cut = views.views(histories, views.points(spark, [("c", 1, "offset 1")]))
    for name in views.VIEWS:
        assert _columns(cut[name]) == _columns(views.schema(name)) == _columns(spark.read.parquet(str(out / name)))
    inv = discover([str(fixtures)])
    batches = spark.read.parquet(str(out / "batches"))
    queried = copies.divergence(spark, batches, inv, {c.copy_id: 0 for c in inv.copies}, [("c", 0)])
    assert _columns(queried) == _columns(copies.DIVERGENCE) == _columns(spark.read.parquet(str(out / "divergence")))


def test_a_log_whose_first_segment_retention_deleted(spark, fixtures, tmp_path):
    """Every cluster of the run starts from a snapshot (as a long-lived cluster's log does): the
    timelines start there, and the views at every later checkpoint are that checkpoint."""
    log = tmp_path / "in" / "single-node"
    shutil.copytree(fixtures / "single-node", log)
    meta = log / "__cluster_metadata-0"
    (meta / "00000000000000000000.log").unlink()
    (meta / "00000000000000001341-0000000005.checkpoint").unlink()  # older than the log that is left
    out = tmp_path / "out"
    manifest = run(spark, Options(inputs=[str(log)], output=str(out), every_checkpoint=True))
    (cluster,) = manifest["clusters"]
    assert manifest["clusters"][cluster]["seeds"] == [2733]
    node = find_nodes(log)[0]
    later = [s for s in node.snapshots if s.offset > 2734]
    views = Views(out)
    assert later and all(views.image(cluster, s.offset - 1) == compared(rebuild(node, offset=s.offset - 1).image.to_json())
                         for s in later)
    history = table(out, "partition_history")
    assert min(h["valid_from_offset"] for h in history) == 2733
    assert {h["change"] for h in history if h["valid_from_offset"] == 2733} == {"snapshot"}
    assert {h["change"] for h in history if h["valid_from_offset"] > 2733} >= {"changed"}


#: Spark 3.5, the oldest Spark the job supports, in a venv of its own (``scripts/setup.sh`` makes it).
SPARK35 = REPO / ".venv-spark35" / "bin" / "python"


def _spark35(*args: str, **env: str) -> subprocess.CompletedProcess:
    """``python -m kraftlog.spark args`` by pyspark 3.5 (a subprocess: this one has pyspark 4 loaded),
    its Python workers in that venv too."""
    if os.environ.get("KRAFTLOG_SKIP_SPARK35"):
        pytest.skip("KRAFTLOG_SKIP_SPARK35 is set: no Spark 3.5 venv (scripts/setup.sh leaves it out)")
    assert SPARK35.is_file(), f"no {SPARK35}: run scripts/setup.sh (or set KRAFTLOG_SKIP_SPARK35=1 to skip this)"
    env = {**clean_env(PYTHONPATH=str(REPO)), "PYSPARK_PYTHON": str(SPARK35), "PYSPARK_DRIVER_PYTHON": str(SPARK35),
           **env}
    return subprocess.run([str(SPARK35), "-m", "kraftlog.spark", *args], capture_output=True, text=True,
                          timeout=900, env=env)


def test_spark_3_5_gives_the_tables_spark_4_gives(job, tmp_path):
    """The job run by pyspark 3.5 with this run's options: every table equal row for row (``run_id``
    aside), with the same Arrow schema."""
    out, manifest = job
    options = manifest["options"]
    args = ["--master", "local[2]", "--input", *manifest["inputs"], "--output", str(tmp_path / "out")]
    args += [a for o in options["at_offsets"] for a in ("--at-offset", str(o))]
    args += [a for t in options["at_times"] for a in ("--at-time", t)]
    args += ["--every-checkpoint"] * options["every_checkpoint"]
    proc = _spark35(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert theirs["versions"]["pyspark"].startswith("3.5.") and theirs["counts"] == manifest["counts"]
    assert tables(tmp_path / "out", {}) == tables(out, {})
    for name in TABLES:
        schemas = [ds.dataset(o / name, format="parquet", partitioning="hive").schema for o in (out, tmp_path / "out")]
        assert schemas[0].equals(schemas[1]), name


def test_spark_connect_with_pyspark_3_5_is_refused_in_one_line(fixtures, tmp_path):
    """3.5's Connect client cannot read the rows the job counts (``Observation``): refused before
    any work, exit 2, nothing written."""
    for how in (["--remote", "sc://127.0.0.1:1"], []):
        proc = _spark35(*how, "--input", str(fixtures / "single-node"), "--output", str(tmp_path / "out"),
                        **({} if how else {"SPARK_REMOTE": "sc://127.0.0.1:1"}))
        assert proc.returncode == 2 and proc.stderr.startswith(
            "kraftlog-spark: error: the job runs through Spark Connect with pyspark 4 only (this is pyspark 3.5.")
        assert len(proc.stderr.splitlines()) == 1 and not (tmp_path / "out").exists()
