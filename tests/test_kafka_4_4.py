"""Logs of Kafka 4.3/4.4 clusters, hand-encoded by kraftlog's own encoder from what Kafka's source says
(apache/kafka@4425e970: MetadataVersion.java, UnregisterControllerRecord.json), and records of versions
newer than kraftlog's schema table (issue 17's rule)."""

import json

import pytest

from kraftlog.cli.main import main
from kraftlog.schema import encode_metadata
from kraftlog.synth.writer import data_batch

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
DIR = "AAAAAAAAAAAAAAAAAAAAEQ"
#: A tagged field RegisterBrokerRecord v4 adds (cordoned log dirs, 4.3-IV0). Kafka's JSON for v4 is
#: not in any stored copy of its source, so its tag and layout are not known here: the tests only
#: rely on Kafka adding it as a tagged field, which the rule for newer versions keeps raw.
NEWER_TAG = ("", 7, b"\x02" + bytes(16))


def newer(kind: str, version: int, data: dict, tags=(NEWER_TAG,)) -> bytes:
    """``kind`` at ``version`` + 1: the body of ``version`` plus tagged fields, as Kafka adds fields."""
    value = encode_metadata(kind, version, data, tags)
    return value[:2] + bytes([version + 1]) + value[3:]


def broker(broker_id: int, epoch: int) -> dict:
    return {"brokerId": broker_id, "incarnationId": f"AAAAAAAAAAAAAAAAAAAA{'ABCDEFGH'[broker_id]}A",
            "brokerEpoch": epoch, "fenced": False, "rack": None, "logDirs": [DIR],
            "endPoints": [{"name": "PLAINTEXT", "host": f"b{broker_id}", "port": 9092, "securityProtocol": 0}],
            "features": [{"name": "metadata.version", "minSupportedVersion": 7, "maxSupportedVersion": 33}]}


def controller(controller_id: int) -> bytes:
    return encode_metadata("RegisterControllerRecord", 0, {
        "controllerId": controller_id, "incarnationId": "AAAAAAAAAAAAAAAAAAAAIA",
        "endPoints": [{"name": "CONTROLLER", "host": f"c{controller_id}", "port": 9093, "securityProtocol": 0}]})


def partition_change_with_a_new_fixed_field() -> bytes:
    """PartitionChangeRecord v3 whose untagged part grew: v2 cannot read it to its end."""
    value = encode_metadata("PartitionChangeRecord", 2, {"partitionId": 0, "topicId": TOPIC_ID, "isr": [1]})
    return value[:2] + b"\x03" + value[3:-1] + b"\x00\x00\x00\x09" + value[-1:]


def values() -> list[bytes]:
    return [
        encode_metadata("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 33}),
        newer("RegisterBrokerRecord", 3, broker(1, 10)),
        newer("RegisterBrokerRecord", 3, broker(2, 11)),
        controller(3000), controller(3001), controller(3002),
        encode_metadata("TopicRecord", 0, {"name": "orders", "topicId": TOPIC_ID}),
        encode_metadata("PartitionRecord", 2, {"partitionId": 0, "topicId": TOPIC_ID, "replicas": [1, 2],
                                                "isr": [1, 2], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
                                                "directories": [DIR, DIR]}),
        encode_metadata("UnregisterControllerRecord", 0, {"controllerId": 3001}),
        newer("BrokerRegistrationChangeRecord", 2, {"brokerId": 2, "brokerEpoch": 11, "fenced": 1}),
        partition_change_with_a_new_fixed_field(),
    ]


@pytest.fixture
def log_dir(tmp_path):
    metadata = tmp_path / "node" / "__cluster_metadata-0"
    metadata.mkdir(parents=True)
    (metadata / "00000000000000000000.log").write_bytes(data_batch(values(), 0, 1_700_000_000_000, 1))
    return tmp_path / "node"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_replay_of_a_4_4_log_keeps_v4_brokers_and_drops_the_unregistered_controller(capsys, log_dir):
    code, out, err = run(capsys, "replay", log_dir, "--offset", 10)
    image = json.loads(out)
    assert sorted(image["brokers"]) == ["1", "2"]
    assert image["brokers"]["1"]["fenced"] is False and image["brokers"]["2"]["fenced"] is True
    assert image["brokers"]["1"]["logDirs"] == [DIR]
    assert sorted(image["controllers"]) == ["3000", "3002"]
    assert image["features"] == {"metadata.version": 33}
    # the change kraftlog cannot read is not applied, and the partition it was about is named
    assert image["topics"]["orders"]["partitions"]["0"]["isr"] == [1, 2]
    assert code == 1 and f"not applied to partitionId=0, topicId={TOPIC_ID}: UnsupportedVersionException: " \
        "Can't read version 3 of PartitionChangeRecord (highest known version is 2)" in err


def test_the_tree_names_4_4_iv2(capsys, log_dir):
    _, out, _ = run(capsys, "replay", log_dir, "--offset", 9, "--format", "tree")
    assert "metadataVersion:\n    4.4-IV2" in out
    assert "3001" not in out and "ControllerRegistration(id=3002" in out


def test_metadata_shows_the_v4_brokers_as_alive(capsys, log_dir):
    code, out, _ = run(capsys, "metadata", log_dir, "--offset", 9)
    response = json.loads(out)
    assert [b["nodeId"] for b in response["brokers"]] == [1]  # broker 2 was fenced at offset 9
    orders = next(t for t in response["topics"] if t["name"] == "orders")
    p = orders["partitions"][0]
    assert (p["leaderId"], p["error"], p["offlineReplicas"]) == (1, "NONE", [2])


def test_dump_marks_newer_versions_and_says_so_on_stderr(capsys, log_dir):
    code, out, err = run(capsys, "dump", log_dir / "__cluster_metadata-0", "--format", "jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    registrations = [r["metadata"] for r in rows if r.get("metadata", {}).get("type") == "REGISTER_BROKER_RECORD"]
    assert [(r["version"], r["decodedAs"]) for r in registrations] == [(4, 3), (4, 3)]
    assert registrations[0]["unknownTaggedFields"] == [{"path": "", "tag": 7, "data": "AgAAAAAAAAAAAAAAAAAAAAA="}]
    assert "2 record(s): RegisterBrokerRecord v4 is newer than kraftlog knows: decoded as v3" in err
    assert "1 record(s): BrokerRegistrationChangeRecord v3 is newer than kraftlog knows: decoded as v2" in err
    _, text, _ = run(capsys, "dump", log_dir / "__cluster_metadata-0")
    assert "(RegisterBrokerRecord v4 is newer than kraftlog knows: decoded as v3, 1 unknown tagged field(s) " \
           "kept raw)" in text
