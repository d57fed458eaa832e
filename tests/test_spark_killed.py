"""A driver killed (SIGKILL, its whole process group: the JVM and Python workers with it) at moments
spread over a run leaves the previous output readable and whole, and the next run succeeds and
removes the killed runs' staging (issue 15).

The killed runs are the job's command line in processes of their own, killed at fractions of the
wall time of such a run from start to end (``whole``, measured once onto a local output; the object
store's test measures its own), or as something they write appears (a staging folder, a manifest in
it), which no run can outpace. The outputs they would replace, and the runs after them, run in this
process on the tests' own ``local[2]`` session: the same job, without a JVM to start."""

import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cluster_support import PYTHON, clean_env
from conftest import REPO
from kraftlog.spark.job import TABLES, Options, run
from kraftlog.spark.output import storage_options
from spark_support import kraft_metadata, table

pytestmark = pytest.mark.spark

#: Where in a run the driver is killed, as fractions of a whole run's wall time (measured first).
MOMENTS = (0.35, 0.85)


def _start(inp: Path, out: Path | str, cwd: Path, env: dict[str, str] | None = None,
           extra: tuple[str, ...] = ()) -> subprocess.Popen:
    return subprocess.Popen([PYTHON, str(REPO / "jobs" / "kraft_metadata.py"), "--master", "local[2]",
                             "--input", str(inp), "--output", str(out), "--at-offset", "100", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                            env=clean_env(PYTHONPATH=str(REPO), **(env or {})), cwd=cwd)


def _finish(proc: subprocess.Popen) -> str:
    """The run's stderr, once it has ended well."""
    err = proc.communicate(timeout=300)[1].decode(errors="replace")
    assert proc.returncode == 0, err[-3000:]
    return err


@pytest.fixture(scope="module")
def whole(fixtures, tmp_path_factory) -> float:
    """Seconds a whole run of the command line onto a new local output takes, start to end."""
    tmp = tmp_path_factory.mktemp("whole")
    start = time.monotonic()
    _finish(_start(fixtures / "single-node", tmp / "out", tmp))
    return time.monotonic() - start


@pytest.fixture
def here(spark, fixtures, monkeypatch, capsys):
    """A run of the command line (as ``_start`` gives it) in this process, on the tests' session: its stderr."""
    monkeypatch.setattr(kraft_metadata, "session", lambda *_, **__: spark)

    def finish(out: Path, extra: tuple[str, ...] = ()) -> str:
        code = kraft_metadata.main(["--input", str(fixtures / "single-node"), "--output", str(out),
                                    "--at-offset", "100", *extra])
        err = capsys.readouterr().err
        assert code == 0, err[-3000:]
        return err

    return finish


def _state(out: Path) -> tuple[dict[str, str], dict[str, int]]:
    """Every file's digest, and every table's rows read back (a table that does not read fails)."""
    digests = {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
               for p in sorted(out.rglob("*")) if p.is_file()}
    return digests, {t: len(table(out, t)) for t in TABLES}


def _killed(out: Path, before: tuple, counts: dict[str, int], when: str) -> tuple:
    """The output after a run onto it was killed: as it was, or, where the kill came after the run put
    its output in place and before its process ended (its JVM's shutdown, a second or two), that
    run's whole: another run's manifest and every table read back with ``counts`` rows. The state
    the next kill is compared with."""
    now = _state(out)
    if now != before:
        ran = json.loads((out / "_manifest.json").read_text())["run_id"]
        assert ran not in json.dumps(before[0]) and now[1] == counts, f"{when}: neither the previous output nor the run's"
    return now


def test_a_driver_killed_at_any_moment_leaves_the_previous_output_whole(fixtures, whole, here, tmp_path):
    out = tmp_path / "out"
    here(out)
    before = _state(out)
    assert before[1]["records"] > 1000 and (out / "_manifest.json").is_file()
    for moment in MOMENTS:
        proc = _start(fixtures / "single-node", out, tmp_path)
        time.sleep(moment * whole)
        if proc.poll() is not None:  # a faster run than the first: it published, the next kill is timed on it
            _finish(proc)
            before = _state(out)
            continue
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        before = _killed(out, before, before[1], f"killed after {moment * whole:.1f} s of {whole:.1f}")
    # and once as soon as its staging folder is there (a warm run may end before a moment timed on the
    # first, cold one): the next run must have a killed run's staging to remove
    proc = _start(fixtures / "single-node", out, tmp_path)
    deadline = time.monotonic() + 300
    while not any(".staging-" in p.name for p in tmp_path.iterdir()) and proc.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before its staging folder was seen"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _state(out) == before, "killed as its staging folder appeared"
    left = sorted(p.name for p in tmp_path.iterdir() if ".staging-" in p.name or ".previous-" in p.name)
    err = here(out)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".out.lock") == ["out"]
    assert len([line for line in err.splitlines() if "did not finish" in line]) == len(left) > 0
    assert _state(out)[1] == before[1]
    print(f"whole run {whole:.1f} s; killed at {[round(m * whole, 1) for m in MOMENTS]} s; "
          f"staging left by the killed runs and removed by the next: {len(left)}")


def test_a_driver_killed_appending_leaves_the_earlier_runs_whole(fixtures, here, tmp_path):
    """Killed near its end (as it links the earlier output's files into staging, or swaps), an
    appending run leaves the output holding the earlier runs as they were; the next one appends."""
    out, append = tmp_path / "out", ("--mode", "append")
    here(out, append)
    one = json.loads((out / "_manifest.json").read_text())["counts"]
    before = _state(out)
    proc = _start(fixtures / "single-node", out, tmp_path, extra=append)
    # killed as its manifest appears in staging, written just before it publishes, or (a poll that missed
    # that) once it published, in its JVM's shutdown; not at a fraction of ``whole``: a warm run often
    # ended before 0.9 x a cold one, and then nothing was killed
    published = (out / "_manifest.json").read_text()
    start, deadline = time.monotonic(), time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline \
            and not any((p / "_manifest.json").exists() for p in tmp_path.glob(".out.staging-*")) \
            and (out / "_manifest.json").read_text() == published:
        time.sleep(0.01)
    when = time.monotonic() - start
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        now = _killed(out, before, {t: 2 * n for t, n in one.items()}, f"killed after {when:.1f} s")
        assert {k: v for k, v in before[0].items() if k != "_manifest.json"}.items() <= now[0].items()
    else:  # ended before the poll saw it publish (a machine too busy to poll): nothing was killed
        _finish(proc)
    here(out, append)
    runs = json.loads((out / "_manifest.json").read_text())["runs"]
    assert len(runs) in (2, 3) and _state(out)[1] == {t: n * len(runs) for t, n in one.items()}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".out.lock") == ["out"]
    print(f"append: killed at {when:.1f} s, {'before' if len(runs) == 2 else 'after'} it published "
          "(or, where it had ended, not killed)")


def _delta_state(store, out: str) -> tuple[dict, dict[str, tuple[int, list]]]:
    """The manifest, and each table at the Delta version it names: rows and the run ids they hold."""
    from deltalake import DeltaTable

    bucket, key = out.removeprefix("s3://").split("/", 1)
    manifest = json.loads(store.client().get_object(Bucket=bucket, Key=f"{key}/_manifest.json")["Body"].read())
    tables = {t: DeltaTable(f"{out}/{t}", version=v, storage_options=storage_options(out)).to_pyarrow_table()
              for t, v in manifest["delta_versions"].items()}
    return manifest, {t: (x.num_rows, sorted(set(x.column("run_id").to_pylist()))) for t, x in tables.items()}


def test_a_driver_killed_writing_to_s3_leaves_the_tables_the_manifest_names_whole(s3, spark_s3, fixtures,
                                                                                   tmp_path):
    """In an object store each table is replaced in one Delta commit; the manifest, written last,
    names the versions of one run, which stay readable whatever moment the next run is killed at."""
    out = s3.bucket("killed") + "/out"
    start = time.monotonic()
    _finish(_start(fixtures / "single-node", out, tmp_path, s3.env))
    whole = time.monotonic() - start
    before = _delta_state(s3, out)
    assert before[1]["records"][0] > 1000
    assert all(ids == [before[0]["run_id"]] for rows, ids in before[1].values() if rows)
    for moment in (0.5, 0.95):
        proc = _start(fixtures / "single-node", out, tmp_path, s3.env)
        time.sleep(moment * whole)
        if proc.poll() is not None:
            _finish(proc)
            before = _delta_state(s3, out)
            continue
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        now = _delta_state(s3, out)
        if now != before:  # killed after writing its manifest, as its process ended: that run's tables, whole
            assert now[0]["run_id"] != before[0]["run_id"], f"killed after {moment * whole:.1f} s of {whole:.1f}"
            assert {t: (rows, [now[0]["run_id"]] if rows else []) for t, (rows, _) in before[1].items()} == now[1]
            before = now
    run(spark_s3, Options(inputs=[str(fixtures / "single-node")], output=out, at_offsets=[100]))
    after = _delta_state(s3, out)
    assert {t: rows for t, (rows, _) in after[1].items()} == {t: rows for t, (rows, _) in before[1].items()}
    assert not [k for k in s3.keys(out) if k.startswith("_staging-")]
    print(f"S3: whole run {whole:.1f} s; killed at {round(0.5 * whole, 1)} s and {round(0.95 * whole, 1)} s")
