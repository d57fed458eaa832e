"""Which copy the commands read (the one Raft would trust, or every copy assembled), clusters kept
apart, and points the log cannot answer refused (issue 21 §1 and §3)."""

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO
from kraftlog.cli.main import main
from kraftlog.files.reader import read_log_file

THREE = REPO / "fixtures" / "three-nodes"
SINGLE = REPO / "fixtures" / "single-node"
TRUTH = json.loads((THREE / "ground-truth.json").read_text())
UNCOMMITTED = TRUTH["uncommitted"][0]  # node 3's tail: epoch 6, never committed
META = "__cluster_metadata-0"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def copy_of(src: Path, dst: Path, *nodes: str) -> Path:
    for n in nodes:
        shutil.copytree(src / n, dst / n)
    return dst


def batches(path: Path) -> list:
    return list(read_log_file(path, records=False))


# -- §1: the copy Raft would trust, and the log assembled from all copies ---------------------------

def test_ranking_is_the_last_batchs_epoch_then_its_offset():
    from kraftlog.files.copies import copy_order

    ranked = sorted([(6, 2437, 3, "c"), (7, 2434, 1, "a"), (7, 2434, 2, "b"), (None, None, 4, "d")],
                    key=lambda c: copy_order(*c))
    assert [c[2] for c in ranked] == [1, 2, 3, 4]


def test_history_leaves_out_the_uncommitted_tail_of_the_dead_leader(capsys):
    record = UNCOMMITTED["records"][0]
    assert (UNCOMMITTED["node"], record["offset"]) == (3, 2435)
    key = f"TOPIC:{record['data']['resourceName']}:{record['data']['name']}"
    code, out, err = run(capsys, "history", THREE, "--config", key, "--format", "jsonl")
    assert out == "" and code == 1 and "never existed" in err
    assert "node 3 [node-3] diverges from node 1 [node-1] at offset 2433" in err
    # node 3 alone still shows it: the tail is on disk, it just never committed
    code, out, _ = run(capsys, "history", THREE, "--config", key, "--node", 3, "--format", "jsonl")
    assert [(r["offset"], r["after"]) for r in map(json.loads, out.splitlines())] == \
        [(2435, record["data"]["value"])]


def test_report_leaves_out_the_uncommitted_tail(capsys, tmp_path):
    value = UNCOMMITTED["records"][0]["data"]["value"]
    code, _, err = run(capsys, "report", THREE, "-o", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert code == 0 and value not in page and "offsets 0..2648" in err
    run(capsys, "report", THREE, "--node", 3, "-o", tmp_path / "n3.html")
    assert value in (tmp_path / "n3.html").read_text()


def test_a_higher_last_epoch_beats_a_longer_log(capsys, tmp_path):
    """node 1 truncated inside epoch 7 (ends at 2434) against node 3's longer epoch-6 tail (2437)."""
    root = copy_of(THREE, tmp_path, "node-1", "node-3")
    seg = root / "node-1" / META / "00000000000000001795.log"
    cut = next(b for b in batches(seg) if b.base_offset == 2435)
    with open(seg, "r+b") as f:
        f.truncate(cut.position)
    code, out, err = run(capsys, "replay", root, "--offset", "end")
    prov = json.loads(out)["provenance"]
    assert code == 0 and (prov["offset"], prov["epoch"]) == (2434, 7)
    assert "best first: node 1 [node-1], node 3 [node-3]" in err
    code, out, _ = run(capsys, "inspect", root, "--format", "json")
    assert json.loads(out)["clusters"][0]["newest"] == 1


def test_offsets_a_better_copy_lacks_come_from_another_copy(capsys, tmp_path):
    """node 1 lost its first segment (retention): offsets 0-890 come from node 2, the rest from node 1."""
    root = copy_of(THREE, tmp_path, "node-1", "node-2", "node-3")
    (root / "node-1" / META / "00000000000000000000.log").unlink()
    code, out, err = run(capsys, "replay", root, "--offset", 700, "--base", "none")
    alone = run(capsys, "replay", THREE, "--node", 2, "--offset", 700, "--base", "none")
    assert code == 0 and json.loads(out) == json.loads(alone[1])
    assert "offsets 891-2648 from node 1 [node-1]" in err and "offsets 0-890 from node 2 [node-2]" in err
    assert "2433" not in err.split("diverges")[0]  # node 3 supplies nothing: node 2 holds all it could


# -- cluster grouping -----------------------------------------------------------------------------

@pytest.fixture
def two_clusters(tmp_path) -> Path:
    for seed in ("a", "b"):
        assert main(["generate", str(tmp_path / seed), "--nodes", "3", "--duration", "5m", "--seed", seed]) == 0
    return tmp_path


def test_several_clusters_need_cluster(capsys, two_clusters):
    code, _, err = run(capsys, "replay", two_clusters, "--offset", "end")
    assert code == 2 and "copies of 2 clusters" in err and "--cluster" in err
    cid = (two_clusters / "b/node-1/meta.properties").read_text().split("cluster.id=")[1].split()[0]
    code, out, _ = run(capsys, "replay", two_clusters, "--offset", "end", "--cluster", cid)
    alone = run(capsys, "replay", two_clusters / "b", "--offset", "end")
    assert code == 0 and json.loads(out) == json.loads(alone[1])


def test_two_clusters_sharing_an_id_and_node_ids_are_kept_apart(capsys, two_clusters):
    a = (two_clusters / "a/node-1/meta.properties").read_text().split("cluster.id=")[1].split()[0]
    for n in (1, 2, 3):
        meta = two_clusters / f"b/node-{n}/meta.properties"
        meta.write_text(meta.read_text().replace(meta.read_text().split("cluster.id=")[1].split()[0], a))
    code, out, err = run(capsys, "replay", two_clusters, "--offset", "end")
    assert (code, out) == (2, "")
    assert "2 unrelated logs" in err and "node ids [1, 2, 3] are claimed by copies holding different bytes" in err
    ends = {}
    for label in (f"{a}/1", f"{a}/2"):
        code, out, err = run(capsys, "replay", two_clusters, "--offset", "end", "--cluster", label)
        assert code == 0 and "unrelated logs" in err
        ends[label] = json.loads(out)
    assert run(capsys, "replay", two_clusters, "--offset", "end", "--cluster", f"{a}/3")[0] == 2
    assert run(capsys, "replay", two_clusters, "--offset", "end", "--node", 7)[0] == 2
    # each lineage is one cluster's log alone: never a mix
    by_dir = {run(capsys, "replay", two_clusters / d, "--offset", "end")[1] for d in "ab"}
    assert {json.dumps(v, indent=2) + "\n" for v in ends.values()} == by_dir


# -- §3: no silent empty or stale state -----------------------------------------------------------

def test_an_empty_metadata_folder_is_refused(capsys, tmp_path):
    (tmp_path / META).mkdir()
    shutil.copy(SINGLE.parent / "three-nodes/node-1/meta.properties", tmp_path)
    for argv in (["replay", tmp_path, "--offset", 5], ["metadata", tmp_path, "--offset", "end"]):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (1, "") and "holds no segments and no snapshots" in err


def test_a_point_before_the_only_snapshot_is_refused(capsys, tmp_path):
    shutil.copytree(SINGLE, tmp_path / "n", ignore=shutil.ignore_patterns("*.log"))
    code, out, err = run(capsys, "replay", tmp_path / "n", "--offset", 100)
    assert (code, out) == (1, "")
    assert "offset 100 is before anything on disk" in err and "snapshots ending at offsets 1341" in err
    code, out, _ = run(capsys, "replay", tmp_path / "n", "--offset", 1340)
    assert code == 0 and json.loads(out)["provenance"]["offset"] == 1340


def test_a_point_before_the_log_starts_is_refused(capsys, tmp_path):
    shutil.copytree(SINGLE, tmp_path / "n", ignore=shutil.ignore_patterns("*.checkpoint", "00000000000000000000.log"))
    code, out, err = run(capsys, "replay", tmp_path / "n", "--offset", 10)
    assert (code, out) == (1, "") and "segments from offset 1794" in err
    code, out, err = run(capsys, "history", tmp_path / "n", "--broker", 1)
    assert (code, out) == (1, "") and "no log from offset 0 and no snapshot" in err


def test_a_gap_before_a_later_snapshot_is_reported_and_refused(capsys, tmp_path):
    node = tmp_path / "n"
    shutil.copytree(SINGLE, node, ignore=shutil.ignore_patterns("00000000000000005533.log", "00000000000000007414.log"))
    code, out, _ = run(capsys, "inspect", node, "--format", "json")
    cov = json.loads(out)["nodes"][0]["coverage"]
    assert cov["lastOffset"] == 5532 and [5533, 8367] in cov["gaps"]
    code, out, err = run(capsys, "replay", node, "--offset", 5535)
    assert (code, out) == (1, "") and "offset 5535 is on no segment" in err
    code, out, _ = run(capsys, "replay", node, "--offset", 5537)  # exactly what snapshot 5538 holds
    assert code == 0 and json.loads(out)["provenance"]["offset"] == 5537
    last = json.loads(run(capsys, "replay", node, "--offset", 5532)[1])["provenance"]["timestamp"]
    code, out, err = run(capsys, "replay", node, "--time", last)  # the log runs out; snapshot 5538 is later
    assert (code, out) == (1, "") and "the records in between are on no segment" in err
    code, out, err = run(capsys, "replay", node, "--offset", 9000)  # past the end: the end's state, said so
    assert code == 0 and json.loads(out)["provenance"]["offset"] == 8367
    assert "the log ends at offset 8367, before the requested offset 9000" in err
    code, out, err = run(capsys, "history", node, "--broker", 1, "--format", "jsonl")
    assert code == 1 and "the history ends at offset 5532, but snapshot 00000000000000008368-0000000011.checkpoint " \
        "shows the log went on to offset 8367: the changes in between are not on disk" in err


def test_offset_end_and_negative_offsets(capsys):
    code, out, _ = run(capsys, "replay", SINGLE, "--offset", "latest")
    end = json.loads(out)["provenance"]["offset"]
    assert code == 0 and end > 8367
    assert json.loads(run(capsys, "replay", SINGLE, "--offset", end)[1]) == json.loads(out)
    with pytest.raises(SystemExit) as e:
        main(["replay", str(SINGLE), "--offset", "-1"])
    assert e.value.code == 2
    assert run(capsys, "diff", SINGLE, "--from", "-5", "--to", "end")[0] == 2
    assert run(capsys, "diff", SINGLE, "--from", end, "--to", "end")[1] == "no changes\n"


def test_history_of_an_entity_that_never_existed(capsys):
    for argv in (["--topic", "no-such-topic"], ["--broker", 99], ["--config", "TOPIC:no-such-topic"]):
        code, out, err = run(capsys, "history", SINGLE, *argv)
        assert (code, out) == (1, "") and "never existed" in err


def test_replay_stops_at_the_first_batch_that_fails_its_crc(capsys, tmp_path):
    node = tmp_path / "n"
    shutil.copytree(SINGLE, node)
    seg = node / META / "00000000000000007414.log"
    bad = [b for b in batches(seg) if b.base_offset >= 8400][0]  # after the last snapshot (8368)
    with open(seg, "r+b") as f:
        f.seek(bad.position + bad.size - 1)
        last = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([last[0] ^ 0xFF]))
    code, out, err = run(capsys, "replay", node, "--offset", "end")
    assert code == 1 and json.loads(out)["provenance"]["offset"] == bad.base_offset - 1
    assert f"(offset {bad.base_offset}) fails its CRC: Kafka truncates the log there" in err
    code, out, _ = run(capsys, "replay", node, "--offset", "end", "--apply-invalid")
    assert code == 1 and json.loads(out)["provenance"]["offset"] > bad.base_offset


def test_a_batch_one_copy_holds_damaged_comes_from_a_copy_holding_it_valid(capsys, tmp_path):
    root = copy_of(THREE, tmp_path, "node-1", "node-2")
    seg = root / "node-1" / META / "00000000000000000891.log"
    bad = next(b for b in batches(seg) if b.base_offset >= 1000)
    with open(seg, "r+b") as f:
        f.seek(bad.position + bad.size - 1)
        last = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([last[0] ^ 0xFF]))
    code, out, err = run(capsys, "replay", root, "--offset", "end", "--base", "none")
    whole = run(capsys, "replay", THREE, "--node", 2, "--offset", "end", "--base", "none")[1]
    assert code == 0 and json.loads(out) == json.loads(whole)
    assert f"offsets {bad.base_offset}-{bad.last_offset} from node 2 [node-2]" in err
    assert f"node 1 [node-1]: the batch at offsets {bad.base_offset}-{bad.last_offset} fails its CRC" in err
    code, out, err = run(capsys, "replay", root, "--node", 1, "--offset", "end", "--base", "none")
    assert code == 1 and json.loads(out)["provenance"]["offset"] == bad.base_offset - 1
