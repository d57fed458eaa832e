"""kraftlog on a standalone cluster whose executors share no disk with the driver (``cluster_support``):
its tasks read inputs in object storage through the storage layer, and the job with input and
output in object storage gives the tables of a local run."""

import json
from pathlib import Path

import pytest

from cluster_support import delta_tables, run_job, s3, spark_cluster, tables  # noqa: F401
from kraftlog.files.storage import Source
from kraftlog.files.walk import walk
from kraftlog.spark import guard
from kraftlog.spark.discover import discover
from kraftlog.spark.job import TABLES, Options, run
from kraftlog.spark.sink import STAGING
from spark_support import fixtures, spark  # noqa: F401

pytestmark = pytest.mark.spark

_READ = '''
import json, sys
from pyspark.sql import SparkSession
from kraftlog.spark import guard
from kraftlog.spark.discover import discover
from kraftlog.spark.passes import _meta, _read
from kraftlog.spark.sink import STAGING
from kraftlog.files.walk import walk

inv = discover([sys.argv[1]])
meta = _meta(inv)


def count(ids):
    for i in ids:
        batches = records = 0
        try:
            for w in walk(_read(meta[i])):
                batches += w.count
                records += len(w.rec_offset)
            yield json.dumps([meta[i].file, batches, records])
        except Exception as e:
            yield json.dumps([meta[i].file, repr(e)])


spark = SparkSession.builder.getOrCreate()
for line in spark.sparkContext.parallelize(sorted(meta), 4).mapPartitions(count).collect():
    print("FILE", line)
spark.stop()
'''


def test_executors_read_inputs_in_s3_through_the_storage_layer(spark_cluster, s3, fixtures):  # noqa: F811
    local = fixtures / "three-nodes"
    uri = s3.upload(local, s3.bucket("cluster-read") + "/three-nodes")
    expected = {}
    for f in discover([str(local)]).readable:
        walks = list(walk(Source(f.file)))
        expected[f.file.replace(str(local), "")] = [sum(w.count for w in walks), sum(len(w.rec_offset) for w in walks)]
    script = spark_cluster.driver_root / "read.py"
    script.write_text(_READ)
    proc = spark_cluster.submit(script, "s3a" + uri[2:], env=s3.env, conf=s3.spark_conf(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:] + spark_cluster.executor_logs()
    got = {}
    for line in proc.stdout.splitlines():
        if line.startswith("FILE "):
            file, *counts = json.loads(line.removeprefix("FILE "))
            got[file.replace("s3a" + uri[2:], "")] = counts
    assert got == expected and len(got) == 21 and sum(r for _, r in got.values()) > 2000


def test_the_job_on_the_cluster_with_input_and_output_in_s3_gives_the_local_tables(spark_cluster, s3, spark,  # noqa: F811
                                                                                   fixtures, tmp_path):  # noqa: F811
    local = fixtures / "three-nodes"
    bucket = s3.bucket("cluster-job")
    uri = s3.upload(local, bucket + "/in/three-nodes")
    run(spark, Options(inputs=[str(local)], output=str(tmp_path / "local"), at_offsets=[1000]))
    proc = spark_cluster.job("--input", "s3a" + uri[2:], "--output", f"{bucket}/out", "--at-offset", "1000",
                             env=s3.env, conf=s3.spark_conf())
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    _same_tables(tmp_path / "local", local, f"{bucket}/out", "s3a" + uri[2:], s3)


def _same_tables(here: Path, local: Path, there: str, inputs: str, s3) -> None:  # noqa: F811
    """The Delta tables at ``there`` hold the rows of the Parquet tables at ``here``; the manifest,
    written last, names each table's Delta version; nothing of the run's staging is left."""
    mine = tables(here, {"ROOT": str(local.resolve())})
    theirs = delta_tables(there, sorted(mine), {"ROOT": inputs})
    assert set(TABLES) == set(mine) and len(mine) > 10
    for name in mine:
        assert mine[name] == theirs[name], name
    keys = s3.keys(there)
    manifest = json.loads(s3.client().get_object(Bucket=there[5:].split("/")[0],
                                                 Key=there[5:].split("/", 1)[1] + "/_manifest.json")["Body"].read())
    assert set(manifest["delta_versions"]) == set(TABLES)
    assert not [k for k in keys if k.startswith("_staging-")]


def test_a_local_run_with_output_in_s3_gives_the_local_tables_as_delta(spark, s3, fixtures, tmp_path):  # noqa: F811
    """And a second run onto it replaces each table in one Delta commit: the tables hold its rows only."""
    local = fixtures / "three-nodes"
    out, versions = s3.bucket("local-job") + "/out", []
    run(spark, Options(inputs=[str(local)], output=str(tmp_path / "local"), at_offsets=[1000]))
    for _ in range(2):
        proc = run_job(["--input", str(local), "--output", out, "--at-offset", "1000"], s3.env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        versions.append(json.loads(s3.client().get_object(Bucket="local-job", Key="out/_manifest.json")["Body"].read()))
    first, second = versions
    _same_tables(tmp_path / "local", local, out, str(local), s3)
    assert {t: v - 1 for t, v in second["delta_versions"].items()} == first["delta_versions"]
    import polars as pl

    from kraftlog.spark.output import storage_options

    assert pl.read_delta(f"{out}/records", storage_options=storage_options(out)).height == first["counts"]["records"]


def test_an_object_store_prefix_kraftlog_did_not_write_is_refused_and_stale_staging_is_removed(s3, capfd):  # noqa: F811
    out = s3.bucket("claims") + "/out"
    client = s3.client()
    client.put_object(Bucket="claims", Key="out/notes.txt", Body=b"theirs")
    with pytest.raises(guard.UnsafeOutput, match="exists and is not a kraftlog output \\(no _manifest.json\\)"):
        guard.claim(out, ["/in"])
    client.delete_object(Bucket="claims", Key="out/notes.txt")
    manifest = {"run_id": guard.new_run_id(), "versions": {"kraftlog": "x"}, "counts": {"records": 1}}
    client.put_object(Bucket="claims", Key="out/_manifest.json", Body=json.dumps(manifest).encode())
    stale = f"{STAGING}{guard.new_run_id()}"
    for key in (f"out/{stale}/decoded/part-1.arrow", "out/records/_delta_log/0.json"):
        client.put_object(Bucket="claims", Key=key, Body=b"x")
    with guard.claim(out, ["/in"]) as held:
        assert held.removed == [f"{out}/{stale}"]
        # pyarrow leaves an empty ``out/`` marker where it deletes the last object below a prefix
        assert [k for k in s3.keys(out) if k] == ["_manifest.json", "records/_delta_log/0.json"]
        assert f"kraftlog: removed {out}/{stale}, left by run" in capfd.readouterr().err
        later = f"{STAGING}{guard.new_run_id()}"  # a run that started after this one: not touched by it
        client.put_object(Bucket="claims", Key=f"out/{later}/x", Body=b"x")
        assert guard._remove_stale_remote(out, held.run_id) == []
    client.put_object(Bucket="claims", Key="out/other/x", Body=b"x")
    with pytest.raises(guard.UnsafeOutput, match="it holds 'other', which kraftlog did not write"):
        guard.claim(out, ["/in"])
    with guard.claim(out, ["/in"], overwrite=True) as held:
        assert held.removed == [f"{out}/{later}"] and "other/x" in s3.keys(out)
