"""The progress bar: bytes read as the OS sees them, drawn only on a terminal, out of the way of output."""

import argparse
import io
import os
import subprocess
import sys
import time

import pytest
from test_report_cluster import write_cluster

from kraftlog.cli import progress


@pytest.fixture
def logs(tmp_path):
    write_cluster(tmp_path / "a")
    write_cluster(tmp_path / "b")
    return tmp_path


def test_sizes_cover_segments_and_checkpoints_only(logs):
    (logs / "a" / "__cluster_metadata-0" / "quorum-state").write_text("{}")
    sizes = progress.log_file_sizes([str(logs)])
    assert len(sizes) == 2 and all(p.endswith(".log") for p in sizes)
    assert sum(sizes.values()) == sum(os.path.getsize(p) for p in sizes)


def test_bytes_read_follow_files_opened_and_positions(logs):
    a, b = sorted(progress.log_file_sizes([str(logs)]))
    bar = progress.Bar({a: os.path.getsize(a), b: os.path.getsize(b)}, "test", io.StringIO(), delay=60)
    with bar:
        assert bar.read() == 0
        with open(a, "rb") as f:
            f.read()
        assert bar.read() == os.path.getsize(a)  # opened and closed: read whole
        with open(b, "rb", buffering=0) as f:
            f.read(1000)
            if os.path.isdir("/proc/self/fdinfo"):
                assert bar.read() == os.path.getsize(a) + 1000


def wait_for(predicate, seconds: float = 60) -> None:
    """Until ``predicate()`` holds; the deadline only ends a run where it never does (the bar thread may
    wait long for a core on a loaded machine)."""
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_bar_draws_and_steps_aside_for_output(logs):
    out = io.StringIO()

    def draws() -> int:
        return out.getvalue().count("MiB/s")

    with progress.Bar(progress.log_file_sizes([str(logs)]), "kraftlog test", out, delay=0):
        wait_for(lambda: draws() > 0)
        assert out.getvalue().startswith("\r\x1b[Kkraftlog test [")
        sys.stderr.write("partial")  # the bar is cleared first, and stays away from a half-written line
        assert out.getvalue().endswith("\r\x1b[K")
        drawn = draws()
        time.sleep(3 * progress.INTERVAL)
        assert draws() == drawn
        sys.stderr.write(" line\n")
        wait_for(lambda: draws() > drawn)
        assert draws() > drawn
    assert out.getvalue().endswith("\r\x1b[K")  # cleared at the end
    assert not isinstance(sys.stderr, progress._Guarded)


def test_widths_stay_fixed_as_numbers_grow():
    bar = progress.Bar({"x": 50 * 2**20}, "kraftlog report", io.StringIO())
    assert len({len(bar.line(done, 100)) for done in (0, 2**20, 9 * 2**20, 50 * 2**20)}) == 1


def test_silent_when_not_on_a_terminal(logs, capfd):
    calls = []

    @progress.shown("path")
    def run(args) -> int:
        calls.append(sys.stderr)
        return 0

    assert run(argparse.Namespace(path=str(logs), command="x")) == 0
    assert not isinstance(calls[0], progress._Guarded)
    done = subprocess.run([sys.executable, "-m", "kraftlog.cli.main", "report", str(logs / "a"), "-o",
                           str(logs / "r.html")], capture_output=True, text=True, check=True)
    assert "\x1b[K" not in done.stderr and "MiB/s" not in done.stderr
