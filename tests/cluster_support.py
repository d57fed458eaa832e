"""Real parts for the tests that run kraftlog as a platform team would: a Spark standalone master
and worker, a local S3-compatible store (moto) and a Spark Connect server, each started once per
pytest session on 127.0.0.1 and stopped by its own process group.

The worker runs in a mount namespace of its own (``unshare --mount``) with an empty tmpfs over the
folders the driver keeps test data in (``driver_root``, pytest's tmp base, the repository and
kraftlog's editable source), so an executor sees only what travels through Spark or the storage
layer, as on a cluster whose executors share no disk with the driver. Executors run this venv's
Python and get kraftlog only from the zip the driver ships (``--py-files``); a ``sitecustomize``
removes the editable install's finder from their interpreters.

The driver of a cluster run is a ``spark-submit`` subprocess (``SparkCluster.submit``): pyspark allows
one SparkContext per process, and the tests' own ``local[2]`` session (``spark_support``) lives in
this one. A Connect client likewise runs in a subprocess: ``SparkSession.builder.remote`` marks the
whole interpreter as remote.

``conftest`` gives every test module the fixtures (``spark_cluster``, ``s3``, ``spark_s3``,
``spark_connect``); a module must not import them: a session fixture imported into a module is
that module's own, started again for it.
"""

import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow.dataset as ds
import pyspark
import pytest

from conftest import REPO

SPARK_HOME = Path(pyspark.__file__).parent
PYTHON = sys.executable
START_TIMEOUT = 120  # seconds for a JVM to say it listens, on a 2-core machine shared by many
#: Removes setuptools' editable-install finder, so kraftlog comes only from what Spark ships.
_GUARD = 'import sys\nsys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]\n'
#: In the worker's namespace: an empty tmpfs over each folder before ``--``, then the worker itself.
_PRIVATE = ('set -e; while [ "$1" != -- ]; do mount -t tmpfs -o size=256m,mode=1777 kraftlog-private "$1"; '
            'shift; done; shift; exec "$@"')


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without the Spark, PySpark and Python settings of the test run (so a JVM or
    a worker does not inherit the tests' PYTHONPATH), on loopback, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_", "PYTHON"))}
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=PYTHON, PYSPARK_DRIVER_PYTHON=PYTHON, **extra)
    return env


def run_job(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python jobs/kraft_metadata.py --master local[2] args`` (an embedded session), as a user runs it."""
    return subprocess.run([PYTHON, str(REPO / "jobs" / "kraft_metadata.py"), "--master", "local[2]", *args],
                          capture_output=True, text=True, timeout=900, env=clean_env(PYTHONPATH=str(REPO), **(env or {})))


class Daemon:
    """A server process we started, in a process group of its own, its output in ``log``."""

    def __init__(self, name: str, argv: list[str], log: Path, env: dict[str, str], cwd: Path | None = None):
        self.name, self.log = name, log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=env, cwd=cwd, start_new_session=True)

    def wait_for(self, pattern: str, timeout: float = START_TIMEOUT) -> re.Match:
        """The first match of ``pattern`` in the log; fails the test session (with the log's tail) if
        the process ends or says nothing of the kind in time."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.log.read_text(errors="replace")
            if m := re.search(pattern, text):
                return m
            if self.proc.poll() is not None or time.monotonic() > deadline:
                state = f"exited with {self.proc.returncode}" if self.proc.poll() is not None else "timed out"
                self.stop()
                pytest.fail(f"{self.name} did not start ({state}); its log {self.log} ends:\n{text[-3000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM to its process group (a worker's executors and their Python workers with it),
        then SIGKILL to what is left of the group after 20 s or once its leader has ended."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(20)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def guard(folder: Path) -> Path:
    """``folder/guard`` holding the ``sitecustomize`` that hides the editable install: a
    ``PYTHONPATH`` for interpreters that must get kraftlog only as Spark ships it."""
    (folder / "guard").mkdir()
    (folder / "guard" / "sitecustomize.py").write_text(_GUARD)
    return folder / "guard"


def _need(what: str, argv: list[str]) -> None:
    """Skip, saying why, where this machine cannot do ``what``."""
    try:
        ok = subprocess.run(argv, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"cannot {what}: {e}")
    if ok.returncode != 0:
        pytest.skip(f"cannot {what}: `{' '.join(argv)}` says {ok.stderr.decode(errors='replace').strip()!r}")


def package_zip(dest: Path) -> Path:
    """kraftlog's modules from this worktree as a zip for ``--py-files``."""
    package = REPO / "kraftlog"
    with zipfile.ZipFile(dest, "w") as z:
        for path in sorted(package.rglob("*.py")):
            z.write(path, path.relative_to(REPO))
    return dest


def _editable_sources() -> set[Path]:
    """Where an editable install of kraftlog points (``/work/main/kraftlog`` in the shared venv)."""
    out = set()
    for finder in sys.meta_path:
        mapping = getattr(sys.modules.get(getattr(finder, "__module__", "")), "MAPPING", None)
        if isinstance(mapping, dict) and "kraftlog" in mapping:
            out.add(Path(mapping["kraftlog"]))
    return out


def _repo_folders() -> set[Path]:
    """The repository's folders (its sources, fixtures and tests) but the venv, which the worker runs
    (CI's venv lies inside the clone) and git's own."""
    return {p.resolve() for p in REPO.iterdir() if p.is_dir() and p.name not in (".venv", ".git")}


def _outermost(folders: set[Path]) -> tuple[Path, ...]:
    """The folders none of the others holds: a tmpfs over a folder already hidden has nowhere to go."""
    return tuple(sorted(p for p in folders if not any(q != p and p.is_relative_to(q) for q in folders)))


@dataclass
class SparkCluster:
    """A standalone master with one 2-core worker that cannot see ``private``."""

    master: str
    driver_root: Path  # a folder for the tests' inputs and outputs, hidden from the worker
    pyfiles: Path  # kraftlog as a zip, under driver_root (so it reaches executors only through Spark)
    private: tuple[Path, ...]  # every folder the worker sees as an empty tmpfs
    worker_log: Path
    work_dir: Path  # the worker's own folder: executors' stdout/stderr under app-*/N/

    def submit(self, script: Path, *args: str, env: dict[str, str] | None = None, conf: dict[str, str] | None = None,
               timeout: float = 900) -> subprocess.CompletedProcess:
        """``spark-submit --master <this cluster> --py-files kraftlog.zip script args`` from
        ``driver_root``, as a user runs the job; the driver imports this worktree's kraftlog."""
        settings = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                    "spark.ui.enabled": "false", "spark.pyspark.python": PYTHON,
                    "spark.executor.memory": "1g", "spark.sql.shuffle.partitions": "4", **(conf or {})}
        argv = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", self.master, "--py-files", str(self.pyfiles)]
        for k, v in settings.items():
            argv += ["--conf", f"{k}={v}"]
        return subprocess.run([*argv, str(script), *args], cwd=self.driver_root, capture_output=True, text=True,
                              timeout=timeout, env=clean_env(PYTHONPATH=str(REPO), **(env or {})))

    def job(self, *args: str, env: dict[str, str] | None = None, conf: dict[str, str] | None = None,
            timeout: float = 900) -> subprocess.CompletedProcess:
        """``jobs/kraft_metadata.py args`` on the cluster."""
        return self.submit(REPO / "jobs" / "kraft_metadata.py", *args, env=env, conf=conf, timeout=timeout)

    def executor_logs(self) -> str:
        """Every executor's stderr so far (for a failing test's message)."""
        return "\n".join(f"== {p}\n{p.read_text(errors='replace')[-4000:]}" for p in sorted(self.work_dir.rglob("stderr")))


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A standalone master and worker on 127.0.0.1 for the whole session; skipped where Java or a
    mount namespace is not to be had."""
    _need("run Java (Spark's master and worker)", ["java", "-version"])
    _need("make a mount namespace with a private tmpfs (the worker's own disk)",
          ["unshare", "--mount", "sh", "-c", "mount -t tmpfs kraftlog-probe /mnt"])
    base = tmp_path_factory.getbasetemp()
    driver_root = Path(tempfile.mkdtemp(prefix="kraftlog-driver-"))
    work = Path(tempfile.mkdtemp(prefix="kraftlog-worker-"))  # visible to both: the worker's own
    hidden = guard(work)
    (work / "work").mkdir()
    private = _outermost({driver_root, base.resolve(), *_repo_folders(), *_editable_sources()})
    master = Daemon("Spark master", [str(SPARK_HOME / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
                                     "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
                    work / "master.log", clean_env(), cwd=work)
    worker = None
    try:
        url = master.wait_for(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)")[1]
        worker = Daemon("Spark worker", [
            "unshare", "--mount", "--propagation", "private", "sh", "-c", _PRIVATE, "sh", *map(str, private), "--",
            str(SPARK_HOME / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
            "--host", "127.0.0.1", "--port", "0", "--webui-port", "0", "--cores", "2", "--memory", "2g",
            "--work-dir", str(work / "work"), url],
            work / "worker.log", clean_env(PYTHONPATH=str(hidden)), cwd=work)
        worker.wait_for(r"Successfully registered with master")
        yield SparkCluster(url, driver_root, package_zip(driver_root / "kraftlog.zip"), private, work / "worker.log",
                           work / "work")
    finally:
        for daemon in (worker, master):
            if daemon is not None:
                daemon.stop()
        shutil.rmtree(driver_root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


@dataclass
class S3:
    """A moto S3 server: its endpoint and the environment a client (boto3, pyarrow, a Spark job)
    needs to reach it."""

    endpoint: str
    env: dict[str, str]

    def spark_conf(self) -> dict[str, str]:
        """The same settings for a cluster's executors (``spark.executorEnv.*``)."""
        return {f"spark.executorEnv.{k}": v for k, v in self.env.items()}

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=self.env["AWS_DEFAULT_REGION"],
                            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"])

    def bucket(self, name: str) -> str:
        """A new bucket; its ``s3://`` URI."""
        self.client().create_bucket(Bucket=name)
        return f"s3://{name}"

    def upload(self, folder: Path, uri: str) -> str:
        """Every file below ``folder`` under ``uri`` (``s3://bucket/prefix``), paths kept; ``uri``."""
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        client = self.client()
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            client.upload_file(str(path), bucket, "/".join(filter(None, [prefix.rstrip("/"),
                                                                           path.relative_to(folder).as_posix()])))
        return uri

    def keys(self, uri: str) -> list[str]:
        """The keys below ``uri``, relative to it, sorted."""
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        prefix = prefix.rstrip("/") + "/" if prefix else ""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(o["Key"][len(prefix):] for page in pages for o in page.get("Contents", []))

    def download(self, uri: str, folder: Path) -> Path:
        """Every object below ``uri`` into ``folder``, paths kept; ``folder``."""
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        prefix = prefix.rstrip("/") + "/" if prefix else ""
        client = self.client()
        for key in self.keys(uri):
            (folder / key).parent.mkdir(parents=True, exist_ok=True)
            client.download_file(bucket, prefix + key, str(folder / key))
        return folder


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """``moto_server`` on 127.0.0.1 (a free port) for the whole session. Its ``env`` is also put
    into this process's environment (restored at the end), so pyarrow and boto3 here reach it."""
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    server = Daemon("moto S3 server", [PYTHON, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"], log, clean_env())
    try:
        endpoint = server.wait_for(r"Running on (http://127\.0\.0\.1:\d+)")[1]
        env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
        with pytest.MonkeyPatch.context() as mp:
            for k, v in env.items():
                mp.setenv(k, v)
            for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
                mp.delenv(k, raising=False)
            yield S3(endpoint, env)
    finally:
        server.stop()


@pytest.fixture
def spark_s3(spark, s3):
    """The tests' own ``local[2]`` session (``spark_support.spark``, which a module using this imports
    too) with the ``s3`` server's settings in its Python workers' environment, so that a run in this
    process reads and writes the store, as a user's embedded session started with them does: pyspark
    sends ``SparkContext.environment`` (where ``spark.executorEnv.*`` lands) with each Python function,
    and the JVM starts workers of their own for functions of another environment. Put back after the
    test."""
    environment = spark.sparkContext.environment
    before = dict(environment)
    environment.update(s3.env)
    try:
        yield spark
    finally:
        environment.clear()
        environment.update(before)


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory, s3):
    """A Spark Connect server (``local[2]``, pyspark's own ``spark-connect`` jar) on 127.0.0.1 for the
    whole session: its ``sc://127.0.0.1:PORT`` URL. Its Python workers run this venv's Python without
    the editable install's finder, so kraftlog reaches them only as a client ships it
    (``spark.addArtifacts(zip, pyfile=True)``), as on a shared Connect cluster. The server's
    environment holds the ``s3`` server's settings, as a managed Connect cluster holds its store's."""
    _need("run Java (the Spark Connect server)", ["java", "-version"])
    if not list((SPARK_HOME / "jars").glob("spark-connect_*.jar")):
        pytest.skip(f"pyspark {pyspark.__version__} ships no spark-connect jar in {SPARK_HOME / 'jars'}")
    work = tmp_path_factory.mktemp("connect")
    server = Daemon("Spark Connect server", [
        str(SPARK_HOME / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--name", "kraftlog-tests-connect", "--master", "local[2]",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", "spark.connect.grpc.binding.port=0",
        "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", "spark.ui.enabled=false", "--conf", f"spark.pyspark.python={PYTHON}",
        "--conf", "spark.sql.shuffle.partitions=4", "spark-internal"], work / "connect.log",
        clean_env(PYTHONPATH=str(guard(work)), **s3.env), cwd=work)
    try:
        port = server.wait_for(r"Spark Connect server started at: \S*?:(\d+)")[1]
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.stop()


def _rows(t, roots: dict[str, str]) -> list[tuple]:
    """A table's rows, sorted, ``run_id`` left out and each input root in a string replaced by its key
    in ``roots`` (so a local path and a URI of the same file compare equal)."""
    def plain(v):
        if isinstance(v, str):
            for name, root in roots.items():
                v = v.replace(root, name)
            return v
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return sorted(tuple(sorted((k, json.dumps(plain(v), sort_keys=True, default=str)) for k, v in r.items()
                               if k != "run_id")) for r in t.to_pylist())


def tables(out: Path, roots: dict[str, str]) -> dict[str, list[tuple]]:
    """Every table of a local output as sorted rows (``_rows``)."""
    return {folder.name: _rows(ds.dataset(folder, format="parquet", partitioning="hive").to_table(), roots)
            for folder in sorted(p for p in out.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))}


def delta_tables(uri: str, names: list[str], roots: dict[str, str]) -> dict[str, list[tuple]]:
    """Every table of an object-store output (Delta tables, read with ``deltalake``) as sorted rows."""
    from deltalake import DeltaTable

    from kraftlog.spark.output import storage_options

    return {n: _rows(DeltaTable(f"{uri}/{n}", storage_options=storage_options(uri)).to_pyarrow_table(), roots)
            for n in names}


def same_delta_tables(here: Path, local: Path, there: str, inputs: str, s3: S3) -> None:
    """The Delta tables at ``there`` hold the rows of the Parquet tables at ``here``; the manifest,
    written last, names each table's Delta version; nothing of the run's staging is left."""
    from kraftlog.spark.job import TABLES

    mine = tables(here, {"ROOT": str(local.resolve())})
    theirs = delta_tables(there, sorted(mine), {"ROOT": inputs})
    assert set(TABLES) == set(mine) and len(mine) > 10
    for name in mine:
        assert mine[name] == theirs[name], name
    bucket, _, prefix = there.removeprefix("s3://").partition("/")
    manifest = json.loads(s3.client().get_object(Bucket=bucket, Key=f"{prefix}/_manifest.json")["Body"].read())
    assert set(manifest["delta_versions"]) == set(TABLES)
    assert not [k for k in s3.keys(there) if k.startswith("_staging-")]
