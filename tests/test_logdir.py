"""Log-directory discovery, coverage, rebuildability and divergence between node copies."""

import json
import struct

import pytest

from kraftlog.cli.inspect import inspect
from kraftlog.files.logdir import find_nodes, read_leader_epoch_checkpoint, read_meta_properties
from kraftlog.files.reader import Limits
from kraftlog.wire.batch import Record, encode_batch

NOOP = b"\x01\x14\x00\x00"


def _batches(first: int, last: int, epoch: int = 1, per_batch: int = 1) -> bytes:
    out = []
    for base in range(first, last + 1, per_batch):
        n = min(per_batch, last + 1 - base)
        recs = [Record(0, 0, None, NOOP, (), 0, 0, i) for i in range(n)]
        out.append(encode_batch(recs, base_offset=base, base_timestamp=1_700_000_000_000 + base,
                                partition_leader_epoch=epoch))
    return b"".join(out)


def _node(root, name, node_id, segments, snapshots=(), cluster="c1"):
    log_dir = root / name
    md = log_dir / "__cluster_metadata-0"
    md.mkdir(parents=True)
    (log_dir / "meta.properties").write_text(
        f"#comment\nversion=1\ncluster.id={cluster}\nnode.id={node_id}\ndirectory.id=dirid\n")
    (md / "quorum-state").write_text(json.dumps({"leaderId": 1, "leaderEpoch": 1, "data_version": 0}))
    (md / "leader-epoch-checkpoint").write_text("0\n1\n1 0\n")
    (md / "00000000000000000000.index").write_bytes(b"")
    (md / "00000000000000000000.snapshot").write_bytes(b"")
    (md / "00000000000000000005-0000000001.checkpoint.deleted").write_bytes(b"")
    for base, blob in segments:
        (md / f"{base:020d}.log").write_bytes(blob)
    for end, epoch, blob in snapshots:
        (md / f"{end:020d}-{epoch:010d}.checkpoint").write_bytes(blob)
    return log_dir


def test_meta_properties_and_epoch_checkpoint(tmp_path):
    d = _node(tmp_path, "n1", 3, [(0, _batches(0, 9))])
    meta = read_meta_properties(d / "meta.properties")
    assert (meta.version, meta.cluster_id, meta.node_id, meta.directory_id) == (1, "c1", 3, "dirid")
    assert read_leader_epoch_checkpoint(d / "__cluster_metadata-0" / "leader-epoch-checkpoint") == [(1, 0)]


@pytest.mark.parametrize("start", ["root", "logdir", "metadata"])
def test_accepts_every_kind_of_path(tmp_path, start):
    d = _node(tmp_path, "n1", 1, [(0, _batches(0, 9))])
    path = {"root": tmp_path, "logdir": d, "metadata": d / "__cluster_metadata-0"}[start]
    [node] = find_nodes(path)
    assert node.node_id == 1 and [s.offset for s in node.segments] == [0]
    assert {p.name for p, _ in node.skipped} == {
        "00000000000000000000.index", "00000000000000000000.snapshot",
        "00000000000000000005-0000000001.checkpoint.deleted"}


def test_clean_log_from_zero_is_rebuildable(tmp_path):
    _node(tmp_path, "n1", 1, [(0, _batches(0, 9)), (10, _batches(10, 19))])
    [r] = inspect(str(tmp_path), Limits())["nodes"]
    assert r["coverage"] == {"logStartOffset": 0, "lastOffset": 19, "gaps": [], "overlaps": []}
    assert r["rebuildable"] and r["rebuildFrom"] == "offset 0" and r["clean"]


def test_gap_without_snapshot_is_not_rebuildable(tmp_path):
    _node(tmp_path, "n1", 1, [(0, _batches(0, 9)), (15, _batches(15, 19))])
    [r] = inspect(str(tmp_path), Limits())["nodes"]
    assert r["coverage"]["gaps"] == [[10, 14]]
    assert not r["rebuildable"]


def test_snapshot_after_the_gap_makes_it_rebuildable(tmp_path):
    snap = _batches(0, 2, epoch=1)
    _node(tmp_path, "n1", 1, [(0, _batches(0, 9)), (15, _batches(15, 19))], [(16, 1, snap)])
    [r] = inspect(str(tmp_path), Limits())["nodes"]
    assert r["rebuildable"] and r["rebuildFrom"] == "00000000000000000016-0000000001.checkpoint"


def test_log_starting_late_needs_a_snapshot(tmp_path):
    _node(tmp_path, "n1", 1, [(10, _batches(10, 19))])
    [r] = inspect(str(tmp_path), Limits())["nodes"]
    assert not r["rebuildable"] and "starts at 10" in r["rebuildReason"]


def test_overlapping_segments_are_reported(tmp_path):
    _node(tmp_path, "n1", 1, [(0, _batches(0, 9)), (8, _batches(8, 12))])
    [r] = inspect(str(tmp_path), Limits())["nodes"]
    assert r["coverage"]["overlaps"] == [[8, 9]]


def test_corrupt_segment_is_not_clean(tmp_path):
    blob = bytearray(_batches(0, 9))
    struct.pack_into(">i", blob, 8, 1 << 30)
    _node(tmp_path, "n1", 1, [(0, bytes(blob))])
    [r] = inspect(str(tmp_path), Limits())["nodes"]
    assert not r["clean"] and r["segments"][0]["skippedBytes"] > 0


def test_diverging_copies_report_first_differing_offset(tmp_path):
    common = _batches(0, 19, epoch=1)
    _node(tmp_path, "a", 1, [(0, common + _batches(20, 29, epoch=2))])
    _node(tmp_path, "b", 2, [(0, common + _batches(20, 24, epoch=3))])
    _node(tmp_path, "c", 3, [(0, common + _batches(20, 25, epoch=2))])
    report = inspect(str(tmp_path), Limits())
    [cluster] = report["clusters"]
    assert cluster["newest"] == 2  # Raft trusts the higher last epoch (3) over the longer log (epoch 2)
    div = {d["node"]: d for d in cluster["divergence"]}
    assert div["node 1 [a]"]["offset"] == 20 and "leader epoch 3 vs 2" in div["node 1 [a]"]["detail"]
    assert div["node 3 [c]"]["offset"] == 20 and "leader epoch 3 vs 2" in div["node 3 [c]"]["detail"]


def test_real_three_node_copies_agree(corpus):
    report = inspect(str(corpus / "real/greenlemonT__kafka-temp/data"), Limits())
    assert all(r["clean"] and r["rebuildable"] for r in report["nodes"])
    [cluster] = report["clusters"]
    div = {d["node"]: d["offset"] for d in cluster["divergence"]}
    assert div["node 2 [kafka2]"] is None and div["node 3 [kafka3]"] is None
    # the "kafka" dir is an earlier formatting of node 1 with the same cluster id: a different log
    assert div["node 1 [kafka]"] == 0
    assert [d["sameLog"] for d in cluster["divergence"] if d["node"] == "node 1 [kafka]"] == [False]
