"""PartitionChangeRecord merge: every sentinel and epoch rule of reference §6.2."""

import pytest
from test_state_support import change, partition, replayed, topic, uuid

from kraftlog.state.ids import MIGRATING, UNASSIGNED

T = uuid(1)
D1, D2, D3, D4 = (uuid(100 + i) for i in range(1, 5))


def after(*changes, **initial) -> dict:
    """Partition t-0 (replicas [1, 2, 3], leader 1, leaderEpoch 5, partitionEpoch 7) after ``changes``."""
    fields = {"leaderEpoch": 5, "partitionEpoch": 7, **initial}
    image = replayed(topic("t", T), partition(T, 0, [1, 2, 3], **fields), *changes)
    assert image.problems == []
    return image.to_json()["topics"]["t"]["partitions"]["0"]


def test_absent_leader_means_no_change_and_no_leader_epoch_bump():
    p = after(change(T, 0, isr=[1, 2]))
    assert (p["leader"], p["leaderEpoch"], p["partitionEpoch"]) == (1, 5, 8)


def test_explicit_minus_two_is_the_same_as_absent():
    p = after(change(T, 0, leader=-2))
    assert (p["leader"], p["leaderEpoch"], p["partitionEpoch"]) == (1, 5, 8)


def test_leader_minus_one_means_no_leader_and_bumps_the_leader_epoch():
    p = after(change(T, 0, leader=-1))
    assert (p["leader"], p["leaderEpoch"], p["partitionEpoch"]) == (-1, 6, 8)


def test_same_leader_id_still_bumps_the_leader_epoch():
    p = after(change(T, 0, leader=1))
    assert (p["leader"], p["leaderEpoch"], p["partitionEpoch"]) == (1, 6, 8)


def test_new_leader_bumps_the_leader_epoch():
    p = after(change(T, 0, leader=3), change(T, 0, leader=2))
    assert (p["leader"], p["leaderEpoch"], p["partitionEpoch"]) == (2, 7, 9)


def test_an_empty_change_still_bumps_the_partition_epoch():
    p = after(change(T, 0), change(T, 0))
    assert (p["leaderEpoch"], p["partitionEpoch"]) == (5, 9)
    assert p["isr"] == [1, 2, 3]


@pytest.mark.parametrize(
    ("isr_fields", "expected"),
    [({}, [1, 2, 3]), ({"isr": None}, [1, 2, 3]), ({"isr": []}, []), ({"isr": [3, 1]}, [3, 1])],
    ids=["absent", "null", "empty", "list"],
)
def test_isr_absent_or_null_is_unchanged_and_empty_is_real(isr_fields, expected):
    assert after(change(T, 0, **isr_fields))["isr"] == expected


@pytest.mark.parametrize(
    ("start", "value", "expected"),
    [(0, -1, 0), (1, -1, 1), (1, 0, 0), (0, 1, 1)],
    ids=["-1 keeps RECOVERED", "-1 keeps RECOVERING", "0 recovers", "1 marks RECOVERING"],
)
def test_leader_recovery_state(start, value, expected):
    p = after(change(T, 0, leaderRecoveryState=value), leaderRecoveryState=start)
    assert p["leaderRecoveryState"] == expected


def test_absent_leader_recovery_state_is_unchanged():
    assert after(change(T, 0, leader=2), leaderRecoveryState=1)["leaderRecoveryState"] == 1


def test_unknown_leader_recovery_state_is_a_problem_and_nothing_changes():
    image = replayed(topic("t", T), partition(T, 0, [1, 2]), change(T, 0, leader=2, leaderRecoveryState=7))
    assert [p.message for p in image.problems] == ["unknown leaderRecoveryState 7"]
    p = image.to_json()["topics"]["t"]["partitions"]["0"]
    assert (p["leader"], p["leaderEpoch"], p["partitionEpoch"]) == (1, 0, 0)


def test_unclean_election_record():
    p = after(change(T, 0, leader=3, isr=[3], leaderRecoveryState=1), isr=[1])
    assert (p["leader"], p["isr"], p["leaderRecoveryState"], p["leaderEpoch"]) == (3, [3], 1, 6)


def test_replica_lists_replace_when_present():
    p = after(change(T, 0, replicas=[1, 2, 3, 4], addingReplicas=[4]),
              change(T, 0, removingReplicas=[1]))
    assert (p["replicas"], p["addingReplicas"], p["removingReplicas"]) == ([1, 2, 3, 4], [4], [1])
    p = after(change(T, 0, addingReplicas=[]), addingReplicas=[4])
    assert p["addingReplicas"] == []


def test_directories_null_keeps_the_old_ones():
    assert after(change(T, 0, isr=[1]), directories=[D1, D2, D3])["directories"] == [D1, D2, D3]


def test_directories_list_replaces():
    assert after(change(T, 0, directories=[D3, D2, D1]), directories=[D1, D2, D3])["directories"] == [D3, D2, D1]


def test_directories_all_migrating_stay_migrating_for_every_replica():
    p = after(change(T, 0, directories=[MIGRATING] * 3))
    assert p["directories"] == [MIGRATING] * 3


# Kafka's rule for replicas without directories (PartitionRegistration.merge, apache/kafka 4.2.0-rc1
# PartitionRegistration.java lines 241-245 and 221): the old directories stay where they are.


def test_new_replicas_without_directories_keep_the_old_directories_in_place():
    p = after(change(T, 0, replicas=[3, 2, 1]), directories=[D1, D2, D3])
    assert p["directories"] == [D1, D2, D3]


def test_a_replica_count_change_without_directories_is_refused_as_kafka_refuses_it():
    image = replayed(topic("t", T), partition(T, 0, [1, 2, 3], directories=[D1, D2, D3]),
                     change(T, 0, replicas=[2, 3, 4, 5]))
    assert [p.message for p in image.problems] == ["3 directories for 4 replicas"]
    assert image.to_json()["topics"]["t"]["partitions"]["0"]["replicas"] == [1, 2, 3]


def test_pre_jbod_reassignment_stays_migrating_for_every_replica():
    p = after(change(T, 0, replicas=[3, 4]))
    assert p["directories"] == [MIGRATING, MIGRATING]


def test_empty_directories_are_migrating_for_every_replica():
    p = after(change(T, 0, directories=[]), directories=[D1, D2, D3])
    assert p["directories"] == [MIGRATING] * 3


def test_a_placed_replica_and_unassigned_ones_are_kept_as_written():
    p = after(change(T, 0, replicas=[3, 4], directories=[MIGRATING, UNASSIGNED]))
    assert p["directories"] == [MIGRATING, UNASSIGNED]


def test_new_replicas_with_directories_use_them():
    p = after(change(T, 0, replicas=[4, 1], directories=[D4, D1]), directories=[D1, D2, D3])
    assert (p["replicas"], p["directories"]) == ([4, 1], [D4, D1])


def test_directories_not_matching_the_replicas_are_a_problem():
    image = replayed(topic("t", T), partition(T, 0, [1, 2, 3]), change(T, 0, replicas=[1, 2], directories=[D1]))
    assert [p.message for p in image.problems] == ["1 directories for 2 replicas"]
    assert image.to_json()["topics"]["t"]["partitions"]["0"]["replicas"] == [1, 2, 3]


@pytest.mark.parametrize("name", ["eligibleLeaderReplicas", "lastKnownElr"])
def test_elr_fields_null_unchanged_empty_and_list_replace(name):
    assert after(change(T, 0), **{name: [2]})[name] == [2]
    assert after(change(T, 0, **{name: None}), **{name: [2]})[name] == [2]
    assert after(change(T, 0, **{name: []}), **{name: [2]})[name] == []
    assert after(change(T, 0, **{name: [3, 2]}))[name] == [3, 2]


def test_elr_change_alone_does_not_bump_the_leader_epoch():
    p = after(change(T, 0, isr=[], eligibleLeaderReplicas=[1, 2], lastKnownElr=[3]))
    assert (p["isr"], p["eligibleLeaderReplicas"], p["lastKnownElr"]) == ([], [1, 2], [3])
    assert (p["leaderEpoch"], p["partitionEpoch"]) == (5, 8)


def test_change_for_a_missing_partition_is_a_problem():
    image = replayed(topic("t", T), change(T, 3, leader=1))
    assert [p.message for p in image.problems] == ["PartitionChangeRecord for t-3, which does not exist"]


@pytest.mark.parametrize("record,table", [("PartitionChangeRecord", "PARTITION_CHANGE_RECORD"),
                                          ("PartitionRecord", "PARTITION_RECORD")])
def test_the_merge_tables_name_every_field_of_the_schema(record, table):
    """A field the schema gains and the merge table does not name would be folded as if absent."""
    from kraftlog.schema import message_of
    from kraftlog.state import topics
    declared = [f.json for f in message_of(record).fields]
    assert sorted(getattr(topics, table)) == sorted(declared)


# ``shaped_change``: the merge of a change's shape unrolled, held against ``merge_partition`` (the table read
# field by field), and refusing the shapes it was not built for.

def test_an_isr_change_and_an_election_give_the_literal_partition_by_their_shaped_merge(monkeypatch):
    from kraftlog.state import topics
    monkeypatch.setattr(topics, "_shaped", {})  # as a new process has it (other tests' shapes may fill it)
    monkeypatch.setattr(topics, "_run", topics._run)
    image = replayed(topic("t", T), partition(T, 0, [1, 2, 3], leaderEpoch=5, partitionEpoch=7),
                     change(T, 0, isr=[1, 2]), change(T, 0, leader=2, isr=[2]), change(T, 0, leader=-2))
    assert image.problems == []
    assert image.to_json()["topics"]["t"]["partitions"]["0"] == {
        "replicas": [1, 2, 3], "isr": [2], "removingReplicas": [], "addingReplicas": [], "leader": 2,
        "leaderRecoveryState": 0, "leaderEpoch": 6, "partitionEpoch": 10, "directories": [MIGRATING] * 3,
        "eligibleLeaderReplicas": [], "lastKnownElr": []}
    for shape in [("partitionId", "topicId", "isr"), ("partitionId", "topicId", "leader", "isr"),
                  ("partitionId", "topicId", "leader")]:
        assert topics._shaped[shape] is not topics._unshaped


@pytest.mark.parametrize("shape", [
    ("partitionId", "topicId", "replicas"), ("partitionId", "topicId", "isr", "directories"),
    ("partitionId", "topicId", "leaderRecoveryState"), ("partitionId", "topicId", "isr", "foo"),
    ("partitionId", "leader"), ("topicId", "isr"), (),
], ids=["replicas", "directories", "recovery state", "unknown field", "no topicId", "no partitionId", "empty"])
def test_shapes_it_was_not_built_for_are_merged_field_by_field(shape):
    from kraftlog.state import topics
    assert topics.shaped_change(shape) is topics._unshaped


def test_shaped_merges_equal_the_table_read_field_by_field_on_random_changes(monkeypatch):
    """Random changes (every field of the table, null and unchanged values, missing topics and partitions,
    values of other types, unknown fields) in random orders: the image and the problems either way."""
    import json
    import random

    from kraftlog.state import topics
    from kraftlog.state.problems import ReplayProblem
    # as a new process has it: shapes other tests kept count towards ``_SHAPES_KEPT``, and with it full
    # no random shape would get a shaped merge to compare
    monkeypatch.setattr(topics, "_shaped", {})
    monkeypatch.setattr(topics, "_run", topics._run)
    values = {
        "isr": [None, [], [1], [2, 3], (4,), 5], "removingReplicas": [None, [], [3], 5], "addingReplicas": [None, [4], 5],
        "eligibleLeaderReplicas": [None, [], [1, 2], 5], "lastKnownElr": [None, [3], 5],
        "leader": [-2, -1, 1, 3, None, "x"], "leaderRecoveryState": [-1, 0, 1, 7],
        "replicas": [None, [1, 2, 3], [3, 4]], "directories": [None, [], [D1, D2, D3]], "foo": [1],
    }
    rng = random.Random(18)

    def random_change() -> dict:
        names = rng.sample(sorted(values), rng.randint(0, 4))
        data = {name: rng.choice(values[name]) for name in names}
        keys = [("topicId", rng.choice([T, T, T, uuid(9)])), ("partitionId", rng.choice([0, 0, 0, 1]))]
        for name, value in keys:
            if rng.random() < 0.97:
                data[name] = value
        return dict(rng.sample(list(data.items()), len(data)))

    shaped = 0
    for _ in range(3000):
        changes = [random_change(), random_change()]
        got = []
        for apply in (topics.Topics._partition_change, topics.Topics._partition_change_merged):
            t = topics.Topics()
            t._topic({"name": "t", "topicId": T})
            t._partition({"partitionId": 0, "topicId": T, "replicas": [1, 2, 3], "isr": [1, 2], "leader": 1,
                          "leaderEpoch": 5, "partitionEpoch": 7, "leaderRecoveryState": 1})
            for data in changes:
                try:
                    apply(t, data)
                    got.append(json.dumps(t.by_id, default=repr))  # key order too: it is the image's JSON's
                except (ReplayProblem, KeyError, TypeError, ValueError) as exc:
                    got.append((type(exc), str(exc), json.dumps(t.by_id, default=repr)))
        assert got[0:2] == got[2:4], changes
        shaped += sum(topics._shaped.get(tuple(data), topics._unshaped) is not topics._unshaped for data in changes)
    assert shaped > 600  # the comparison reached the shaped merges


def test_once_the_shapes_kept_are_full_a_new_shape_is_merged_field_by_field(monkeypatch):
    """A log of more shapes than are kept: the others take ``merge_partition`` (no compile per record), with
    the literal partition the shaped merge gives."""
    from kraftlog.state import topics
    monkeypatch.setattr(topics, "_shaped", {})
    monkeypatch.setattr(topics, "_run", topics._run)
    monkeypatch.setattr(topics, "_SHAPES_KEPT", 1)
    compiled = []
    real = topics._compiled
    monkeypatch.setattr(topics, "_compiled", lambda *a, **k: compiled.append(a[1]) or real(*a, **k))
    image = replayed(topic("t", T), partition(T, 0, [1, 2, 3], leaderEpoch=5, partitionEpoch=7),
                     change(T, 0, isr=[1, 2]), change(T, 0, leader=2, isr=[2]), change(T, 0, leader=2, isr=[2]),
                     change(T, 0, leader=-2))
    assert image.problems == []
    assert image.to_json()["topics"]["t"]["partitions"]["0"] == {
        "replicas": [1, 2, 3], "isr": [2], "removingReplicas": [], "addingReplicas": [], "leader": 2,
        "leaderRecoveryState": 0, "leaderEpoch": 7, "partitionEpoch": 11, "directories": [MIGRATING] * 3,
        "eligibleLeaderReplicas": [], "lastKnownElr": []}
    assert list(topics._shaped) == [("partitionId", "topicId", "isr")]
    assert compiled == ["change of partitionId, topicId, isr", "change run"]
