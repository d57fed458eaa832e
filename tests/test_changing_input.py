"""Inputs that are not what discovery saw: files truncated, shrunk or deleted before or while they
are read, FIFOs named like segments, folders nested past any log dir's depth. Each is one line on
stderr and exit 1, never a traceback, a hang or bytes that no longer exist."""

import io
import os
import subprocess
import sys
import threading
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from kraftlog.cli import dump
from kraftlog.cli.main import main
from kraftlog.files import reader, walk
from kraftlog.files.paths import MAX_DEPTH, TooDeep, log_files_under, walk_tree
from kraftlog.files.reader import FileChangedError, NotRegularFileError, read_log_file
from kraftlog.schema import encode_metadata
from kraftlog.wire.batch import Record, encode_batch

SEGMENT = "00000000000000000000.log"


def _segment(path: Path, batches: int = 400) -> bytes:
    value = encode_metadata("TOPIC_RECORD", 0, {"name": "t" * 200, "topicId": "3ql6QVjQQWKGtGd-HqfNxA"})
    data = b"".join(encode_batch([Record(0, 0, None, value)], base_offset=i, base_timestamp=1_700_000_000_000,
                                 partition_leader_epoch=1) for i in range(batches))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def small_window(monkeypatch):
    """Read windows of 4 KiB, so a test file of ~100 KB is read in many steps."""
    monkeypatch.setattr(reader, "_WINDOW", 4096)


def test_file_truncated_while_read_is_one_error_naming_both_sizes(tmp_path, small_window):
    path = tmp_path / "__cluster_metadata-0" / SEGMENT
    data = _segment(path)
    items = read_log_file(path)
    first = next(items)
    assert first.base_offset == 0
    os.truncate(path, len(data) // 3)
    with pytest.raises(FileChangedError) as e:
        list(items)
    assert str(e.value) == f"file changed while read: {path} was {len(data)} bytes, now {len(data) // 3}"


@pytest.mark.parametrize("command", [["dump"], ["dump", "--format", "jsonl"], ["replay", "--offset", "399"],
                                     ["inspect"]])
def test_cli_file_shrunk_ahead_of_the_reader(tmp_path, small_window, monkeypatch, command):
    """The file is cut to a tenth once it is opened (the old reader raised struct.error, or resynced
    byte by byte over bytes that no longer exist)."""
    path = tmp_path / "node" / "__cluster_metadata-0" / SEGMENT
    data = _segment(path)
    (tmp_path / "node" / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    opened, walked = reader._Window.__init__, walk._Local.__init__

    def shrink_on_open(self, f, size):
        opened(self, f, size)
        os.truncate(path, len(data) // 10)

    def shrink_on_walk(self, f):  # replay reads a clean local segment by the columnar walk
        walked(self, f)
        os.truncate(path, len(data) // 10)

    monkeypatch.setattr(reader._Window, "__init__", shrink_on_open)
    monkeypatch.setattr(walk._Local, "__init__", shrink_on_walk)
    target = str(path) if command[0] == "dump" else str(tmp_path / "node")
    status, _, err = _cli(*command, target)
    assert status == 1
    assert err.strip().splitlines()[-1] == \
        f"kraftlog: file changed while read: {path} was {len(data)} bytes, now {len(data) // 10}"
    assert "Traceback" not in err


def test_cli_file_deleted_after_discovery(tmp_path, monkeypatch):
    path = tmp_path / "__cluster_metadata-0" / SEGMENT
    _segment(path, 3)
    found = reader.open_regular

    def gone(p):
        os.unlink(path)
        return found(p)

    monkeypatch.setattr(reader, "open_regular", gone)
    status, _, err = _cli("dump", str(tmp_path))
    assert (status, err) == (1, f"kraftlog: file changed while read: {path} vanished\n")


def test_file_shrunk_between_the_dump_header_and_the_read(tmp_path, monkeypatch):
    """The dump states a file's size, then reads it: a file cut in between is no clean dump."""
    path = tmp_path / "__cluster_metadata-0" / SEGMENT
    data = _segment(path, 10)
    read = reader.read_log_file

    def cut_first(p, *a, **kw):
        os.truncate(path, len(data) // 2)  # after the 5th of 10 batches: what is left reads clean
        return read(p, *a, **kw)

    monkeypatch.setattr(dump, "read_log_file", cut_first)
    status, _, err = _cli("dump", str(path))
    assert (status, err) == (1, f"kraftlog: file changed while read: {path} was {len(data)} bytes, now {len(data) // 2}\n")


def test_file_truncated_by_another_thread_mid_read(tmp_path, small_window):
    """A broker's retention cutting the file while a reader walks it: the reader stops at the cut,
    with every batch it yielded still whole."""
    path = tmp_path / SEGMENT
    data = _segment(path)
    cut = threading.Event()
    seen = []
    with pytest.raises(FileChangedError):
        for item in read_log_file(path):
            seen.append(item)
            if len(seen) == 5:
                t = threading.Thread(target=lambda: (os.truncate(path, 100), cut.set()))
                t.start()
                t.join()
    assert cut.is_set() and 5 <= len(seen) < 400
    assert all(b.crc_valid and b.error is None for b in seen)
    assert sum(b.size for b in seen) < len(data)


def _cli_process(*argv: str) -> tuple[int, str, str]:
    """The CLI in its own process, killed after a minute: a FIFO read would block forever."""
    done = subprocess.run([sys.executable, "-m", "kraftlog.cli.main", *argv], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    return done.returncode, done.stdout, done.stderr


def test_fifo_named_like_a_segment_is_skipped_not_read(tmp_path):
    meta = tmp_path / "__cluster_metadata-0"
    _segment(meta / SEGMENT, 2)
    fifo = meta / "00000000000000000002.log"
    os.mkfifo(fifo)
    os.mkfifo(meta / "some-other-pipe")  # not named like a log file: not reported
    said = f"kraftlog: {fifo}: cannot read: not a regular file (a FIFO, device or socket); skipped\n"
    status, out, err = _cli_process("dump", str(tmp_path))
    assert status == 1  # the rest is dumped, and what was left out is said
    assert "baseOffset: 1 " in out
    assert err == said
    assert _cli_process("dump", str(fifo)) == (1, f"Dumping {fifo}\n" if False else "", said)
    with pytest.raises(NotRegularFileError):
        list(read_log_file(fifo))
    status, _, err = _cli_process("inspect", str(tmp_path))
    assert "Traceback" not in err


def _deep(root: Path, depth: int) -> Path:
    """``depth`` nested folders below ``root`` (made by relative steps: the full path is too long
    for one call); returns the innermost."""
    here = os.getcwd()
    os.chdir(root)
    try:
        for _ in range(depth):
            os.mkdir("d")
            os.chdir("d")
        return Path(os.getcwd())
    finally:
        os.chdir(here)


def _undeep(root: Path, depth: int) -> None:
    """Remove what ``_deep`` made, from the inside out by relative steps: pytest's own clean-up of old
    temporary folders recurses and would fail on it in a later session."""
    here = os.getcwd()
    os.chdir(root)
    try:
        for _ in range(depth):
            os.chdir("d")
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(here)


@pytest.fixture
def deep_tree(tmp_path):
    _deep(tmp_path, 1500)
    yield tmp_path
    _undeep(tmp_path, 1500)


def test_deep_trees_are_walked_iteratively_up_to_a_limit(deep_tree):
    tmp_path = deep_tree
    _segment(tmp_path / "__cluster_metadata-0" / SEGMENT, 1)
    errors: list[OSError] = []
    found = log_files_under(tmp_path, unreadable=errors)
    assert [f.path.name for f in found] == [SEGMENT]
    assert len(errors) == 1 and isinstance(errors[0], TooDeep)
    assert errors[0].filename.count("/d") == MAX_DEPTH + 1
    dirs = [d for d, _, _ in walk_tree(tmp_path)]
    assert len(dirs) == 2 + MAX_DEPTH  # the root, the metadata folder, MAX_DEPTH of the chain
    for command in (["dump"], ["inspect"], ["replay", "--offset", "0"]):
        status, out, err = _cli(*command, str(tmp_path))
        assert "RecursionError" not in err and "Traceback" not in err
    status, out, err = _cli("dump", str(tmp_path))
    assert status == 1 and "baseOffset: 0 " in out  # what is there is read, what is not is said
    assert f"cannot read: nested deeper than {MAX_DEPTH} folders below the input; not read" in err


def test_walk_tree_is_os_walk(tmp_path):
    """Top down, in the same order, with the same names, and pruning works, as os.walk."""
    for rel in ["a/b/c", "a/x", "b", "c/d/e/f"]:
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    mine = [(d, sorted(ds), sorted(fs)) for d, ds, fs in walk_tree(tmp_path)]
    theirs = [(d, sorted(ds), sorted(fs)) for d, ds, fs in os.walk(tmp_path)]
    assert sorted(mine) == sorted(theirs)
    pruned = []
    for d, ds, _ in walk_tree(tmp_path):
        pruned.append(d)
        ds[:] = [x for x in ds if x != "a"]
    assert not any("/a" in p for p in pruned)
