"""Files an operator cannot read (copied log dirs are usually ``kafka:kafka 0640``): every
subcommand says which file and why in one line, never a traceback; dump and inspect go on with the
rest; exit 1. The Spark job's discovery marks such a file ``unreadable`` (a ``problems`` row).

As root the commands run without the capabilities that bypass file permissions (``setpriv``), so the
file is as unreadable to them as to an operator's account."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO
from kraftlog.cli.main import main

DROP = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
        "--inh-caps=-dac_override,-dac_read_search", "--"]
NO_READ = "cannot read: Permission denied"


def _unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root and setpriv (util-linux) is missing: root would read the file anyway")
    return DROP


def kraftlog(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([*_unprivileged(), sys.executable, "-m", "kraftlog.cli.main", *args],
                          capture_output=True, text=True, env=env, timeout=300)


def _deny(path) -> None:
    """What a copy from a broker looks like to another account: owned by someone else, 0640."""
    if os.geteuid() == 0:
        os.chown(path, 54321, 54321)
        os.chmod(path, 0o640)
    else:
        os.chmod(path, 0o000)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    """A generated log dir whose second segment and meta.properties cannot be read."""
    root = tmp_path_factory.mktemp("unreadable") / "node"
    assert main(["generate", str(root), "--duration", "1h", "--segment-bytes", "64KiB", "--snapshot-interval",
                 "20m", "--seed", "3"]) == 0
    meta = root / "__cluster_metadata-0"
    segments = sorted(meta.glob("*.log"))
    denied = segments[1]
    full = kraftlog("dump", "--format", "jsonl", str(root))
    assert full.returncode == 0
    _deny(denied)
    probe = subprocess.run([*_unprivileged(), sys.executable, "-c", f"open({str(denied)!r}, 'rb')"],
                           capture_output=True, text=True)
    if probe.returncode == 0:
        pytest.skip("the file stays readable here (a file system without permissions?)")
    return root, denied, segments, full.stdout


def _one_line(result: subprocess.CompletedProcess, denied) -> None:
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if str(denied) in line]
    assert lines == [f"kraftlog: {denied}: {NO_READ}"] or lines == [f"kraftlog: problem: {denied}: {NO_READ}"], \
        result.stderr


def _records_by_file(jsonl: str) -> dict[str, int]:
    counts, file = {}, None
    for row in map(json.loads, jsonl.splitlines()):
        if row["kind"] == "file":
            file = row["path"]
            counts[file] = 0
        elif row["kind"] == "record":
            counts[file] += 1
    return counts


def test_dump_goes_on_with_the_other_files(logdir):
    root, denied, _, full = logdir
    result = kraftlog("dump", "--format", "jsonl", str(root))
    assert result.returncode == 1
    _one_line(result, denied)
    expected = {f: n for f, n in _records_by_file(full).items() if f != str(denied)}
    assert _records_by_file(result.stdout) == expected


def test_dump_of_the_file_alone(logdir):
    root, denied, _, _ = logdir
    result = kraftlog("dump", str(denied))
    assert (result.returncode, result.stdout) == (1, "")
    _one_line(result, denied)


def test_inspect_reports_it_and_the_rest(logdir):
    root, denied, segments, _ = logdir
    result = kraftlog("inspect", "--format", "json", str(root))
    assert result.returncode == 1
    _one_line(result, denied)
    [node] = json.loads(result.stdout)["nodes"]
    by_name = {s["file"]: s for s in node["segments"]}
    assert by_name[denied.name]["unreadable"] == "Permission denied"
    assert all(by_name[s.name]["batches"] > 0 for s in segments if s != denied)


@pytest.mark.parametrize("command", [
    ["replay", "--offset", "1500", "--base", "none"],
    ["metadata", "--offset", "1500", "--base", "none"],
    ["diff", "--from", "100", "--to", "1500"],
    ["history", "--topic", "metrics"],
])
def test_state_commands_name_the_file_and_exit_1(logdir, command):
    root, denied, _, _ = logdir
    result = kraftlog(command[0], str(root), *command[1:])
    assert result.returncode == 1, result.stderr
    _one_line(result, denied)


def test_report_names_the_file_and_exits_1(logdir, tmp_path):
    root, denied, _, _ = logdir
    result = kraftlog("report", str(root), "-o", str(tmp_path / "r.html"))
    assert result.returncode == 1
    _one_line(result, denied)
    assert (tmp_path / "r.html").stat().st_size > 0


def test_an_unreadable_meta_properties_is_one_line(logdir, tmp_path):
    root, _, _, _ = logdir
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("*.log"))
    _deny(copy / "meta.properties")
    result = kraftlog("inspect", str(copy))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"kraftlog: {copy / 'meta.properties'}: {NO_READ}" in result.stderr.splitlines()


def test_a_directory_where_a_segment_should_be(logdir, tmp_path):
    root, _, _, _ = logdir
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("*.log"))
    bogus = copy / "__cluster_metadata-0" / "00000000000000099999.log"
    bogus.mkdir()
    result = kraftlog("dump", str(copy))
    assert result.returncode == 1 and f"kraftlog: {bogus}: cannot read: Is a directory" in result.stderr
    result = kraftlog("inspect", str(copy))
    assert result.returncode == 1
    assert f"kraftlog: {bogus}: cannot read: a directory where a segment should be" in result.stderr


def test_spark_discovery_marks_it_unreadable(logdir):
    """Discovery on the driver (no Spark session needed): the file is a ``problems`` row."""
    root, denied, _, _ = logdir
    code = ("import json, sys; from kraftlog.spark.discover import discover; from kraftlog.spark.tables import "
            "problem_rows; inv = discover([sys.argv[1]]); "
            "print(json.dumps([[f.file, f.kind, f.skip_reason] for f in inv.files if f.kind == 'unreadable'])); "
            "print(json.dumps([r for r in problem_rows(inv, {}, []) if r[4] == 'unreadable']))")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([*_unprivileged(), sys.executable, "-c", code, str(root)], capture_output=True,
                            text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    files, rows = map(json.loads, result.stdout.splitlines())
    assert files == [[str(denied), "unreadable", "Permission denied"]]
    assert [(r[3], r[4], r[8]) for r in rows] == [(str(denied), "unreadable", "Permission denied")]


def test_a_metadata_folder_that_cannot_be_listed(logdir, tmp_path):
    """Not an empty log with exit 0: every command names the folder and exits 1."""
    root, _, _, _ = logdir
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    folder = copy / "__cluster_metadata-0"
    if os.geteuid() == 0:
        os.chown(folder, 54321, 54321)
    os.chmod(folder, 0o750)
    try:
        line = f"{folder}: cannot read: Permission denied"
        for command in (["dump", str(copy)], ["replay", str(copy), "--offset", "5"],
                        ["report", str(copy), "-o", str(tmp_path / "r.html")], ["inspect", str(copy)]):
            result = kraftlog(*command)
            assert result.returncode == 1 and "Traceback" not in result.stderr, (command, result.stderr)
            named = [x for x in result.stderr.splitlines() if str(folder) in x]
            # the folder's one line; a command refusing a point then says what that leaves on disk
            assert named[0] in (f"kraftlog: {line}", f"kraftlog: problem: {line}"), (command, result.stderr)
            assert all("cannot read" not in x for x in named[1:]), (command, result.stderr)
    finally:
        os.chmod(folder, 0o755)


def test_an_unreadable_snapshot_is_passed_over_for_an_earlier_base(logdir, tmp_path):
    """The state is the true one (as replayed from the log alone), and the snapshot is named."""
    root, _, _, _ = logdir
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    snapshots = sorted((copy / "__cluster_metadata-0").glob("*.checkpoint"))
    assert len(snapshots) >= 2
    point = str(int(snapshots[1].name[:20]) + 10)
    truth = kraftlog("replay", str(copy), "--offset", point, "--base", "none")  # the copy is ours: readable
    assert truth.returncode == 0
    _deny(snapshots[1])
    result = kraftlog("replay", str(copy), "--offset", point)
    assert result.returncode == 1 and result.stdout == truth.stdout
    _one_line(result, snapshots[1])
    assert f"from snapshot {snapshots[0].name}" in result.stderr
