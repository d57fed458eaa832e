"""What ``pip install kraftlog`` gives: the wheel built from the sdist holds the package and its
entry points and runs outside the source tree; without its extras the CLI runs with pyspark,
pyarrow and the job's other dependencies unimportable; CRC-32C works with either package, and a
missing one is named in one line. Runs are subprocesses, some with a ``sys.meta_path`` blocker.
(``scripts/check_wheel.sh`` installs the wheel with its dependencies in fresh venvs, 3.11-3.13.)"""

import email
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

FIXTURE = REPO / "fixtures" / "single-node"
#: What only the ``spark`` extra (or the tests) install: the CLI must not need any of it.
SPARK_ONLY = ("pyspark", "pyarrow", "pandas", "uuid6", "deltalake", "polars", "duckdb", "py4j")

_BLOCKER = '''import sys
class Blocker:
    """Refuses the modules named in argv[1] and their submodules, as if not installed."""
    def __init__(self, names):
        self.names = set(names)
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Blocker(sys.argv.pop(1).split(",")))
'''
_CLI = "sys.argv[0] = 'kraftlog'\nfrom kraftlog.cli.main import main\nsys.exit(main())\n"


def python(code: str, *args: str, blocked: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``code`` run with this worktree's package and ``blocked`` top-level modules unimportable."""
    return subprocess.run([sys.executable, "-c", _BLOCKER + code, ",".join(blocked) or "-", *args],
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)


def kraftlog(*args: str, blocked: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return python(_CLI, *args, blocked=blocked)


@pytest.mark.parametrize("command", [
    ["dump", "--format", "jsonl", str(FIXTURE / "__cluster_metadata-0" / "00000000000000007414.log")],
    ["inspect", "--format", "json", str(FIXTURE)],
    ["replay", "--offset", "1500", "--format", "json", str(FIXTURE)]], ids=lambda c: c[0])
def test_the_cli_runs_without_the_spark_extra(command):
    plain = kraftlog(*command)
    light = kraftlog(*command, blocked=SPARK_ONLY)
    assert plain.returncode == 0, plain.stderr
    assert light.returncode == 0, light.stderr
    assert light.stdout == plain.stdout and len(light.stdout) > 1000


def test_the_report_runs_without_the_spark_extra(tmp_path):
    out = tmp_path / "report.html"
    proc = kraftlog("report", str(FIXTURE), "-o", str(out), blocked=SPARK_ONLY)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 10_000


def test_crcmod_is_the_fallback_and_the_version_says_which_crc_is_active():
    pytest.importorskip("crcmod", reason="crcmod (the 'crcmod' extra, in 'test') is not installed")
    hardware = kraftlog("--version")
    fallback = kraftlog("--version", blocked=("crc32c",))
    assert "CRC-32C: crc32c (" in hardware.stdout, hardware
    assert "CRC-32C: crcmod (" in fallback.stdout, fallback
    # the same batches valid, the same records, with either
    args = ("dump", "--format", "jsonl", str(FIXTURE / "__cluster_metadata-0" / "00000000000000000000.log"))
    with_hw, with_crcmod = kraftlog(*args), kraftlog(*args, blocked=("crc32c",))
    assert with_hw.returncode == with_crcmod.returncode == 0
    assert with_crcmod.stdout == with_hw.stdout and '"isValid":true' in with_hw.stdout


def test_crc32c_of_the_check_string_with_either_package():
    """0xE3069283 is CRC-32C's check value (of b"123456789"), as in RFC 3720's appendix."""
    pytest.importorskip("crcmod", reason="crcmod (the 'crcmod' extra, in 'test') is not installed")
    probe = "from kraftlog.wire.crc import IMPLEMENTATION, crc32c; print(IMPLEMENTATION, crc32c(b'123456789'))"
    for blocked, expected in (((), "crc32c"), (("crc32c",), "crcmod")):
        proc = python(probe, blocked=blocked)
        assert proc.stdout.startswith(expected) and proc.stdout.split()[-1] == str(0xE3069283), proc


def test_without_any_crc_package_the_error_names_what_to_install():
    proc = kraftlog("--version", blocked=("crc32c", "crcmod"))
    assert proc.returncode == 1
    assert "pip install crc32c" in proc.stderr and "kraftlog[crcmod]" in proc.stderr


@pytest.mark.parametrize(("missing", "entry"), [
    ("pyspark", "from kraftlog.spark.__main__ import main\nsys.exit(main())"),  # kraftlog-spark
    ("pyarrow", "import runpy\nrunpy.run_module('kraftlog.spark', run_name='__main__')"),  # python -m
    ("uuid6", f"import runpy\nrunpy.run_path({str(REPO / 'jobs' / 'kraft_metadata.py')!r}, run_name='__main__')"),
], ids=["kraftlog-spark", "python -m kraftlog.spark", "jobs/kraft_metadata.py"])
def test_the_job_without_the_spark_extra_says_what_to_install_in_one_line(missing, entry, tmp_path):
    proc = python(entry, "--input", str(FIXTURE), "--output", str(tmp_path / "out"), blocked=(missing,))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (f"kraftlog-spark: the Spark job needs {missing}, which is not installed: "
                           "pip install 'kraftlog[spark]' (and Java 17 or newer)\n")
    assert not (tmp_path / "out").exists()


def test_the_job_without_java_says_so_in_one_line(tmp_path):
    """Not pyspark's traceback about a gateway: checked before Spark starts, nothing written."""
    (tmp_path / "bin").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_REMOTE", "PYSPARK_GATEWAY_PORT")}
    env.update(PYTHONPATH=str(REPO), PATH=str(tmp_path / "bin"))
    proc = subprocess.run([sys.executable, "-m", "kraftlog.spark", "--input", str(FIXTURE), "--output", "out"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "kraftlog-spark: error: Spark needs Java 17 or newer: no java in $JAVA_HOME/bin or on PATH\n"
    assert [p.name for p in tmp_path.iterdir()] == ["bin"]


def build(out: Path) -> Path:
    """``python -m build`` (the sdist, then the wheel from the sdist) on a copy of the sources, so
    that nothing is written into the worktree; without build isolation, so no network. The wheel."""
    pytest.importorskip("build", reason="'build' (in the 'test' extra) is not installed")
    src = out / "src"
    shutil.copytree(REPO / "kraftlog", src / "kraftlog", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out / "dist"), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (whl,) = (out / "dist").glob("kraftlog-*.whl")
    assert len(list((out / "dist").glob("kraftlog-*.tar.gz"))) == 1
    return whl


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("build"))


def test_the_wheel_holds_the_package_the_job_and_the_entry_points(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {p.relative_to(REPO).as_posix() for p in (REPO / "kraftlog").rglob("*.py")}
    assert sources <= names and {"kraftlog/spark/cli.py", "kraftlog/spark/__main__.py"} <= names
    info = next(n for n in names if n.endswith(".dist-info/METADATA")).rpartition("/")[0]
    entry_points = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "kraftlog = kraftlog.cli.main:main" in entry_points
    assert "kraftlog-spark = kraftlog.spark.__main__:main" in entry_points
    requires = email.message_from_bytes(zipfile.ZipFile(wheel).read(f"{info}/METADATA")).get_all("Requires-Dist")

    def names(marker: str | None) -> set[str]:
        return {re.split(r"[<>=!~\[; ]", r)[0] for r in requires if (marker in r if marker else "extra ==" not in r)}

    assert names(None) == {"construct", "crc32c", "lz4", "zstandard", "cramjam", "numpy",
                            "prompt_toolkit"}
    assert {"pyspark", "pyarrow"} <= names('extra == "spark"')


def test_the_installed_wheel_dumps_a_fixture_without_the_source_tree(wheel, tmp_path):
    """Installed with ``--no-deps`` into a folder (the dependencies come from this venv), run as its
    console scripts from elsewhere, with this venv's editable install of kraftlog hidden. (The job
    on local[1] too, from its console script and a copy of the fixture.)"""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                    str(target), str(wheel)], check=True, capture_output=True, timeout=120)
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        'import sys\nsys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = f"{target}{os.pathsep}{hide}"
    segment = FIXTURE / "__cluster_metadata-0" / "00000000000000007414.log"
    run = subprocess.run([str(target / "bin" / "kraftlog"), "dump", "--format", "jsonl", str(segment)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    where = subprocess.run([sys.executable, "-c", "import kraftlog; print(kraftlog.__file__)"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=60, check=True).stdout
    assert Path(where.strip()).is_relative_to(target)
    assert run.stdout == kraftlog("dump", "--format", "jsonl", str(segment)).stdout
    job = subprocess.run([str(target / "bin" / "kraftlog-spark"), "--help"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert job.returncode == 0 and "--input PATH [PATH ...]" in job.stdout, job.stderr
    shutil.copytree(FIXTURE, tmp_path / "in")  # nothing of the source tree on the job's way
    job = subprocess.run([str(target / "bin" / "kraftlog-spark"), "--master", "local[1]", "--input", "in",
                          "--output", "out"], cwd=tmp_path, env=env | {"SPARK_LOCAL_IP": "127.0.0.1"},
                         capture_output=True, text=True, timeout=600)
    assert job.returncode == 0, job.stderr[-3000:]
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert manifest["counts"]["records"] == 8433 and manifest["counts"]["partition_history"] == 1253
