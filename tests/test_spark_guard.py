"""The job never deletes or overwrites what it did not write (``kraftlog.spark.guard``).

The refusals run the job's command line in a subprocess with ``--master nope``: a session started
with that master fails with Spark's own error (exit 1), so a refusal (exit 2, one line of ours)
proves the check ran before Spark did. Every destructive case runs on copies in a temporary folder.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import uuid6

from conftest import REPO
from kraftlog.spark import guard, job
from spark_support import kraft_metadata, table

JOB = REPO / "jobs" / "kraft_metadata.py"
ENV = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}


def _job(*argv: str, cwd: Path, prefix: list[str] = (), master: str = "nope") -> tuple[int, list[str]]:
    """Exit code and stderr lines of the job's command line, by default on a master no session can start."""
    done = subprocess.run([*prefix, sys.executable, str(JOB), "--master", master, *argv], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stderr.splitlines()


def _contents(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


@pytest.fixture
def node(fixtures, tmp_path) -> Path:
    """A copy of one node's log dir, in ``tmp_path/evidence/node-1``."""
    copy = tmp_path / "evidence" / "node-1"
    shutil.copytree(fixtures / "single-node", copy)
    return copy


@pytest.mark.parametrize("output,cwd,says", [
    ("evidence/node-1", ".", "is or holds the input evidence/node-1"),
    ("evidence", ".", "is or holds the input evidence/node-1"),
    (".", "evidence", "is or holds the input node-1"),
    ("", ".", "is empty (an unset variable?)"),
    ("/", ".", "is the root of the filesystem"),
    ("evidence/node-1/out", ".", "is inside the input evidence/node-1"),
    ("evidence/node-1/__cluster_metadata-0", ".", "is inside the input evidence/node-1"),
    ("evidence/node-1/__cluster_metadata-0/out", ".", "is inside the input evidence/node-1"),
])
def test_an_output_that_is_holds_or_is_inside_an_input_is_refused_before_spark(node, tmp_path, output, cwd, says):
    before = _contents(tmp_path)
    given = "node-1" if cwd == "evidence" else "evidence/node-1"
    code, err = _job("--input", given, "--output", output, cwd=tmp_path / cwd)
    assert code == 2 and len(err) == 1 and err[0].startswith(f"kraftlog-spark: error: --output {output or repr('')} {says}")
    assert _contents(tmp_path) == before  # nothing written, nothing removed


def test_the_api_checks_too(node, tmp_path):
    """``job.run`` claims the output itself: no session is touched (``None`` here) before the refusal."""
    before = _contents(tmp_path)
    with pytest.raises(guard.UnsafeOutput, match="is or holds the input"):
        job.run(None, job.Options([str(node)], str(node.parent)))
    assert _contents(tmp_path) == before


def test_an_output_inside_the_log_dir_of_a_metadata_folder_given_as_input_is_refused(node, tmp_path):
    code, err = _job("--input", "evidence/node-1/__cluster_metadata-0", "--output", "evidence/node-1/tables",
                     cwd=tmp_path)
    assert code == 2 and len(err) == 1
    assert "--output evidence/node-1/tables is inside the input evidence/node-1/__cluster_metadata-0" in err[0]


def test_a_folder_kraftlog_did_not_write_is_replaced_only_with_overwrite(node, tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"\xff\xd8")
    before = _contents(tmp_path)
    code, err = _job("--input", str(node), "--output", "photos", cwd=tmp_path)
    assert (code, err) == (2, ["kraftlog-spark: error: --output photos exists and is not a kraftlog output "
                               "(no _manifest.json); give --overwrite to replace it"])
    # accepted with --overwrite: the run goes on to start Spark, which fails on the master; one line, exit 1
    code, err = _job("--input", str(node), "--output", "photos", "--overwrite", cwd=tmp_path)
    assert code == 1
    ours = [line for line in err if line.startswith("kraftlog-spark:")]
    assert len(ours) == 1 and "Java gateway process exited" in ours[0] and "(the run failed; --debug for the traceback)" in ours[0]
    assert not any(line.startswith("Traceback") for line in err)
    assert _contents(tmp_path) == before  # the failed run left no lock and no staging folder


def test_a_folder_with_a_manifest_not_of_kraftlog_or_with_other_files_is_not_ours(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    assert guard.not_ours(out) is None  # empty: nothing to lose
    (out / "_manifest.json").write_text('{"run_id": "x"}')
    assert guard.not_ours(out) == "_manifest.json is not one kraftlog wrote"
    (out / "_manifest.json").write_text(json.dumps({"run_id": guard.new_run_id(), "versions": {"kraftlog": "0"},
                                                    "counts": {"records": 1}}))
    (out / "records").mkdir()
    (out / "._manifest.json.crc").write_bytes(b"")
    assert guard.not_ours(out) is None
    (out / "notes.txt").write_text("mine")
    assert guard.not_ours(out) == "it holds 'notes.txt', which kraftlog did not write"


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_an_existing_file_is_never_replaced(node, tmp_path, overwrite):
    (tmp_path / "tables").write_text("not a folder")
    code, err = _job("--input", str(node), "--output", "tables", *overwrite, cwd=tmp_path)
    assert code == 2 and len(err) == 1 and "--output tables is an existing file" in err[0]
    assert (tmp_path / "tables").read_text() == "not a folder"


def test_a_symlink_as_output_is_refused(node, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "elsewhere")
    code, err = _job("--input", str(node), "--output", "out", "--overwrite", cwd=tmp_path)
    assert code == 2 and err == [f"kraftlog-spark: error: --output out is a symlink to {tmp_path / 'elsewhere'}; "
                                 "give the folder itself"]


def test_uris_compare_by_store_and_key():
    with pytest.raises(guard.UnsafeOutput, match="is or holds the input s3://b/logs/node-1"):
        guard.check_output("s3a://b/logs/", ["s3://b/logs/node-1"])
    with pytest.raises(guard.UnsafeOutput, match="is inside the input"):
        guard.check_output("s3://b/logs/x/../node-1/out", ["s3a://b/logs/node-1"])
    guard.check_output("s3://b/logs2", ["s3://b/logs"])  # a sibling, not a prefix
    guard.check_output("s3://c/logs", ["s3://b/logs"])  # another bucket


def test_a_second_run_onto_a_locked_output_is_refused_naming_the_holder(node, tmp_path):
    with guard.claim(str(tmp_path / "out"), [str(node)]) as held:
        lock = tmp_path / ".out.lock"
        assert json.loads(lock.read_text())["run_id"] == held.run_id
        code, err = _job("--input", str(node), "--output", "out", cwd=tmp_path)
        assert code == 1 and len(err) == 1
        assert f"--output out is being written by run {held.run_id} (pid {os.getpid()} on " in err[0]
        with guard.claim(str(tmp_path / "out"), [str(node)]) as again:  # the same process: the same claim
            assert again is held
        assert lock.exists()
    assert not lock.exists()


def test_with_wait_lock_a_second_run_waits_for_the_first(node, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from kraftlog.spark import guard; "
                               f"c = guard.claim({str(tmp_path / 'out')!r}, []); print(c.run_id, flush=True); "
                               "sys.stdin.read(); c.release()"], env=ENV, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    second = None
    try:
        first = holder.stdout.readline().strip()
        second = subprocess.Popen([sys.executable, str(JOB), "--master", "nope", "--input", str(node), "--output",
                                   "out", "--wait-lock", "300"], cwd=tmp_path, env=ENV, stderr=subprocess.PIPE,
                                  text=True)
        assert second.stderr.readline().startswith(f"kraftlog: waiting up to 300 s for run {first} (pid {holder.pid}")
        holder.stdin.close()
        assert holder.wait(60) == 0
        rest = second.stderr.read().splitlines()
        assert second.wait(60) == 1 and "Java gateway process exited" in rest[-1]  # past the lock, Spark was started
    finally:
        for p in (holder, second):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def test_a_killed_holder_leaves_no_lock_that_blocks(node, tmp_path, capfd):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from kraftlog.spark import guard; "
                               f"c = guard.claim({str(tmp_path / 'out')!r}, []); print(c.run_id, flush=True); "
                               "time.sleep(600)"], env=ENV, stdout=subprocess.PIPE, text=True)
    try:
        dead = holder.stdout.readline().strip()
        with pytest.raises(guard.OutputLocked, match=f"run {dead}"):
            guard.claim(str(tmp_path / "out"), [str(node)])
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    with guard.claim(str(tmp_path / "out"), [str(node)]):
        assert f"taking over the lock {tmp_path / '.out.lock'} of a run that ended without releasing it" in \
            capfd.readouterr().err


def _run_id(seconds_ago: float) -> str:
    """A UUIDv7 of a run started ``seconds_ago``."""
    u = uuid6.uuid7().int
    ms = (u >> 80) - int(seconds_ago * 1000)
    return str(uuid.UUID(int=(ms << 80) | (u & ((1 << 80) - 1))))


def test_stale_staging_folders_of_earlier_runs_are_removed_and_nothing_else(tmp_path, capfd):
    old, other = _run_id(7200), _run_id(60)
    stale = [tmp_path / f".out#1.staging-{old}", tmp_path / f".out#1.previous-{other}"]
    kept = [tmp_path / f".out#1.staging-{str(uuid.uuid4())}",  # not a UUIDv7: not a run id of ours
            tmp_path / f".out#2.staging-{old}",  # another output's
            tmp_path / f".out#1.staging-{old}x", tmp_path / f"out#1.staging-{old}", tmp_path / "elsewhere"]
    for d in stale + kept:
        d.mkdir()
        (d / "decoded").write_text("secret")
    link = tmp_path / f".out#1.staging-{_run_id(3600)}"
    link.symlink_to(tmp_path / "elsewhere")  # not a folder of ours, whatever its name
    with guard.claim(str(tmp_path / "out#1"), []) as held:
        assert sorted(held.removed) == sorted(str(d) for d in stale)
    assert not any(d.exists() for d in stale) and all((d / "decoded").exists() for d in kept) and link.is_symlink()
    err = capfd.readouterr().err
    assert f"kraftlog: removed {stale[0]}, left by run {old} (started " in err and err.count("kraftlog: removed") == 2


def _writable(path: Path) -> list[str]:
    """A command prefix under which ``path`` is a read-only bind mount (a private mount namespace)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a read-only bind mount needs root and unshare")
    return ["unshare", "--mount", "sh", "-c", f"mount --bind -o ro {path} {path} && exec \"$@\"", "sh"]


def test_a_read_only_output_parent_is_refused_before_spark(node, tmp_path):
    (tmp_path / "ro").mkdir()
    code, err = _job("--input", str(node), "--output", "ro/out", cwd=tmp_path, prefix=_writable(tmp_path / "ro"))
    assert (code, err) == (2, [f"kraftlog-spark: error: --output ro/out: cannot write in {tmp_path / 'ro/.out.lock'}: "
                               "Read-only file system"])


def test_a_mount_point_is_refused_even_with_overwrite(node, tmp_path):
    (tmp_path / "mnt").mkdir()
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a mount needs root and unshare")
    prefix = ["unshare", "--mount", "sh", "-c", f"mount -t tmpfs tmpfs {tmp_path / 'mnt'} && exec \"$@\"", "sh"]
    code, err = _job("--input", str(node), "--output", "mnt", "--overwrite", cwd=tmp_path, prefix=prefix)
    assert code == 2 and len(err) == 1 and "--output mnt is a mount point" in err[0]


def test_one_line_names_an_os_error_from_a_worker_or_the_jvm():
    worker = ("An error occurred while calling o81.parquet.\n: org.apache.spark.SparkException: Job aborted\n"
              "\tat org.apache.spark.X\nTraceback (most recent call last):\n  File \"sink.py\", line 3\n"
              "OSError: [Errno 28] No space left on device: '/data/out/records/part-1.parquet'\n")
    assert guard.one_line(RuntimeError(worker), "out") == "/data/out/records/part-1.parquet: No space left on device"
    assert guard.one_line(RuntimeError("OSError: [Errno 28] Error writing bytes to file. Detail: [errno 28] No space "
                                       "left on device\n"), "out") == "out: No space left on device"
    assert guard.one_line(RuntimeError("An error occurred while calling o3.x.\n: java.io.IOException: Mkdirs "
                                       "failed to create /ro/x\n\tat org.Y"), "out") == \
        "RuntimeError: java.io.IOException: Mkdirs failed to create /ro/x"
    assert guard.one_line(PermissionError(13, "Permission denied", "/srv/out"), "out") == "/srv/out: Permission denied"


@pytest.mark.spark
def test_a_full_disk_fails_the_run_in_one_line_and_leaves_nothing(node, tmp_path):
    """A 64 KiB tmpfs as the output's parent (a private mount namespace): the tasks' writes fail."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a small tmpfs needs root and unshare")
    (tmp_path / "small").mkdir()
    prefix = ["unshare", "--mount", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {tmp_path / 'small'} || exit 9; "
              f"\"$@\"; code=$?; ls -A {tmp_path / 'small'} > {tmp_path / 'left'}; exit $code", "sh"]
    code, err = _job("--input", str(node), "--output", "small/out", cwd=tmp_path, prefix=prefix, master="local[1]")
    assert code == 1
    assert err[-1] == ("kraftlog-spark: error: small/out: No space left on device "
                       "(the run failed; --debug for the traceback)")
    assert (tmp_path / "left").read_text() == ""  # no staging folder, no lock


@pytest.mark.spark
def test_a_path_is_a_path_and_a_rerun_replaces_its_own_output(spark, node, tmp_path, monkeypatch, capfd):
    """``out#1`` is the folder written (not ``.out`` and a fragment), and a second run replaces it
    without ``--overwrite`` (it is kraftlog's) and removes what a killed run left beside it."""
    monkeypatch.setattr(kraft_metadata, "session", lambda *_, **__: spark)
    monkeypatch.chdir(tmp_path)
    assert kraft_metadata.main(["--input", str(node), "--output", "out#1"]) == 0
    first = json.loads((tmp_path / "out#1" / "_manifest.json").read_text())
    assert table(tmp_path / "out#1", "records") and sorted(p.name for p in tmp_path.iterdir()) == ["evidence", "out#1"]
    killed = tmp_path / f".out#1.staging-{_run_id(60)}"
    (killed / "decoded").mkdir(parents=True)
    capfd.readouterr()
    assert kraft_metadata.main(["--input", str(node), "--output", "out#1"]) == 0
    second = json.loads((tmp_path / "out#1" / "_manifest.json").read_text())
    assert second["run_id"] != first["run_id"] and second["removed_stale"] == [str(killed)]
    assert f"kraftlog: removed {killed}" in capfd.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evidence", "out#1"]
    assert len(table(tmp_path / "out#1", "records")) == first["counts"]["records"]


@pytest.mark.parametrize("name", ["out#1", "out?x", "run:2", "a%20b"])
def test_a_path_is_never_parsed_as_a_url(tmp_path, monkeypatch, name):
    from kraftlog.spark.sink import filesystem

    monkeypatch.chdir(tmp_path)
    assert filesystem(f"{name}/records")[1] == f"{tmp_path}/{name}/records"
    assert filesystem(f"file://{tmp_path}/a%20b")[1] == f"{tmp_path}/a b"  # a file: URI is unescaped
