"""What ``pip install kraftlog`` gives without its extras: the CLI runs with pyspark, pyarrow and the
job's other dependencies unimportable, CRC-32C works with either package, and a missing one is
named in one line. Each run is a subprocess whose ``sys.meta_path`` starts with a blocker."""

import os
import subprocess
import sys

import pytest

from conftest import REPO

FIXTURE = REPO / "fixtures" / "single-node"
#: What only the ``spark`` extra (or the tests) install: the CLI must not need any of it.
SPARK_ONLY = ("pyspark", "pyarrow", "pandas", "uuid6", "polars", "duckdb", "py4j")

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
