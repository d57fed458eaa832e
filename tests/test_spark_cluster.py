"""The job where executors and driver do not share a disk, and through Spark Connect: every file a
task writes is checked by the driver before it is read again or published, so a part the driver
cannot see fails the run (exit 1, one line naming task, host and path) instead of publishing empty
or partial tables with exit 0; a Connect run gives the tables a ``local[2]`` run gives."""

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

from cluster_support import PYTHON, clean_env, same_delta_tables
from conftest import REPO
from kraftlog.spark import passes
from kraftlog.spark.job import TABLES, Options, run
from spark_support import kraft_metadata, table

pytestmark = pytest.mark.spark
NOT_SHARED = "executors and driver do not share this output's storage"


def rows(out: Path) -> dict[str, list[str]]:
    """Every table's rows without the run id, in one order: tables equal row for row."""
    return {t: sorted(json.dumps({k: v for k, v in r.items() if k != "run_id"}, sort_keys=True, default=str)
                      for r in table(out, t)) for t in TABLES}


@pytest.fixture(scope="module")
def shared_input(fixtures):
    """``single-node`` in a folder outside every folder the cluster's worker has hidden, so its
    executors read it at the path the driver does."""
    folder = Path(tempfile.mkdtemp(prefix="kraftlog-shared-"))
    shutil.copytree(fixtures / "single-node", folder / "single-node")
    yield folder / "single-node"
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def local_run(spark, shared_input, tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "tables"
    run(spark, Options(inputs=[str(shared_input)], output=str(out)))
    return out


def test_an_events_part_lost_between_passes_fails_the_run_naming_it(spark, fixtures, tmp_path, monkeypatch,
                                                                    capsys):
    finish, lost = passes.finish, []

    def finish_then_lose_a_part(spark, inv, want, root, *args):
        notes = finish(spark, inv, want, root, *args)
        parts = sorted(Path(urlparse(root).path).glob("events/bucket=*/part-*"))
        lost.append(parts[len(parts) // 2])
        lost[0].unlink()  # as if written on a host whose disk the driver and the folding task do not see
        return notes

    monkeypatch.setattr(passes, "finish", finish_then_lose_a_part)
    monkeypatch.setattr(kraft_metadata, "session", lambda *_, **__: spark)
    code = kraft_metadata.main(["--input", str(fixtures / "single-node"), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1
    assert f"at {lost[0]} is not visible to the driver: {NOT_SHARED}" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing published, no staging left


def test_a_published_part_lost_before_publishing_fails_the_run(spark, fixtures, tmp_path, monkeypatch, capsys):
    timelines = passes.timelines

    def timelines_then_lose_a_batches_part(spark, root, *args):
        notes = timelines(spark, root, *args)
        next(Path(root).glob("batches/cluster_id=*/part-*.parquet")).unlink()
        return notes

    monkeypatch.setattr(passes, "timelines", timelines_then_lose_a_batches_part)
    monkeypatch.setattr(kraft_metadata, "session", lambda *_, **__: spark)
    code = kraft_metadata.main(["--input", str(fixtures / "single-node"), "--output", str(tmp_path / "out")])
    assert code == 1
    assert "/batches/cluster_id=" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_no_shared_disk_and_a_local_output_fails_loudly(spark_cluster, shared_input):
    """The worker's executors cannot see the driver's folder: the old job published empty tables
    with exit 0 here."""
    out = spark_cluster.driver_root / "out-unshared"
    proc = spark_cluster.job("--input", str(shared_input), "--output", str(out))
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-3000:]
    # spark-submit passes the Python driver's stderr on as its stdout
    line = [x for x in (proc.stdout + proc.stderr).splitlines() if x.startswith("kraftlog-spark: error:")]
    assert len(line) == 1 and NOT_SHARED in line[0] and f"{out.parent}/.{out.name}.staging-" in line[0], \
        proc.stdout[-3000:]
    assert not out.exists()


def test_a_cluster_with_a_shared_output_gives_the_local_tables(spark_cluster, shared_input, local_run):
    out = shared_input.parent / "out-shared"
    proc = spark_cluster.job("--input", str(shared_input), "--output", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:] + spark_cluster.executor_logs()
    assert rows(out) == rows(local_run)


@pytest.mark.parametrize("how", ["--remote", "SPARK_REMOTE"])
def test_spark_connect_gives_the_local_tables(spark_connect, shared_input, local_run, tmp_path, how):
    """The plain command line on a Connect server (which ships its kraftlog to the server's workers)."""
    out = tmp_path / "tables"
    remote = ["--remote", spark_connect] if how == "--remote" else []
    env = clean_env(PYTHONPATH=str(REPO), **({"SPARK_REMOTE": spark_connect} if how == "SPARK_REMOTE" else {}))
    proc = subprocess.run([PYTHON, str(REPO / "jobs" / "kraft_metadata.py"), *remote, "--input", str(shared_input),
                           "--output", str(out)], capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((out / "_manifest.json").read_text())["master"] is not None
    assert rows(out) == rows(local_run)


def test_spark_connect_with_input_and_output_in_s3_gives_the_local_tables(spark_connect, s3, fixtures,
                                                                          local_run_three, tmp_path):
    """A Connect client on a machine that holds nothing: the inputs in a bucket, the tables Delta
    tables in another, the tasks on the server reading and writing through the storage layer."""
    local, here = local_run_three
    uri = s3.upload(local, s3.bucket("connect-in") + "/three-nodes")
    out = s3.bucket("connect-out") + "/tables"
    env = clean_env(PYTHONPATH=str(REPO), **s3.env)
    proc = subprocess.run([PYTHON, str(REPO / "jobs" / "kraft_metadata.py"), "--remote", spark_connect,
                           "--input", uri, "--output", out, "--at-offset", "1000"],
                          capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    same_delta_tables(here, local, out, uri, s3)

