"""The storage layer: what a path or URI means, listings and reads that stay bounded on odd files,
and discovery on S3 (a local moto server) finding what it finds on disk."""

import dataclasses
import os
import threading
from collections import deque
from pathlib import Path

import pytest

from kraftlog.files import storage
from kraftlog.files.logdir import find_nodes, scan_file
from kraftlog.files.paths import MAX_DEPTH, TooDeep
from kraftlog.files.storage import Remote, Source, StorageError, resolve
from kraftlog.report import collect
from kraftlog.spark.discover import InputError, discover


@pytest.mark.parametrize("given", ["out#1", "a?b", "s3:/bucket/x", "dir/s3://x", "C:stuff", "%41"])
def test_a_plain_path_is_a_local_path_never_a_url(given):
    assert resolve(given) == Path(given)


@pytest.mark.parametrize("given,path", [("file:/a%20b/c", Path("/a b/c")), ("file:///x/y", Path("/x/y"))])
def test_a_file_uri_is_a_local_path(given, path):
    assert resolve(given) == path


@pytest.mark.parametrize("given", ["s3://bucket/fleet", "s3a://bucket/fleet/", "gs://b/x", "abfss://c@a.dfs.core.windows.net/x",
                                   "hdfs://nn:8020/logs"])
def test_a_uri_is_remote_and_keeps_its_name(given):
    r = resolve(given)
    assert isinstance(r, Remote) and str(r) == given.rstrip("/")
    child = r / "node-1" / "meta.properties"
    assert str(child) == given.rstrip("/") + "/node-1/meta.properties"
    assert child.name == "meta.properties" and child.parent.name == "node-1"


def test_an_unknown_scheme_is_refused_with_the_way_to_name_a_local_folder():
    with pytest.raises(StorageError, match=r"ftp://host/x: kraftlog reads local paths and s3://.*not ftp:// "
                                           r"\(a local folder named so is ./ftp://host/x\)"):
        resolve("ftp://host/x")


def test_a_fifo_named_like_a_segment_is_skipped_not_read(tmp_path):
    md = tmp_path / "n" / "__cluster_metadata-0"
    md.mkdir(parents=True)
    (tmp_path / "n" / "meta.properties").write_text("version=1\ncluster.id=c\nnode.id=1\n")
    os.mkfifo(md / "00000000000000000000.log")
    done = []
    t = threading.Thread(target=lambda: done.append(find_nodes(tmp_path)), daemon=True)
    t.start()
    t.join(30)
    assert done, "discovery hung on a FIFO"
    node, = done[0]
    assert node.segments == [] and node.skipped == [(md / "00000000000000000000.log", "not a regular file")]
    assert node.unreadable == [(md / "00000000000000000000.log", "a special file where a segment should be")]
    with pytest.raises(StorageError, match="not a regular file"):
        Source(md / "00000000000000000000.log").read_at(0, 10)  # opened without blocking, then refused


def test_folders_nested_past_the_limit_are_said_not_searched_and_refuse_a_job_input(tmp_path):
    deep = tmp_path
    for _ in range(300):
        deep = deep / "d"
        deep.mkdir()
    unsearched: list[OSError] = []
    assert find_nodes(tmp_path, unsearched) == []
    assert len(unsearched) == 1 and isinstance(unsearched[0], TooDeep)
    assert unsearched[0].filename == str(tmp_path / "/".join(["d"] * (MAX_DEPTH + 1)))
    with pytest.raises(InputError, match=f"--input {tmp_path}: {tmp_path}/d/.*/d: nested deeper than {MAX_DEPTH} "
                                         "folders below the input; not read"):
        discover([str(tmp_path)])


def test_an_oversized_quorum_state_is_a_problem_not_read_whole(tmp_path):
    md = tmp_path / "n" / "__cluster_metadata-0"
    md.mkdir(parents=True)
    (tmp_path / "n" / "meta.properties").write_text("version=1\ncluster.id=c\nnode.id=1\n")
    with open(md / "quorum-state", "wb") as f:
        f.truncate(storage.SMALL_FILE_CAP + 1)  # sparse: no disk spent
    node, = find_nodes(tmp_path)
    assert node.quorum_state is None and node.problems == []
    assert node.unreadable == [(md / "quorum-state", f"{storage.SMALL_FILE_CAP + 1} bytes, more than the "
                                                     f"{storage.SMALL_FILE_CAP} such a file can hold")]


def test_a_source_reads_short_after_the_file_shrinks_and_names_a_vanished_file(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(bytes(range(256)) * 16)
    with Source(p) as f:
        assert f.size == 4096 and f.stat.inode == os.stat(p).st_ino
        os.truncate(p, 100)
        assert f.read_at(0, 4096) == bytes(range(100))  # what is left, never a fault
        assert f.read_at(4000, 96) == b""
    p.unlink()
    with pytest.raises(storage.Changed, match=f"{p}: no such file"):
        Source(p).read_at(0, 10)


def _shape(nodes, root: str) -> list:
    """What find_nodes found, with names relative to the input (local and remote alike)."""
    def rel(p) -> str:
        return str(p)[len(root):]

    return [(rel(n.log_dir), rel(n.metadata_dir), n.cluster_id, n.node_id, n.meta.properties, n.quorum_state,
             n.leader_epochs, n.partition_metadata, n.problems,
             [(rel(f.path), f.kind, f.offset, f.epoch) for f in [*([n.bootstrap] if n.bootstrap else []),
                                                                  *n.segments, *n.snapshots]],
             [(rel(p), why) for p, why in n.skipped]) for n in nodes]


def test_discovery_on_s3_finds_what_it_finds_on_disk(s3, fixtures):
    local = fixtures / "three-nodes"
    uri = s3.upload(local, s3.bucket("discovery") + "/archive/three-nodes")
    nodes = find_nodes(resolve(uri + "/"))
    assert _shape(nodes, uri) == _shape(find_nodes(local), str(local))
    assert len(nodes) == 3 and {n.node_id for n in nodes} == {1, 2, 3}
    here, there = discover([str(local)]), discover(["s3a" + uri[2:]])
    assert [f.file.replace(str(local), "") for f in here.files] == [f.file.replace("s3a" + uri[2:], "")
                                                                    for f in there.files]
    assert [f.bytes for f in here.files] == [f.bytes for f in there.files] and all(f.bytes for f in here.readable)
    assert [s.size for s in here.seen.values()] == [s.size for s in there.seen.values()]
    assert all(s.inode for s in here.seen.values()) and not any(s.inode for s in there.seen.values())
    assert all(s.mtime_ns for s in there.seen.values())
    with pytest.raises(InputError, match=f"--input {uri}/nothing: no such directory"):
        discover([f"{uri}/nothing"])


@pytest.mark.parametrize("uri", ["hdfs://127.0.0.1:1/logs", "abfss://c@kraftlog-none.dfs.core.windows.net/logs"])
def test_a_store_that_cannot_be_reached_is_one_line_not_a_traceback(uri):
    with pytest.raises(InputError) as e:
        discover([uri])
    assert str(e.value).startswith(f"--input {uri}: {uri}: ") and "\n" not in str(e.value)


def _plain(value):
    """A report's model as plain values (its capped lists compare by what they hold)."""
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | deque):
        return [_plain(v) for v in value]
    if hasattr(value, "__dict__"):
        return {type(value).__name__: {n: _plain(v) for n, v in vars(value).items()}}
    return value


def test_a_node_in_s3_scans_and_reports_as_on_disk(s3, fixtures):
    """The files layer's reader takes a Remote: a node found in a store scans (``inspect``'s numbers)
    and collects (``kraftlog report``'s timeline, as the job's ``--report`` makes it) as on disk."""
    local = fixtures / "three-nodes"
    uri = s3.upload(local, s3.bucket("report") + "/three-nodes")
    here = {n.node_id: n for n in find_nodes(local)}
    there = {n.node_id: n for n in find_nodes(resolve(uri))}
    for node_id, node in here.items():
        files = [*node.segments, *node.snapshots]
        remote_files = [*there[node_id].segments, *there[node_id].snapshots]
        scans = [dataclasses.replace(scan_file(f), file=None) for f in files]
        assert scans == [dataclasses.replace(scan_file(f), file=None) for f in remote_files]
        assert sum(s.records for s in scans) > 1000 and all(s.unreadable is None for s in scans)
        a, b = collect(node), collect(there[node_id])
        assert b.source.startswith(uri) and a.source.startswith(str(local))
        assert _plain(dataclasses.replace(a, source="")) == _plain(dataclasses.replace(b, source=""))
