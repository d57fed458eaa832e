"""Replay mechanics: provenance, problems, metadata transactions, snapshots, raft leadership."""

from test_state_support import Rec, config, partition, rec, register_broker, replayed, topic, uuid

from kraftlog.files.records import Entry
from kraftlog.state.image import ClusterImage
from kraftlog.state.replay import load_snapshot, replay

BEGIN = rec("BEGIN_TRANSACTION_RECORD", name="Bootstrap records")
END = rec("END_TRANSACTION_RECORD")
ABORT = rec("ABORT_TRANSACTION_RECORD", reason="Controller failover")
NOOP = rec("NO_OP_RECORD")


def entries(*records: Rec, first_offset: int = 0, epoch: int = 1) -> list[Entry]:
    return [Entry(r, o, 1000 * o, epoch) for o, r in enumerate(records, first_offset)]


def state(image: ClusterImage) -> dict:
    """The image without its provenance, to compare contents."""
    out = image.to_json()
    del out["provenance"]
    return out


# --- provenance and problems -------------------------------------------------------------------


def test_provenance_is_the_last_applied_record():
    image = replayed(topic("t", uuid(1)), NOOP, NOOP, first_offset=40, epoch=3)
    assert image.to_json()["provenance"] == {"offset": 42, "epoch": 3, "timestamp": 42000}


def test_empty_image_provenance():
    assert ClusterImage.empty().to_json()["provenance"] == {"offset": -1, "epoch": -1, "timestamp": -1}


def test_undecoded_and_unknown_records_are_problems_and_skipped():
    bad = Rec("TOPIC_RECORD", {"name": "x", "topicId": uuid(3)}, error="garbage after TopicRecord")
    image = replayed(bad, rec("SOMETHING_NEW_RECORD", x=1), topic("t", uuid(1)))
    assert [(p.offset, p.type) for p in image.problems] == [(0, "TOPIC_RECORD"), (1, "SOMETHING_NEW_RECORD")]
    assert "garbage after TopicRecord" in image.problems[0].message
    assert "unknown record type" in image.problems[1].message
    assert list(image.to_json()["topics"]) == ["t"]
    assert image.provenance.offset == 2


def test_unknown_control_records_are_ignored_as_kafka_does():
    image = replayed(Rec("UNKNOWN", None), topic("t", uuid(1)))
    assert image.problems == []
    assert image.provenance.offset == 1


def test_malformed_record_data_is_a_problem_not_a_crash():
    image = replayed(rec("TOPIC_RECORD", name="no-id"), rec("PRODUCER_IDS_RECORD"), topic("t", uuid(1)))
    assert [p.offset for p in image.problems] == [0, 1]
    assert all(p.message.startswith("malformed record") for p in image.problems)
    assert list(image.to_json()["topics"]) == ["t"]


def test_problems_carry_offset_type_and_message_as_json():
    image = replayed(NOOP, rec("FENCE_BROKER_RECORD", id=1, epoch=1))
    assert image.problems[0].to_json() == {
        "offset": 1, "type": "FENCE_BROKER_RECORD",
        "message": "FenceBrokerRecord for broker 1, which is not registered",
    }


# --- metadata transactions -----------------------------------------------------------------------


def test_committed_transaction_applies_everything_at_end():
    image = replayed(BEGIN, topic("t", uuid(1)), config(2, "t", "retention.ms", "5"), END, first_offset=10)
    assert list(image.to_json()["topics"]) == ["t"]
    assert image.to_json()["configs"] == {"TOPIC:t": {"retention.ms": "5"}}
    assert image.transaction is None
    assert image.provenance.offset == 13


def test_transaction_records_are_invisible_until_end():
    image = replayed(topic("a", uuid(1)), BEGIN, topic("b", uuid(2)))
    assert list(image.to_json()["topics"]) == ["a"]
    assert image.provenance.offset == 0
    image.apply(END, 3, 3000, 1)
    assert list(image.to_json()["topics"]) == ["a", "b"]


def test_aborted_transaction_never_reaches_the_image():
    before = replayed(topic("a", uuid(1)), config(2, "a", "k", "v"))
    image = replayed(
        topic("a", uuid(1)), config(2, "a", "k", "v"),
        BEGIN, rec("REMOVE_TOPIC_RECORD", topicId=uuid(1)), topic("b", uuid(2)), ABORT,
    )
    assert state(image) == state(before)
    assert image.transaction is None
    assert image.provenance.offset == 5
    assert image.problems == []


def test_abort_then_rebootstrap_as_the_new_controller_writes_it():
    mv = rec("FEATURE_LEVEL_RECORD", name="metadata.version", featureLevel=21)
    image = replayed(BEGIN, mv, ABORT, BEGIN, mv, rec("ZK_MIGRATION_STATE_RECORD", zkMigrationState=0), END)
    assert image.to_json()["features"] == {"metadata.version": 21}
    assert image.problems == []


def test_open_transaction_at_the_end_is_not_applied_and_reported():
    result = replay(entries(topic("a", uuid(1)), NOOP, BEGIN, topic("b", uuid(2)), partition(uuid(2), 0, [1])))
    assert list(result.image.to_json()["topics"]) == ["a"]
    assert result.open_transaction is not None
    assert result.open_transaction.begin_offset == 2
    assert result.open_transaction.name == "Bootstrap records"
    assert result.image.to_json()["provenance"]["offset"] == 1


def test_until_inside_a_transaction_shows_the_pre_begin_image():
    log = entries(topic("a", uuid(1)), BEGIN, topic("b", uuid(2)), END, NOOP)
    assert replay(log, until=2).open_transaction is not None
    assert list(replay(log, until=2).image.to_json()["topics"]) == ["a"]
    assert list(replay(log, until=3).image.to_json()["topics"]) == ["a", "b"]
    assert replay(log, until=3).open_transaction is None


def test_problem_inside_a_committed_transaction_is_reported_at_its_offset():
    image = replayed(BEGIN, rec("FENCE_BROKER_RECORD", id=7, epoch=1), topic("t", uuid(1)), END)
    assert [(p.offset, p.type) for p in image.problems] == [(1, "FENCE_BROKER_RECORD")]
    assert list(image.to_json()["topics"]) == ["t"]


def test_unbalanced_transaction_markers_are_problems():
    image = replayed(END, ABORT, BEGIN, BEGIN, topic("t", uuid(1)), END)
    assert [(p.offset, p.type) for p in image.problems] == [
        (0, "END_TRANSACTION_RECORD"), (1, "ABORT_TRANSACTION_RECORD"), (3, "BEGIN_TRANSACTION_RECORD"),
    ]
    assert list(image.to_json()["topics"]) == ["t"]


# --- snapshots and resuming ----------------------------------------------------------------------


SNAPSHOT_HEADER = rec("SNAPSHOT_HEADER", version=0, lastContainedLogTimestamp=777)
SNAPSHOT_FOOTER = rec("SNAPSHOT_FOOTER", version=0)


def test_snapshot_replaces_the_whole_state():
    old = replayed(register_broker(1), topic("gone", uuid(9)), config(4, "", "k", "v"))
    snapshot = load_snapshot(
        entries(SNAPSHOT_HEADER, register_broker(2), topic("t", uuid(1)), partition(uuid(1), 0, [2]),
                SNAPSHOT_FOOTER, epoch=4),
        end_offset=120, epoch=4,
    )
    assert list(snapshot.to_json()["brokers"]) == ["2"]
    assert list(snapshot.to_json()["topics"]) == ["t"]
    assert snapshot.to_json()["configs"] == {}
    assert snapshot.to_json()["provenance"] == {"offset": 119, "epoch": 4, "timestamp": 777}
    assert list(old.to_json()["brokers"]) == ["1"]


def test_replay_after_a_snapshot_skips_records_it_already_covers():
    snapshot = load_snapshot(entries(SNAPSHOT_HEADER, topic("t", uuid(1)), partition(uuid(1), 0, [1, 2])),
                             end_offset=3, epoch=1)
    log = entries(topic("t", uuid(1)), partition(uuid(1), 0, [1, 2]),
                  rec("PARTITION_CHANGE_RECORD", topicId=uuid(1), partitionId=0, leader=2),
                  rec("PARTITION_CHANGE_RECORD", topicId=uuid(1), partitionId=0, isr=[2]))
    result = replay(log, image=snapshot)
    assert result.records == 1
    p = result.image.to_json()["topics"]["t"]["partitions"]["0"]
    assert (p["leader"], p["isr"], p["leaderEpoch"], p["partitionEpoch"]) == (1, [2], 0, 1)
    assert result.image.provenance.offset == 3


def test_log_and_snapshot_of_the_same_history_agree():
    history = [
        rec("FEATURE_LEVEL_RECORD", name="metadata.version", featureLevel=21),
        register_broker(1, epoch=2, fenced=True),
        rec("BROKER_REGISTRATION_CHANGE_RECORD", brokerId=1, brokerEpoch=2, fenced=-1),
        topic("t", uuid(1)),
        partition(uuid(1), 0, [1]),
        rec("PARTITION_CHANGE_RECORD", topicId=uuid(1), partitionId=0, leader=1),
    ]
    from_log = replay(entries(*history)).image
    snapshot = load_snapshot(entries(
        SNAPSHOT_HEADER,
        history[0],
        register_broker(1, epoch=2, fenced=False),
        topic("t", uuid(1)),
        partition(uuid(1), 0, [1], leaderEpoch=1, partitionEpoch=1),
        SNAPSHOT_FOOTER,
    ), end_offset=6, epoch=1)
    assert state(from_log) == state(snapshot)
    assert snapshot.provenance.offset == from_log.provenance.offset == 5


# --- raft ----------------------------------------------------------------------------------------


def test_leader_change_tracks_the_raft_leader_and_epoch():
    image = ClusterImage.empty()
    image.apply(rec("LEADER_CHANGE", version=0, leaderId=3, voters=[{"voterId": 1}, {"voterId": 3}],
                    grantingVoters=[{"voterId": 3}]), 0, 0, 7)
    image.apply(NOOP, 1, 0, 7)
    assert image.raft.to_json() == {"leaderId": 3, "leaderEpoch": 7, "kraftVersion": 0,
                                    "voters": [{"voterId": 1}, {"voterId": 3}]}
    image.apply(NOOP, 2, 0, 8)  # a new epoch whose LeaderChange was not seen
    assert (image.raft.leader_id, image.raft.leader_epoch) == (-1, 8)
    assert image.provenance.offset == 2


def test_kraft_version_and_voters_control_records():
    voters = [{"voterId": 1, "voterDirectoryId": uuid(4), "endpoints": [], "kRaftVersionFeature": {}}]
    image = replayed(rec("KRAFT_VERSION", version=0, kRaftVersion=1), rec("KRAFT_VOTERS", version=0, voters=voters))
    assert image.raft.kraft_version == 1
    assert image.raft.voters == voters
    assert image.problems == []


def test_control_records_inside_a_transaction_apply_at_once():
    image = replayed(BEGIN, rec("LEADER_CHANGE", leaderId=2, voters=[]), ABORT, epoch=5)
    assert (image.raft.leader_id, image.raft.leader_epoch) == (2, 5)
