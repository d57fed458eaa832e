"""The Spark data source (``spark.read.format("kraftlog")``) gives the job's ``batches``,
``records`` and ``problems`` tables row for row: in this session on the fixtures, from S3 (moto),
on a standalone cluster whose executors share no disk with the driver, and through Spark Connect;
an input that is not there fails at ``load``."""

import shutil
import subprocess

import pyarrow.parquet as pq
import pytest
from test_spark_damaged import damaged  # noqa: F401

from cluster_support import PYTHON, _rows, clean_env, tables
from conftest import REPO
from kraftlog.files.reader import Limits
from kraftlog.spark import copies, source
from kraftlog.spark.decode import BATCHES
from kraftlog.spark.discover import discover
from kraftlog.spark.job import Options, run

pytestmark = pytest.mark.spark
TABLES = ("batches", "records", "problems")
SCRIPT = REPO / "tests" / "source_read.py"


@pytest.fixture(scope="module")
def job(spark, fixtures, tmp_path_factory):
    """The job run over every fixture: its output folder."""
    out = tmp_path_factory.mktemp("source-job") / "tables"
    run(spark, Options(inputs=[str(fixtures)], output=str(out)))
    return out


def _read(spark, table: str, given: str, **options: str):
    source.register(spark)
    return spark.read.format("kraftlog").option("table", table).options(**options).load(given)


@pytest.fixture(scope="module")
def rows(job, fixtures):
    """The job's tables of every fixture, as rows (``run_id`` left out, paths under ``ROOT``)."""
    return tables(job, {"ROOT": str(fixtures.resolve())})


def test_the_tables_equal_the_jobs_row_for_row(spark, fixtures, job, rows):
    """Columns as Spark reads the job's tables, rows equal but for ``run_id``: one fresh id per read."""
    for table in TABLES:
        df = _read(spark, table, str(fixtures))
        assert [(f.name, f.dataType) for f in df.schema] == [
            (f.name, f.dataType) for f in spark.read.parquet(str(job / table)).schema], table
        got = df.toArrow()
        assert _rows(got, {"ROOT": str(fixtures.resolve())}) == rows[table], table
        assert len(set(got.column("run_id").to_pylist())) == (1 if got.num_rows else 0), table
    assert len(rows["batches"]) > 20000 and len(rows["records"]) == 18903  # every offset of the five logs


def test_the_jobs_limits_are_options(spark, fixtures):
    """``maxBatchBytes`` as the job's ``--max-batch-bytes``: a longer batch is skipped bytes, a problem."""
    got = _read(spark, "problems", str(fixtures / "single-node"), maxBatchBytes="200").collect()
    corrupt = [p for p in got if p.kind == "skipped-corrupt"]
    assert corrupt and all("is outside [49, 188]" in p.detail for p in corrupt)
    assert not _read(spark, "problems", str(fixtures / "single-node")).collect()


def test_redact_false_shows_what_the_default_redacts(spark, fixtures):
    """``redact`` is true by default, as in the job; false shows the values it hides, and only those."""
    def payloads(**options: str) -> dict:
        t = _read(spark, "records", str(fixtures / "fleet"), **options).select("file", "offset", "payload").toArrow()
        return {(f, o): p for f, o, p in zip(*(t.column(c).to_pylist() for c in ("file", "offset", "payload")),
                                             strict=True)}

    hidden, shown = payloads(), payloads(redact="false")
    changed = {k for k in hidden if hidden[k] != shown[k]}
    assert hidden.keys() == shown.keys() and changed
    assert all('"[redacted]"' in hidden[k] and '"[redacted]"' not in shown[k] for k in changed)


def test_damaged_input_gives_the_jobs_rows_and_problems(spark, damaged):  # noqa: F811
    """A batch failing its CRC, an unknown record type, a cut-off tail, a garbage segment, a folder
    named like a segment: each where the job puts it (a row of ``problems``; no row for skipped bytes)."""
    root = damaged["first"].parent.parent
    theirs = tables(damaged["out"], {"ROOT": str(root)})
    kinds = {dict(r)["kind"] for r in theirs["problems"]}
    assert {'"invalid-batch"', '"undecodable-record"', '"unreadable"'} <= kinds and len(kinds) >= 4
    for table in TABLES:
        assert _rows(_read(spark, table, str(root)).toArrow(), {"ROOT": str(root)}) == theirs[table], table


@pytest.mark.parametrize("table", ["batches", "records"])
def test_a_file_gone_after_planning_fails_the_read_naming_it(fixtures, tmp_path, table):
    """Not fewer rows: the job would make it a ``problems`` row; a DataFrame has no place for one.
    (The reader's own methods, as Spark's planning and read tasks call them.)"""
    node = shutil.copytree(fixtures / "single-node", tmp_path / "single-node")
    reader = source.KraftlogSource({"path": str(node), "table": table}).reader(source.TABLES[table])
    partitions = reader.partitions()
    gone = sorted((node / "__cluster_metadata-0").glob("*.log"))[-1]
    gone.unlink()
    with pytest.raises(source.SourceError) as e:
        [b for p in partitions for b in reader.read(p)]
    assert str(e.value) == f"kraftlog source: {gone}: no such file (it was there when the input was listed)"


def test_three_nodes_diverge_and_the_driver_cuts_node_3_where_the_job_does(spark, fixtures, tmp_path):
    """``source._cuts`` (the driver's, no Spark) against ``copies.cuts(copies.divergence(...))``."""
    inv = discover([str(fixtures / "three-nodes")])
    meta = source.passes._meta(inv)
    parts = source.Parts(str(tmp_path), "batches", BATCHES, "t")
    notes = source.passes.by_kind([n for f in inv.readable for n in source.read_file(
        meta[f.file_id], source.passes._read(meta[f.file_id]), parts, str(tmp_path), "r", Limits(), False)])
    parts.close()
    rank = copies.ranks(inv, copies.summaries(notes["file"]))
    mismatched = copies.block_mismatches(inv, notes["block"])
    frame = spark.read.parquet(str(tmp_path / "batches"))
    theirs = copies.cuts(copies.divergence(spark, frame, inv, rank, mismatched))
    node3 = next(c.copy_id for c in inv.copies if c.node_id == 3)
    assert mismatched and set(theirs) == {node3}
    assert source._cuts(str(tmp_path), inv, rank, mismatched) == theirs


@pytest.mark.parametrize("given, message", [
    ("{tmp}/nowhere", "kraftlog source: {tmp}/nowhere: no such directory"),
    ("{tmp}", "kraftlog source: {tmp}: no KRaft log dir below it"),
    ("{fixtures}/single-node/meta.properties", "kraftlog source: {fixtures}/single-node/meta.properties: not a directory"),
    ("ftp://host/logs", "kraftlog source: ftp://host/logs: ftp://host/logs: kraftlog reads local paths and s3://"),
])
def test_an_input_that_is_not_there_fails_at_load_with_one_line(spark, fixtures, tmp_path, given, message):
    source.register(spark)
    with pytest.raises(Exception) as e:
        spark.read.format("kraftlog").load(given.format(tmp=tmp_path, fixtures=fixtures))
    assert f"SourceError: {message.format(tmp=tmp_path, fixtures=fixtures)}" in str(e.value)


def test_an_unknown_table_or_option_value_fails_at_load(spark, fixtures):
    for options, message in [({"table": "views"}, "option table is 'views', not one of batches, records, problems"),
                             ({"redact": "maybe"}, "option redact is 'maybe', not true or false")]:
        with pytest.raises(Exception, match=message):
            _read(spark, options.pop("table", "records"), str(fixtures / "single-node"), **options).count()


def _subprocess(args: list[str], env: dict[str, str] | None = None) -> None:
    proc = subprocess.run([PYTHON, str(SCRIPT), *args], capture_output=True, text=True, timeout=900,
                          env=clean_env(PYTHONPATH=str(REPO), **(env or {})), cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-4000:]


def _same(out, rows, roots: dict[str, str]) -> None:
    for table in TABLES:
        assert _rows(pq.read_table(out / f"{table}.parquet"), roots) == rows[table], table


@pytest.fixture(scope="module")
def fleet_in_s3(s3, fixtures):
    return s3.upload(fixtures, s3.bucket("source-in") + "/fixtures")


def test_an_s3_input_gives_the_same_rows(spark_s3, fleet_in_s3, rows):
    for table in TABLES:
        assert _rows(_read(spark_s3, table, fleet_in_s3).toArrow(), {"ROOT": fleet_in_s3}) == rows[table], table


def test_a_cluster_without_the_drivers_disk_reads_s3_and_gives_the_same_rows(spark_cluster, s3, fleet_in_s3,
                                                                            rows):
    out = spark_cluster.driver_root / "source-out"
    out.mkdir()
    proc = spark_cluster.submit(SCRIPT, "s3a" + fleet_in_s3[2:], str(out), env=s3.env, conf=s3.spark_conf(),
                                timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:] + spark_cluster.executor_logs()
    _same(out, rows, {"ROOT": "s3a" + fleet_in_s3[2:]})
    shutil.rmtree(out)


def test_spark_connect_gives_the_same_rows(spark_connect, fixtures, rows, tmp_path):
    _subprocess([str(fixtures), str(tmp_path), "--remote", spark_connect])
    _same(tmp_path, rows, {"ROOT": str(fixtures.resolve())})
