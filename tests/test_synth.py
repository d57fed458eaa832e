"""The synthetic cluster generator writes what KRaft writes: the batch invariants of reference
§1.5, Kafka's file names and layout (§5), snapshot content (§6.3), epochs (§1.7), the record
versions each metadata.version writes (§8); the same seed gives the same bytes; the committed
fixtures are what ``scripts/make_fixtures.py`` writes."""

import argparse
import importlib.util
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from kraftlog.cli.generate import duration_ms
from kraftlog.cli.main import main
from kraftlog.files.coverage import compare_copies
from kraftlog.files.logdir import find_nodes
from kraftlog.files.paths import classify
from kraftlog.files.reader import Region, read_log_file
from kraftlog.schema import decode_control, decode_metadata
from kraftlog.synth import TRUTH_FILE, ClusterSpec, generate
from kraftlog.synth.versions import parse_path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
START_MS = 1_735_689_600_000


def small_specs(seed: str = "t") -> list[ClusterSpec]:
    """A fleet through every metadata.version from 3.3-IV0 to 4.1 (Fence/Unfence, NoOps, ZK
    state, SCRAM, transactions, tokens, controller registrations, JBOD, the 4.0 versions), with
    three node copies of which one diverges, and a kraft.version 1 cluster of dedicated controllers."""
    base = ClusterSpec(name="", seed=seed, metadata_versions=(), start_ms=START_MS, duration_ms=30 * 60_000,
                       brokers=4, topics=3, partitions=3, events_per_hour=150, max_records_per_batch=6,
                       segment_bytes=48 << 10, snapshot_bytes=40 << 10, snapshot_interval_ms=10 * 60_000)
    return [
        replace(base, name="early", seed=f"{seed}/0", duration_ms=15 * 60_000,
                metadata_versions=tuple(parse_path("3.3-IV0..3.3-IV2"))),
        replace(base, name="upgrades", seed=f"{seed}/1", controllers=3, nodes=3, diverge=True,
                metadata_versions=tuple(parse_path("3.3..4.1"))),
        replace(base, name="dynamic", seed=f"{seed}/2", controllers=3, combined=False, kraft_version=1, nodes=4,
                metadata_versions=(21,)),
    ]


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "fleet"
    generate(out, small_specs())
    return out


def cluster_dirs(root: Path) -> list[Path]:
    """Every folder holding a ground truth below ``root``."""
    return sorted(p.parent for p in root.rglob(TRUTH_FILE))


def all_clusters(generated: Path) -> list[Path]:
    return cluster_dirs(generated) + (cluster_dirs(FIXTURES) if FIXTURES.is_dir() else [])


def truth_of(cluster: Path) -> dict:
    return json.loads((cluster / TRUTH_FILE).read_text())


def batches(path: Path) -> list:
    items = list(read_log_file(path))
    assert not [i for i in items if isinstance(i, Region)], f"{path}: unreadable bytes"
    return items


def log_files(cluster: Path) -> list[Path]:
    return sorted(p for p in cluster.rglob("*") if p.suffix in (".log", ".checkpoint"))


# --- determinism ---------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_same_seed_writes_the_same_bytes(tmp_path, generated):
    generate(tmp_path / "again", small_specs())
    assert _tree(tmp_path / "again") == _tree(generated)


def test_another_seed_writes_other_bytes(tmp_path, generated):
    generate(tmp_path / "other", small_specs("u"))
    mine, theirs = _tree(tmp_path / "other"), _tree(generated)
    assert mine.keys() & theirs.keys()
    assert any(mine[k] != theirs[k] for k in mine.keys() & theirs.keys() if k.endswith(".log"))


def _load_fixture_script():
    spec = importlib.util.spec_from_file_location("make_fixtures", REPO / "scripts" / "make_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="fixtures/ is not there")
def test_fixtures_are_what_the_script_writes(tmp_path):
    _load_fixture_script().build(tmp_path)
    assert _tree(tmp_path) == _tree(FIXTURES), "run scripts/make_fixtures.py and commit fixtures/"


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="fixtures/ is not there")
def test_fixtures_stay_small():
    assert sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file()) < 3 << 20
    assert (FIXTURES / "single-node" / "__cluster_metadata-0" / "00000000000000000000.log").is_file()


# --- batches (reference §1.5, §1.7) ------------------------------------------------------------


def test_every_batch_holds_the_kraft_invariants(generated):
    for cluster in all_clusters(generated):
        for path in [*log_files(cluster), *cluster.rglob("bootstrap.checkpoint")]:
            for b in batches(path):
                assert b.crc_valid and b.magic == 2 and b.compression == 0, (path, b)
                assert b.timestamp_type == "CreateTime" and not b.is_transactional
                assert (b.producer_id, b.producer_epoch, b.base_sequence) == (-1, -1, -1)
                assert b.size <= 8 << 20 and b.records_count == len(b.records) > 0
                assert b.base_timestamp == b.max_timestamp
                for r in b.records:
                    assert r.timestamp_delta == 0 and r.headers == () and r.value
                    if b.is_control:
                        assert r.key is not None and len(r.key) == 4
                        assert decode_control(r.key, r.value).error is None
                    else:
                        assert r.key is None and decode_metadata(r.value).error is None


def test_offsets_run_on_without_gaps_and_segments_are_named_by_base_offset(generated):
    for cluster in all_clusters(generated):
        for node in find_nodes(cluster):
            expected = 0
            for seg in node.segments:
                found = batches(seg.path)
                assert found[0].base_offset == seg.offset == expected, seg.path
                for b in found:
                    assert b.base_offset == expected
                    expected = b.last_offset + 1
            assert len(node.segments) >= 2, f"{node.name}: pick smaller segments, the roll is untested"


def _log_index(node) -> dict[int, tuple[int, int]]:
    """offset -> (batch epoch, timestamp) over the node's segments."""
    return {r.offset: (b.partition_leader_epoch, r.timestamp) for seg in node.segments
            for b in batches(seg.path) for r in b.records}


def test_snapshots_are_named_by_end_offset_and_epoch_of_their_last_record(generated):
    for cluster in all_clusters(generated):
        truth = truth_of(cluster)
        for node in find_nodes(cluster):
            index = _log_index(node)
            for snap in node.snapshots:
                found = batches(snap.path)
                header = decode_control(found[0].records[0].key, found[0].records[0].value)
                footer = decode_control(found[-1].records[0].key, found[-1].records[0].value)
                assert (header.type, footer.type) == ("SNAPSHOT_HEADER", "SNAPSHOT_FOOTER")
                assert found[0].base_offset == 0 and all(b.partition_leader_epoch == snap.epoch for b in found)
                if snap.offset == 0:  # the kraft.version 1 bootstrap snapshot 0-0 of a voter
                    assert truth["cluster"]["kraftVersion"] == 1 and len(found) == 2
                    continue
                assert index[snap.offset - 1] == (snap.epoch, header.data["lastContainedLogTimestamp"])
                assert snap.offset in {s["endOffset"] for s in truth["snapshots"]}


#: MetadataImage.write order (reference §6.3).
_SNAPSHOT_ORDER = ["FEATURE_LEVEL_RECORD", "ZK_MIGRATION_STATE_RECORD", "REGISTER_BROKER_RECORD",
                   "REGISTER_CONTROLLER_RECORD", "TOPIC_RECORD", "CONFIG_RECORD", "CLIENT_QUOTA_RECORD",
                   "PRODUCER_IDS_RECORD", "ACCESS_CONTROL_ENTRY_RECORD", "USER_SCRAM_CREDENTIAL_RECORD",
                   "DELEGATION_TOKEN_RECORD"]


def test_snapshots_hold_the_image_in_kafkas_order(generated):
    for cluster in all_clusters(generated):
        for node in find_nodes(cluster):
            for snap in node.snapshots:
                recs = metadata_records(snap.path)
                if snap.offset == 0:
                    continue
                assert recs[0].type == "FEATURE_LEVEL_RECORD" and recs[0].data["name"] == "metadata.version"
                ranks = [_SNAPSHOT_ORDER.index("TOPIC_RECORD" if r.type == "PARTITION_RECORD" else r.type)
                         for r in recs]
                assert ranks == sorted(ranks), snap.path
                topic = None
                for r in recs:
                    if r.type == "TOPIC_RECORD":
                        topic = r.data["topicId"]
                    elif r.type == "PARTITION_RECORD":
                        assert r.data["topicId"] == topic


def test_each_epoch_starts_with_its_leader_change(generated):
    for cluster in all_clusters(generated):
        truth = truth_of(cluster)
        for node in find_nodes(cluster):
            epoch, starts = -1, []
            for seg in node.segments:
                for b in batches(seg.path):
                    assert b.partition_leader_epoch >= epoch, "epochs never go back"
                    if b.partition_leader_epoch > epoch:
                        epoch = b.partition_leader_epoch
                        starts.append((epoch, b.base_offset))
                        first = decode_control(b.records[0].key, b.records[0].value) if b.is_control else None
                        assert first is not None and first.type == "LEADER_CHANGE", (seg.path, b.base_offset)
            assert node.leader_epochs == starts
            assert node.quorum_state["leaderEpoch"] == epoch
            leaders = {e["epoch"]: e["leaderId"] for e in truth["epochs"]}
            assert node.quorum_state["leaderId"] == leaders[epoch]


# --- record versions per metadata.version (reference §8) ------------------------------------------

#: type -> metadata.version levels that write it (inclusive), as reference §8 and §3.1 say.
_WRITTEN_AT = {
    "NO_OP_RECORD": (5, 99), "FENCE_BROKER_RECORD": (1, 5), "UNFENCE_BROKER_RECORD": (1, 5),
    "BROKER_REGISTRATION_CHANGE_RECORD": (6, 99), "ZK_MIGRATION_STATE_RECORD": (8, 21),
    "USER_SCRAM_CREDENTIAL_RECORD": (11, 99), "REMOVE_USER_SCRAM_CREDENTIAL_RECORD": (11, 99),
    "BEGIN_TRANSACTION_RECORD": (13, 99), "END_TRANSACTION_RECORD": (13, 99), "ABORT_TRANSACTION_RECORD": (13, 99),
    "DELEGATION_TOKEN_RECORD": (14, 99), "REMOVE_DELEGATION_TOKEN_RECORD": (14, 99),
    "REGISTER_CONTROLLER_RECORD": (15, 99), "UNREGISTER_CONTROLLER_RECORD": (33, 99),
}


def expected_version(kind: str, mv: int, data: dict) -> int:
    if kind == "REGISTER_BROKER_RECORD":
        return 0 if mv < 7 else 1 if mv == 7 else 2 if mv < 17 else 3
    if kind in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
        return 0 if mv < 17 else 1 if mv < 23 else 2
    if kind == "BROKER_REGISTRATION_CHANGE_RECORD":
        return 1 if "inControlledShutdown" in data else 0
    return 0


def metadata_records(path: Path) -> list:
    return [decode_metadata(r.value) for b in batches(path) if not b.is_control for r in b.records]


def _check_versions(path: Path, mv: int) -> int:
    """Check one file's records against the metadata.version in force; returns the last one."""
    for rec in metadata_records(path):
        if rec.type == "FEATURE_LEVEL_RECORD" and rec.data["name"] == "metadata.version":
            mv = rec.data["featureLevel"]
        low, high = _WRITTEN_AT.get(rec.type, (1, 99))
        assert low <= mv <= high, f"{path}: {rec.type} at metadata.version {mv}"
        assert rec.version == expected_version(rec.type, mv, rec.data), (path, rec)
    return mv


def test_records_are_written_at_the_versions_their_metadata_version_writes(generated):
    for cluster in all_clusters(generated):
        for node in find_nodes(cluster):
            mv = _check_versions(node.bootstrap.path, 0)  # the level the log starts at
            for seg in node.segments:
                mv = _check_versions(seg.path, mv)
            for snap in node.snapshots:
                _check_versions(snap.path, 0)


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="fixtures/ is not there")
def test_the_single_node_fixture_has_every_record_type_its_version_writes():
    node = find_nodes(FIXTURES / "single-node")[0]
    seen = {rec.type for seg in node.segments for rec in metadata_records(seg.path)}
    mv = truth_of(FIXTURES / "single-node")["final"]["features"]["metadata.version"]
    unwritten = {"ACCESS_CONTROL_RECORD", "REMOVE_FEATURE_LEVEL_RECORD", "CLEAR_ELR_RECORD"}  # §3.1, ELR off
    from kraftlog.schema import METADATA_RECORDS
    wanted = {m.type_name for m in METADATA_RECORDS} - unwritten
    wanted = {t for t in wanted if _WRITTEN_AT.get(t, (1, 99))[0] <= mv <= _WRITTEN_AT.get(t, (1, 99))[1]}
    assert wanted - seen == set()
    truth = truth_of(FIXTURES / "single-node")
    assert {"committed", "aborted"} <= {t["outcome"] for t in truth["transactions"]}


# --- node copies --------------------------------------------------------------------------------


def test_copies_agree_and_the_diverging_one_leaves_at_its_uncommitted_tail(generated):
    clusters = [c for c in all_clusters(generated) if truth_of(c)["cluster"]["divergingNode"]]
    assert clusters
    for cluster in clusters:
        truth = truth_of(cluster)
        nodes = {n.node_id: n for n in find_nodes(cluster)}
        primary = nodes[truth["cluster"]["primaryNode"]]
        tail = truth["uncommitted"][0]
        for node_id, node in nodes.items():
            divergence = compare_copies(primary, node)
            if node_id == truth["cluster"]["divergingNode"]:
                assert divergence.offset == tail["fromOffset"], divergence
                assert node.quorum_state["leaderId"] == node_id
                assert node.quorum_state["leaderEpoch"] == tail["epoch"] == node.leader_epochs[-1][0]
                assert all(s.offset <= tail["fromOffset"] for s in node.snapshots)
            else:
                assert divergence.offset is None, divergence
                assert [s.offset for s in node.snapshots if s.offset] == [s.offset for s in primary.snapshots if s.offset]


def test_node_files_say_which_node_and_cluster(generated):
    for cluster in all_clusters(generated):
        truth = truth_of(cluster)["cluster"]
        nodes = find_nodes(cluster)
        assert sorted(n.node_id for n in nodes) == sorted(truth["nodes"])
        for node in nodes:
            assert node.cluster_id == truth["clusterId"] and node.meta.version == 1
            assert node.partition_metadata == {"version": "0", "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ"}
            assert classify(node.bootstrap.path).kind == "bootstrap"
            boot = metadata_records(node.bootstrap.path)
            assert boot[0].data == {"name": "metadata.version", "featureLevel": parse_path(truth["metadataVersions"][0])[0]}
            assert node.quorum_state["data_version"] == truth["kraftVersion"]


# --- the command ----------------------------------------------------------------------------------


def test_generate_command_writes_a_fleet(tmp_path, capsys):
    out = tmp_path / "fleet"
    assert main(["generate", str(out), "--clusters", "2", "--metadata-version", "3.5,4.0", "--duration", "5m",
                 "--brokers", "2", "--topics", "2", "--seed", "9"]) == 0
    assert sorted(os.listdir(out)) == ["cluster-0", "cluster-1"]
    assert [truth_of(out / c)["cluster"]["metadataVersions"] for c in ("cluster-0", "cluster-1")] == [
        ["3.5-IV2"], ["4.0-IV3"]]
    assert "truth in" in capsys.readouterr().err


@pytest.mark.parametrize("args", [
    ["--metadata-version", "2.8"], ["--metadata-version", "4.0..3.9"], ["--nodes", "9"],
    ["--diverge"], ["--kraft-version", "1", "--metadata-version", "3.8"], ["--metadata-version", "3.5,3.6"],
    ["--metadata-version", "3.3-IV2..4.0"],
])
def test_generate_refuses_what_kafka_cannot_be(tmp_path, args, capsys):
    assert main(["generate", str(tmp_path / "x"), "--duration", "1m", *args]) == 2
    assert "kraftlog:" in capsys.readouterr().err


def test_durations_read_as_people_write_them():
    assert [duration_ms(t) for t in ("6h", "90m", "1d12h", "500ms", "1.5s")] == [
        21_600_000, 5_400_000, 129_600_000, 500, 1500]
    with pytest.raises(argparse.ArgumentTypeError):
        duration_ms("6x")


def test_generate_will_not_write_into_a_folder_with_files(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["generate", str(tmp_path), "--duration", "1m"]) == 2
    assert os.listdir(tmp_path) == ["keep.txt"]
