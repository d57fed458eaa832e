"""Reading never writes: every command opens its inputs read-only, takes no lock (a live broker's
directory can be read), and leaves the input directory exactly as it was.

An audit hook sees every ``open`` (``open()``, ``io.open``, ``os.open``, pathlib alike) with its OS
flags, and every ``fcntl`` lock call; it also catches writes as root, whom ``chmod a-w`` does not stop.
"""

import io
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from kraftlog.cli.main import main
from kraftlog.files.paths import classify
from kraftlog.files.reader import read_log_file
from kraftlog.files.records import iter_entries
from kraftlog.schema import encode_control, encode_metadata
from kraftlog.state import replay
from kraftlog.wire.batch import CONTROL_BIT, Record, encode_batch

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CHANGES = ("os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.truncate", "os.utime", "os.chmod", "os.chown",
            "os.link", "os.symlink", "shutil.copyfile", "shutil.move")
_LOCKS = ("fcntl.flock", "fcntl.lockf", "msvcrt.locking")
_recording: list[tuple[str, tuple]] | None = None


def _audit(event: str, args: tuple) -> None:
    if _recording is not None and (event == "open" or event in _CHANGES or event in _LOCKS):
        _recording.append((event, args))


sys.addaudithook(_audit)  # hooks cannot be removed; this one records only inside ``_spy``


@contextmanager
def _spy() -> Iterator[list[tuple[str, tuple]]]:
    global _recording
    _recording = events = []
    try:
        yield events
    finally:
        _recording = None


def _inside(path: object, root: Path) -> bool:
    if not isinstance(path, str | bytes | os.PathLike):
        return False  # an open file descriptor, not a path
    p = Path(os.fsdecode(path)).resolve()
    return p == root or root in p.parents


def _violations(events: list[tuple[str, tuple]], root: Path) -> list[str]:
    out = []
    for event, args in events:
        if event in _LOCKS:
            out.append(f"{event}{args}")
        elif event == "open":
            path, _mode, flags = args
            if _inside(path, root) and (flags & _WRITE_FLAGS or os.fsdecode(path).endswith(".lock")):
                out.append(f"open({path!r}, flags={flags:#o})")
        elif args and _inside(args[0], root):
            out.append(f"{event}{args}")
    return out


def _listing(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every file and directory below ``root`` with size, mtime and mode."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def _chmod_tree(root: Path, writable: bool) -> None:
    bits = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    for dirpath, _, filenames in os.walk(root):
        for p in [Path(dirpath)] + [Path(dirpath) / n for n in filenames]:
            mode = p.stat().st_mode
            p.chmod(mode | stat.S_IWUSR if writable else mode & ~bits)


# --- a node's log dir, built from records (no corpus bytes) ---------------------------------------

TOPIC_ID = "3ql6QVjQQWKGtGd-HqfNxA"


def _records(values: list[bytes]) -> list[Record]:
    return [Record(0, 0, None, v, (), 0, 0, i) for i, v in enumerate(values)]


def _segment() -> bytes:
    key, leader = encode_control("LEADER_CHANGE", {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}]})
    control = [Record(0, 0, key, leader, (), 0, 0, 0)]
    metadata = [
        encode_metadata("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 21}),
        encode_metadata("REGISTER_BROKER_RECORD", 3, {"brokerId": 1, "brokerEpoch": 5, "fenced": False,
                                                      "endPoints": [{"name": "PLAINTEXT", "host": "h", "port": 9092}]}),
        encode_metadata("TOPIC_RECORD", 0, {"name": "orders", "topicId": TOPIC_ID}),
        encode_metadata("PARTITION_RECORD", 1, {"partitionId": 0, "topicId": TOPIC_ID, "replicas": [1], "isr": [1],
                                                "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0}),
        encode_metadata("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": "orders",
                                             "name": "retention.ms", "value": "1000"}),
    ]
    ts = 1_700_000_000_000
    return (encode_batch(control, base_offset=0, base_timestamp=ts, partition_leader_epoch=1, attributes=CONTROL_BIT)
            + b"".join(encode_batch(_records([v]), base_offset=1 + i, base_timestamp=ts + i, partition_leader_epoch=1)
                       for i, v in enumerate(metadata)))


def _snapshot(values: list[bytes]) -> bytes:
    header = encode_control("SNAPSHOT_HEADER", {"version": 0, "lastContainedLogTimestamp": 1_700_000_000_002})
    footer = encode_control("SNAPSHOT_FOOTER", {"version": 0})
    out = encode_batch([Record(0, 0, *header, (), 0, 0, 0)], base_offset=0, base_timestamp=0, attributes=CONTROL_BIT)
    out += encode_batch(_records(values), base_offset=1, base_timestamp=0)
    return out + encode_batch([Record(0, 0, *footer, (), 0, 0, 0)], base_offset=1 + len(values), base_timestamp=0,
                              attributes=CONTROL_BIT)


@pytest.fixture
def log_dir(tmp_path: Path) -> Iterator[Path]:
    """A node's log dir, made read-only (for root that stops nothing: the audit hook does the work)."""
    root = tmp_path / "input" / "kafka1"
    meta = root / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    (root / "meta.properties").write_text("version=1\ncluster.id=AbCdEfGhIjKlMnOpQrStUv\nnode.id=1\n")
    (root / ".lock").write_bytes(b"")
    feature = encode_metadata("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 21})
    (root / "bootstrap.checkpoint").write_bytes(_snapshot([feature]))
    (meta / "00000000000000000000.log").write_bytes(_segment())
    (meta / "00000000000000000003-0000000001.checkpoint").write_bytes(_snapshot([feature]))
    (meta / "quorum-state").write_text('{"leaderId":1,"leaderEpoch":1,"votedId":-1,"data_version":1}')
    (meta / "leader-epoch-checkpoint").write_text("0\n1\n1 0\n")
    (meta / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
    _chmod_tree(root.parent, writable=False)
    try:
        yield root
    finally:
        _chmod_tree(root.parent, writable=True)


def _commands(root: Path, out_dir: Path) -> list[list[str]]:
    meta = root / "__cluster_metadata-0"
    seg, snap = meta / "00000000000000000000.log", meta / "00000000000000000003-0000000001.checkpoint"
    return [
        ["dump", str(root)], ["dump", "--format", "jsonl", str(seg)], ["dump", "--stats", str(snap)],
        ["inspect", str(root)], ["inspect", "--format", "json", str(root.parent)],
        ["replay", str(root), "--offset", "5"], ["replay", str(root), "--offset", "5", "--base", "none"],
        ["replay", str(snap), "--format", "tree"], ["metadata", str(root), "--offset", "5"],
        ["diff", str(root), "--from", "1", "--to", "5"], ["history", str(root), "--topic", "orders"],
        ["report", str(root), "-o", str(out_dir / "report.html")],
    ]


def test_every_command_reads_without_writing_locking_or_leaving_anything(log_dir, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    before = _listing(log_dir.parent)
    for argv in _commands(log_dir, out_dir):
        with _spy() as events, redirect_stdout(io.StringIO()) as out, redirect_stderr(io.StringIO()) as err:
            status = main(argv)
        assert status == 0, (argv, err.getvalue())
        assert out.getvalue() or argv[0] == "report", argv
        assert any(e == "open" and _inside(a[0], log_dir) for e, a in events), f"{argv} read nothing?"
        assert _violations(events, log_dir.parent) == [], argv
        assert _listing(log_dir.parent) == before, argv
    assert (out_dir / "report.html").stat().st_size > 0


def test_library_readers_open_read_only(log_dir):
    seg = classify(log_dir / "__cluster_metadata-0" / "00000000000000000000.log")
    with _spy() as events:
        assert len(list(read_log_file(seg.path))) == 6
        assert replay(iter_entries(seg)).image.topics.by_name("orders") is not None
    opens = [a for e, a in events if e == "open"]
    assert opens and all(not flags & _WRITE_FLAGS for _path, _mode, flags in opens)


def test_the_spy_sees_writes_and_locks(tmp_path):
    """The checks above would catch a write-mode open, a lock and a new file."""
    import fcntl

    before = _listing(tmp_path)
    with _spy() as events:
        with open(tmp_path / "x", "wb") as f:
            fcntl.flock(f, fcntl.LOCK_SH)
            fcntl.flock(f, fcntl.LOCK_UN)
        os.close(os.open(tmp_path / "y", os.O_RDONLY | os.O_CREAT))
    found = _violations(events, tmp_path)
    assert len(found) == 4 and _listing(tmp_path) != before
