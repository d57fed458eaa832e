"""The cluster recipe: kraftlog's wheel, shipped as ``spark-submit --py-files kraftlog.zip
jobs/kraft_metadata.py ...`` with pyspark's own spark-submit, in a folder outside the repo. The zip
is the wheel under another name: a pure-Python wheel is a zip of the package, but pyspark puts only
``.zip``, ``.egg`` and ``.jar`` py-files on the executors' path (``SparkContext.PACKAGE_EXTENSIONS``),
so as ``.whl`` it reaches the driver and not the executors. A ``sitecustomize`` removes the venv's
editable-install finder from the driver and the Python workers, so kraftlog can only come from
the zip, as on a cluster where it is not installed."""

import json
import shutil
import subprocess

import pytest
from test_packaging import build

from cluster_support import SPARK_HOME, clean_env, guard
from conftest import REPO

pytestmark = pytest.mark.spark


def test_job_runs_from_the_wheel_as_py_files(fixtures, tmp_path):
    shutil.copy(build(tmp_path / "build"), tmp_path / "kraftlog.zip")
    env = clean_env(PYTHONPATH=str(guard(tmp_path)))
    submit = SPARK_HOME / "bin" / "spark-submit"
    out = tmp_path / "tables"
    proc = subprocess.run(
        [str(submit), "--master", "local[2]", "--conf", "spark.driver.host=127.0.0.1",
         "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.ui.enabled=false",
         "--py-files", "kraftlog.zip", str(REPO / "jobs" / "kraft_metadata.py"),
         "--input", str(fixtures / "fleet" / "cluster-3.3"), "--output", str(out), "--at-offset", "1000"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["master"] == "local[2]"
    assert manifest["counts"]["records"] > 2000 and manifest["counts"]["state_partitions"] > 0
    assert str(REPO) not in env["PYTHONPATH"]
