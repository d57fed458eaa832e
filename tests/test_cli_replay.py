"""replay, metadata, diff and history commands on a real three-broker cluster's copy."""

import json

import pytest

from conftest import CORPUS
from kraftlog.cli.main import main

NODE = CORPUS / "real/greenlemonT__kafka-temp/data/kafka1"
pytestmark = pytest.mark.skipif(not NODE.is_dir(), reason="the shared corpus (../shared/corpus) is absent")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_replay_json_at_an_offset(capsys):
    code, out, err = run(capsys, "replay", NODE, "--offset", 6400)
    image = json.loads(out)
    assert code == 0 and "from the log from offset 0" in err
    assert image["provenance"]["offset"] == 6400
    p3 = image["topics"]["__consumer_offsets"]["partitions"]["3"]
    assert (p3["leader"], p3["isr"], p3["leaderEpoch"], p3["partitionEpoch"]) == (2, [2], 2, 2)
    assert image["features"] == {"metadata.version": 11}


def test_replay_of_a_checkpoint_file_and_tree(capsys):
    snap = NODE / "__cluster_metadata-0/00000000000000028869-0000000189.checkpoint"
    code, out, _ = run(capsys, "replay", snap, "--format", "tree")
    assert code == 0
    assert "metadataVersion:\n    3.5-IV2" in out and "byName:" in out


def test_replay_directory_needs_a_point(capsys):
    assert run(capsys, "replay", NODE)[0] == 2


@pytest.mark.parametrize("command", ["replay", "metadata"])
def test_a_time_that_is_no_time_is_a_usage_error(capsys, command):
    with pytest.raises(SystemExit) as e:
        main([command, str(NODE), "--time", "yesterday"])
    assert e.value.code == 2
    assert "not an ISO-8601 time or epoch milliseconds: 'yesterday'" in capsys.readouterr().err


def test_replay_at_a_time_stops_before_later_records(capsys):
    code, out, _ = run(capsys, "replay", NODE, "--time", "2025-01-22T07:16:34.059Z")
    image = json.loads(out)
    assert image["provenance"]["timestamp"] <= 1737530194059
    code, out2, _ = run(capsys, "replay", NODE, "--time", "1737530194059")
    assert json.loads(out2) == image


def test_metadata_response_leaders(capsys):
    code, out, _ = run(capsys, "metadata", NODE, "--offset", 6400)
    resp = json.loads(out)
    assert [b["nodeId"] for b in resp["brokers"]] == [1, 2, 3]
    topic = next(t for t in resp["topics"] if t["name"] == "__consumer_offsets")
    p0 = next(p for p in topic["partitions"] if p["partitionIndex"] == 0)
    assert (p0["leaderId"], p0["leaderEpoch"], p0["isrNodes"]) == (2, 2, [2])


def test_diff_between_offsets(capsys):
    code, out, _ = run(capsys, "diff", NODE, "--from", 6300, "--to", 6400, "--format", "json")
    changes = {(c["domain"], c["key"]): c for c in json.loads(out)}
    c = changes[("partitions", "__consumer_offsets-0")]
    assert (c["before"]["leader"], c["after"]["leader"]) == (3, 2)
    assert changes[("brokers", "1")]["after"]["inControlledShutdown"] is True


def test_history_of_one_partition(capsys):
    code, out, _ = run(capsys, "history", NODE, "--topic", "__consumer_offsets", "--partition", 3,
                       "--format", "jsonl")
    rows = [json.loads(x) for x in out.splitlines()]
    assert [r["type"] for r in rows[:3]] == ["TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD"]
    assert rows[2]["offset"] == 6321 and rows[2]["after"]["isr"] == [2, 3]
    assert all(r["type"] != "PARTITION_RECORD" or r["data"]["partitionId"] == 3 for r in rows)


def test_history_of_a_broker_and_a_config(capsys):
    _, out, _ = run(capsys, "history", NODE, "--broker", 2, "--format", "jsonl")
    rows = [json.loads(x) for x in out.splitlines()]
    assert rows and all(r["data"].get("brokerId", r["data"].get("id")) == 2 for r in rows)
    _, out, _ = run(capsys, "history", NODE, "--config", "TOPIC:__consumer_offsets:cleanup.policy", "--format", "jsonl")
    rows = [json.loads(x) for x in out.splitlines()]
    assert [(r["offset"], r["after"]) for r in rows] == [(6248, "compact")]
