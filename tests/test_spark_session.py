"""The driver JVM's class archive: written by ``python -m kraftlog.spark.classes``, used by embedded
sessions when it is there, ignored (not a crash) when it is damaged."""

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap

import pytest

from kraftlog.spark import session as S

pytestmark = pytest.mark.spark

JAVA = shutil.which("java")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "kraftlog"


def test_no_archive_no_archive_option(cache):
    assert S.class_archive().parent == cache
    assert S.driver_options() == S.QUICK_JVM


def test_an_archive_is_mapped_and_checked(cache):
    archive = S.class_archive()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"x")
    assert S.driver_options() == f"{S.QUICK_JVM} -XX:SharedArchiveFile={archive} -XX:+VerifySharedSpaces"


def test_writing_one_uses_none(cache, tmp_path):
    archive = S.class_archive()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"x")
    options = S.driver_options(archive_at_exit=tmp_path / "new.jsa")
    assert f"-XX:ArchiveClassesAtExit={tmp_path / 'new.jsa'}" in options
    assert "SharedArchiveFile" not in options


def test_one_archive_per_java(cache, tmp_path, monkeypatch):
    found = S.class_archive()
    for home in ("a", "b"):
        (tmp_path / home / "bin").mkdir(parents=True)
        (tmp_path / home / "bin" / "java").write_text("")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "a"))
    a = S.class_archive()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "b"))
    assert len({found, a, S.class_archive()}) == 3
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "none"))
    assert S.class_archive() is None


def test_one_archive_per_version_of_the_job(cache, monkeypatch):
    found = S.class_archive()
    monkeypatch.setattr(S, "_job_digest", lambda: "another job")
    assert S.class_archive() not in (found, None) and S.class_archive().parent == found.parent


def _java_starts() -> str:
    run = subprocess.run([JAVA, *shlex.split(S.driver_options()), "-version"], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout + run.stderr


@pytest.mark.skipif(JAVA is None, reason="no java on PATH")
def test_an_archive_that_is_none_is_ignored(cache):
    archive = S.class_archive()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(os.urandom(1 << 16))
    _java_starts()


@pytest.mark.skipif(JAVA is None, reason="no java on PATH")
def test_the_written_archive_starts_a_session(cache):
    """The archive the module writes is one the driver can map: with ``-Xshare:on`` the JVM would
    refuse to start otherwise."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    written = subprocess.run([sys.executable, "-m", "kraftlog.spark.classes"], capture_output=True, text=True,
                             env=env, timeout=600)
    archive = S.class_archive()
    assert written.returncode == 0, written.stderr[-2000:]
    assert f"wrote {archive}" in written.stdout
    assert archive.stat().st_size > 1 << 20
    again = subprocess.run([sys.executable, "-m", "kraftlog.spark.classes"], capture_output=True, text=True, env=env)
    assert again.returncode == 0 and "exists" in again.stdout
    check = textwrap.dedent(f"""
        from kraftlog.spark.session import driver_options, session
        spark = session("local[1]", "t", {{"spark.driver.extraJavaOptions": driver_options() + " -Xshare:on"}})
        assert "{archive}" in spark.sparkContext.getConf().get("spark.driver.extraJavaOptions")
        print(spark.sparkContext.parallelize(range(10), 2).sum())
    """)
    used = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, timeout=300)
    assert used.returncode == 0, used.stderr[-2000:]
    assert used.stdout.split()[-1] == "45"
    # one flipped byte inside: without the check as it is mapped, the JVM crashes
    archive.chmod(0o600)
    with archive.open("r+b") as f:
        f.seek(archive.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert "Unable to use shared archive" in _java_starts()


def test_remove_deletes_the_archives_it_wrote_and_nothing_else(cache, capsys):
    from kraftlog.spark.classes import main

    cache.mkdir(parents=True)
    ours = [S.class_archive(), cache / "spark-driver-0123456789abcdef.jsa", cache / ".spark-driver-x.jsa.42.tmp"]
    theirs = [cache / "notes.txt", cache / "spark-driver.jsa.bak"]
    for f in ours + theirs:
        f.write_bytes(b"x" * (1 << 20))
    assert main(["--remove"]) == 0
    assert [f.exists() for f in ours + theirs] == [False, False, False, True, True]
    assert f"removed 3 archive(s), 3 MiB, from {cache}" in capsys.readouterr().out
    assert main(["--remove"]) == 0 and "removed 0 archive(s)" in capsys.readouterr().out


@pytest.mark.skipif(JAVA is None, reason="no java on PATH")
def test_the_passes_run_in_the_workers_the_warm_up_started():
    """An embedded session's warm-up (an RDD job, run while the SQL session is set up) starts the
    Python workers the passes' ``mapInArrow`` tasks run in: one daemon serves both, and its workers'
    imports are frozen, so that pyspark's full collection after each task does not walk them."""
    check = textwrap.dedent("""
        import json, os
        from kraftlog.spark.session import arrow_table, session, workers_started
        spark = session("local[2]", "t")
        workers_started()
        def where(batches):
            import gc, os
            import pyarrow as pa
            for b in batches:
                yield pa.RecordBatch.from_pydict({"daemon": [os.getppid()] * b.num_rows,
                                                  "frozen": [gc.get_freeze_count()] * b.num_rows})
        got = arrow_table(spark.range(4, numPartitions=4).mapInArrow(where, "daemon long, frozen long"))
        rdd = spark.sparkContext.parallelize(range(2), 2).map(lambda _: os.getppid()).collect()
        print(json.dumps({"sql": got.column("daemon").to_pylist(), "frozen": got.column("frozen").to_pylist(),
                          "rdd": rdd}))
    """)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    ran = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    got = json.loads(ran.stdout.splitlines()[-1])
    assert len(set(got["sql"]) | set(got["rdd"])) == 1
    assert all(n > 0 for n in got["frozen"])
