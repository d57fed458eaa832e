"""The real parts ``cluster_support`` starts do what the cluster and object-storage tests rely on:
the worker's executors run this venv's Python with kraftlog from the shipped zip and cannot see the
driver's files; moto stores and returns objects; a Connect client runs queries and Python functions,
whose workers import kraftlog only as the client ships it."""

import json
import subprocess
import textwrap

import pytest

from cluster_support import PYTHON, clean_env, package_zip

pytestmark = pytest.mark.spark

_PROBE = '''
import json, os, sys
from pyspark.sql import SparkSession

seen = sys.argv[1]
with open(seen, "w") as f:
    f.write("written by the driver")


def look(_):
    import kraftlog
    yield json.dumps({"exists": os.path.exists(seen), "listing": os.listdir(os.path.dirname(seen)),
                      "kraftlog": kraftlog.__file__, "python": sys.executable})


spark = SparkSession.builder.getOrCreate()
rdd = spark.sparkContext.parallelize(range(4), 2)
print("SUM", rdd.map(lambda x: x * x).sum())
for line in rdd.mapPartitions(look).collect():
    print("EXECUTOR", line)
spark.stop()
'''


def test_executors_run_the_venv_and_the_zip_and_cannot_see_the_drivers_files(spark_cluster):
    script = spark_cluster.driver_root / "probe.py"
    script.write_text(_PROBE)
    seen = spark_cluster.driver_root / "seen.txt"
    proc = spark_cluster.submit(script, str(seen), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:] + spark_cluster.executor_logs()
    assert "SUM 14" in proc.stdout.splitlines()
    looks = [json.loads(line.removeprefix("EXECUTOR ")) for line in proc.stdout.splitlines()
             if line.startswith("EXECUTOR ")]
    assert len(looks) == 2
    assert seen.read_text() == "written by the driver"
    for look in looks:
        assert look["exists"] is False and look["listing"] == []  # an empty tmpfs over the driver's folder
        assert look["python"] == PYTHON
        assert ".zip" in look["kraftlog"] and str(spark_cluster.pyfiles) not in look["kraftlog"], look


def test_moto_stores_and_lists_and_returns_objects(s3, tmp_path):
    uri = s3.bucket("parts-smoke")
    (tmp_path / "tree" / "a" / "b").mkdir(parents=True)
    (tmp_path / "tree" / "a" / "b" / "one.log").write_bytes(b"\x00\x01" * 1000)
    (tmp_path / "tree" / "top.txt").write_text("top")
    s3.upload(tmp_path / "tree", f"{uri}/prefix")
    assert s3.keys(f"{uri}/prefix") == ["a/b/one.log", "top.txt"]
    back = s3.download(f"{uri}/prefix", tmp_path / "back")
    assert (back / "a" / "b" / "one.log").read_bytes() == b"\x00\x01" * 1000
    assert (back / "top.txt").read_text() == "top"
    body = s3.client().get_object(Bucket="parts-smoke", Key="prefix/top.txt")["Body"].read()
    assert body == b"top"


_CONNECT = '''
import json, sys
import pyarrow as pa
from pyspark.sql import SparkSession

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()


def double(batches):
    for b in batches:
        yield pa.RecordBatch.from_pydict({"id": pa.compute.multiply(b.column("id"), 2)})


def where_kraftlog(batches):
    import kraftlog  # from what the client shipped, or nowhere

    for b in batches:
        yield pa.RecordBatch.from_pydict({"file": [kraftlog.__file__] * b.num_rows})


try:
    spark.range(1).mapInArrow(where_kraftlog, "file string").collect()
    unshipped = "imported"
except Exception as e:
    unshipped = "No module named 'kraftlog'" in str(e)
spark.addArtifacts(sys.argv[2], pyfile=True)
print(json.dumps({
    "sum": spark.range(10).selectExpr("sum(id) AS s").collect()[0]["s"],
    "python": spark.range(3).mapInArrow(double, "id long").collect()[2]["id"],
    "remote": type(spark).__module__,
    "unshipped": unshipped,
    "shipped": spark.range(1).mapInArrow(where_kraftlog, "file string").collect()[0]["file"],
}))
'''


def test_a_connect_client_runs_a_query_and_a_python_function(spark_connect, tmp_path):
    assert spark_connect.startswith("sc://127.0.0.1:")
    zipped = package_zip(tmp_path / "kraftlog.zip")
    proc = subprocess.run([PYTHON, "-c", textwrap.dedent(_CONNECT), spark_connect, str(zipped)], capture_output=True,
                          text=True, timeout=300, env=clean_env(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "kraftlog.zip" in out.pop("shipped")  # the server's workers import what the client shipped
    assert out == {"sum": 45, "python": 4, "remote": "pyspark.sql.connect.session", "unshipped": True}
