"""kraftlog on a standalone cluster whose executors share no disk with the driver (``cluster_support``):
its tasks read inputs in object storage through the storage layer, and the job with input and
output in object storage gives the tables of a local run."""

import json

import pytest

from cluster_support import same_delta_tables
from kraftlog.files.storage import Source
from kraftlog.files.walk import walk
from kraftlog.spark import guard
from kraftlog.spark.discover import discover
from kraftlog.spark.job import Options, run
from kraftlog.spark.sink import STAGING

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


def test_executors_read_inputs_in_s3_through_the_storage_layer(spark_cluster, s3, fixtures):
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


def test_the_job_on_the_cluster_with_input_and_output_in_s3_gives_the_local_tables(spark_cluster, s3,
                                                                                   local_run_three):
    local, here = local_run_three
    bucket = s3.bucket("cluster-job")
    uri = s3.upload(local, bucket + "/in/three-nodes")
    proc = spark_cluster.job("--input", "s3a" + uri[2:], "--output", f"{bucket}/out", "--at-offset", "1000",
                             env=s3.env, conf=s3.spark_conf())
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    same_delta_tables(here, local, f"{bucket}/out", "s3a" + uri[2:], s3)


def test_a_local_run_with_output_in_s3_gives_the_local_tables_as_delta(spark_s3, s3, local_run_three):
    """And a second run onto it replaces each table in one Delta commit: the tables hold its rows only."""
    local, here = local_run_three
    out, versions = s3.bucket("local-job") + "/out", []
    for _ in range(2):
        run(spark_s3, Options(inputs=[str(local)], output=out, at_offsets=[1000]))
        versions.append(json.loads(s3.client().get_object(Bucket="local-job", Key="out/_manifest.json")["Body"].read()))
    first, second = versions
    same_delta_tables(here, local, out, str(local), s3)
    assert {t: v - 1 for t, v in second["delta_versions"].items()} == first["delta_versions"]
    import polars as pl

    from kraftlog.spark.output import storage_options

    assert pl.read_delta(f"{out}/records", storage_options=storage_options(out)).height == first["counts"]["records"]


def test_an_object_store_prefix_kraftlog_did_not_write_is_refused_and_stale_staging_is_removed(s3, capfd):
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


def test_parts_killed_runs_wrote_into_delta_tables_go_with_their_staging_unless_a_commit_names_them(s3, capfd):
    """A run killed before its commits leaves Parquet parts in the tables' folders that no Delta
    version names; the next run removes them with the run's staging. A run killed between its commits
    keeps the parts its commits name (that version reads them); a later run's are not touched."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, Schema
    from deltalake.transaction import AddAction, CommitProperties, create_table_with_add_actions

    from kraftlog.files.storage import filesystem
    from kraftlog.spark.output import storage_options

    out = s3.bucket("orphans") + "/out"
    fs, base = filesystem(out)
    done, before, between = guard.new_run_id(), guard.new_run_id(), guard.new_run_id()
    manifest = {"run_id": done, "versions": {"kraftlog": "x"}, "counts": {"records": 1, "batches": 1}}
    s3.client().put_object(Bucket="orphans", Key="out/_manifest.json", Body=json.dumps(manifest).encode())
    schema = Schema.from_arrow(pa.schema([("x", pa.int64()), ("cluster_id", pa.string())]))

    def part(table: str, run_id: str) -> str:
        path = f"{table}/cluster_id=c/part-g0-{run_id}.parquet"
        pq.write_table(pa.table({"x": [1]}), f"{base}/{path}", filesystem=fs)
        return path

    def commit(table: str, run_id: str) -> None:
        path = part(table, run_id)
        adds = [AddAction(path.split("/", 1)[1], fs.get_file_info(f"{base}/{path}").size, {"cluster_id": "c"}, 0, True,
                          json.dumps({"numRecords": 1}))]
        props = CommitProperties(custom_metadata={"kraftlog.run_id": run_id})
        if DeltaTable.is_deltatable(f"{out}/{table}", storage_options=storage_options(out)):
            DeltaTable(f"{out}/{table}", storage_options=storage_options(out)).create_write_transaction(
                adds, mode="append", schema=schema, partition_by=["cluster_id"], commit_properties=props)
        else:
            create_table_with_add_actions(f"{out}/{table}", schema, adds, mode="error", partition_by=["cluster_id"],
                                          storage_options=storage_options(out), commit_properties=props)

    for table in ("records", "batches"):
        commit(table, done)
        part(table, before)
    commit("records", between)
    part("batches", between)
    for run_id in (before, between):
        s3.client().put_object(Bucket="orphans", Key=f"out/{STAGING}{run_id}/decoded/part-1.arrow", Body=b"x")
    with guard.claim(out, ["/in"]) as held:
        assert held.removed == [f"{out}/{STAGING}{before}", f"{out}/{STAGING}{between}"]
        later = guard.new_run_id()  # a run that started after this one: not touched by it
        part("records", later)
        s3.client().put_object(Bucket="orphans", Key=f"out/{STAGING}{later}/x", Body=b"x")
        assert guard._remove_stale_remote(out, held.run_id) == []
    assert sorted(k for k in s3.keys(out) if k.endswith(".parquet")) == sorted([
        f"batches/cluster_id=c/part-g0-{done}.parquet", f"records/cluster_id=c/part-g0-{between}.parquet",
        f"records/cluster_id=c/part-g0-{done}.parquet", f"records/cluster_id=c/part-g0-{later}.parquet"])
    assert f"kraftlog: removed 3 parts that those runs wrote into {out} and no commit names" in capfd.readouterr().err
    assert DeltaTable(f"{out}/records", storage_options=storage_options(out)).to_pyarrow_table().num_rows == 2
