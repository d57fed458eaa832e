"""Views of an image: the Metadata response, the metadata-shell tree, and diffs."""

from test_state_support import change, config, partition, rec, register_broker, replayed, topic, uuid

from kraftlog.state.diff import Change, diff
from kraftlog.state.ids import LOST, MIGRATING, UNASSIGNED
from kraftlog.state.metadata_view import metadata_response
from kraftlog.state.tree import render_tree

T = uuid(1)
D1, D2 = uuid(101), uuid(102)


def cluster(*more):
    """Brokers 1 (rack a) and 2 (rack b) unfenced with two listeners, broker 3 fenced; topic t."""
    return replayed(
        register_broker(1, rack="a", listeners=("INTERNAL", "EXTERNAL")),
        register_broker(2, rack="b", listeners=("INTERNAL", "EXTERNAL")),
        register_broker(3, fenced=True, listeners=("INTERNAL",)),
        topic("t", T),
        partition(T, 0, [1, 2, 3]),
        *more,
    )


# --- Metadata response ---------------------------------------------------------------------------


def test_metadata_lists_unfenced_brokers_on_their_first_listener():
    assert metadata_response(cluster())["brokers"] == [
        {"nodeId": 1, "host": "b1.internal", "port": 9092, "rack": "a"},
        {"nodeId": 2, "host": "b2.internal", "port": 9092, "rack": "b"},
    ]


def test_metadata_for_a_named_listener_skips_brokers_without_it():
    image = cluster(register_broker(4, listeners=("INTERNAL",)))
    assert metadata_response(image, "EXTERNAL")["brokers"] == [
        {"nodeId": 1, "host": "b1.external", "port": 9093, "rack": "a"},
        {"nodeId": 2, "host": "b2.external", "port": 9093, "rack": "b"},
    ]


def test_metadata_partition_with_live_leader_and_fenced_replica_offline():
    (t,) = metadata_response(cluster())["topics"]
    assert (t["name"], t["topicId"], t["isInternal"]) == ("t", T, False)
    assert t["partitions"] == [{
        "partitionIndex": 0, "error": "NONE", "leaderId": 1, "leaderEpoch": 0,
        "replicaNodes": [1, 2, 3], "isrNodes": [1, 2, 3], "offlineReplicas": [3],
    }]


def test_metadata_leader_fenced_or_unregistered_or_none_is_not_available():
    for leader_record in (
        rec("BROKER_REGISTRATION_CHANGE_RECORD", brokerId=1, brokerEpoch=10, fenced=1),
        rec("UNREGISTER_BROKER_RECORD", brokerId=1, brokerEpoch=10),
        change(T, 0, leader=-1),
    ):
        (p,) = metadata_response(cluster(leader_record))["topics"][0]["partitions"]
        assert (p["error"], p["leaderId"]) == ("LEADER_NOT_AVAILABLE", -1), leader_record


def test_metadata_leader_epoch_is_kept_when_the_leader_is_not_available():
    (p,) = metadata_response(cluster(change(T, 0, leader=3)))["topics"][0]["partitions"]
    assert (p["error"], p["leaderId"], p["leaderEpoch"]) == ("LEADER_NOT_AVAILABLE", -1, 1)


def test_metadata_leader_without_the_listener():
    image = cluster(register_broker(4, listeners=("INTERNAL",)), partition(T, 1, [4, 1]))
    p = metadata_response(image, "EXTERNAL")["topics"][0]["partitions"][1]
    assert (p["error"], p["leaderId"], p["offlineReplicas"]) == ("LISTENER_NOT_FOUND", -1, [4])


def test_metadata_offline_replicas_by_directory():
    image = cluster(
        register_broker(1, log_dirs=[D1]),
        register_broker(2, log_dirs=[D1]),
        partition(T, 1, [1, 2], directories=[D1, D2]),
        partition(T, 2, [1, 2], directories=[LOST, UNASSIGNED]),
        partition(T, 3, [5, 1], directories=[MIGRATING, MIGRATING]),
    )
    offline = {p["partitionIndex"]: p["offlineReplicas"] for p in metadata_response(image)["topics"][0]["partitions"]}
    assert offline == {0: [3], 1: [2], 2: [1], 3: [5]}


def test_metadata_broker_without_log_dirs_counts_every_directory_online():
    image = cluster(partition(T, 1, [1, 2], directories=[D1, D2]))
    assert metadata_response(image)["topics"][0]["partitions"][1]["offlineReplicas"] == []


def test_metadata_internal_topics_and_partition_order():
    image = cluster(topic("__consumer_offsets", uuid(2)), *(partition(uuid(2), p, [1]) for p in (10, 2)))
    topics = metadata_response(image)["topics"]
    assert [(t["name"], t["isInternal"]) for t in topics] == [("__consumer_offsets", True), ("t", False)]
    assert [p["partitionIndex"] for p in topics[0]["partitions"]] == [2, 10]


# --- tree ----------------------------------------------------------------------------------------


def test_a_topic_name_with_a_line_break_cannot_forge_tree_lines():
    image = cluster(topic("evil\n  forged:", uuid(2)), partition(uuid(2), 0, [1]))
    lines = render_tree(image, "/image/topics").splitlines()
    assert "  evil\\u000A  forged::" in lines and "      evil\\u000A  forged:" in lines
    assert "forged:" not in [line.strip() for line in lines]
    assert "  t:" in lines  # a legal name prints as Kafka's shell prints it


def test_tree_layout_and_leaves():
    image = cluster(
        rec("FEATURE_LEVEL_RECORD", name="metadata.version", featureLevel=21),
        rec("FEATURE_LEVEL_RECORD", name="group.version", featureLevel=1),
        config(4, "", "num.io.threads", "16"),
        config(2, "t", "retention.ms", "5"),
        rec("PRODUCER_IDS_RECORD", brokerId=1, brokerEpoch=10, nextProducerId=3000),
        rec("CLIENT_QUOTA_RECORD", entity=[{"entityType": "user", "entityName": "al(ice)"},
                                           {"entityType": "client-id", "entityName": None}],
            key="producer_byte_rate", value=10485760.0, remove=False),
    )
    text = render_tree(image)
    lines = text.splitlines()
    assert [line for line in lines if not line.startswith(" ")] == [
        "acls:", "clientQuotas:", "cluster:", "configs:", "delegationToken:", "features:",
        "producerIds:", "provenance:", "scram:", "topics:",
    ]
    assert "  offset 10, epoch 1, time 1970-01-01T00:00:10Z[UTC]" in lines
    assert "  metadataVersion:\n    3.9-IV0\n" in text
    assert "  finalized_group.version:\n    1\n" in text
    assert "  BROKER:\n    num.io.threads:\n      16\n" in text
    assert "  TOPIC:t:\n    retention.ms:\n      5\n" in text
    assert "  clientId(<default>)_user(al\\(ice\\)):\n    producer_byte_rate:\n      1.048576E7\n" in text
    assert "  nextProducerId:\n    3000\n" in text
    assert (
        "    1:\n      BrokerRegistration(id=1, epoch=10, incarnationId=" + uuid(1001) + ", listeners=["
        "Endpoint(listenerName='EXTERNAL', securityProtocol=PLAINTEXT, host='b1.external', port=9093), "
        "Endpoint(listenerName='INTERNAL', securityProtocol=PLAINTEXT, host='b1.internal', port=9092)], "
        "supportedFeatures={metadata.version: 1-21}, rack=Optional[a], fenced=false, "
        "inControlledShutdown=false, isMigratingZkBroker=false, directories=[])\n"
    ) in text


def test_tree_of_one_topic_path_and_a_missing_path():
    image = cluster(change(T, 0, isr=[1, 2], leader=2, leaderRecoveryState=1))
    assert render_tree(image, "/image/topics/byName/t") == (
        "0:\n"
        f"  PartitionRegistration(replicas=[1, 2, 3], directories=[{MIGRATING}, {MIGRATING}, {MIGRATING}], "
        "isr=[1, 2], removingReplicas=[], addingReplicas=[], elr=[], lastKnownElr=[], leader=2, "
        "leaderRecoveryState=RECOVERING, leaderEpoch=1, partitionEpoch=1)\n"
        "id:\n"
        f"  {T}\n"
        "name:\n"
        "  t\n"
    )
    assert render_tree(image, f"/image/topics/byId/{T}/name") == "t\n"
    assert render_tree(image, "/image/topics/byName/nope") == "tree: /image/topics/byName/nope: No such file or directory.\n"


def test_tree_redacts_scram_unless_asked():
    image = replayed(rec("USER_SCRAM_CREDENTIAL_RECORD", name="alice", mechanism=2, salt=b"\x01\xab",
                         storedKey=b"\x02", serverKey=b"\x03", iterations=4096))
    assert render_tree(image, "/image/scram") == (
        "SCRAM-SHA-512:\n  alice:\n    ScramCredentialData(salt=[redacted], storedKey=[redacted], "
        "serverKey=[redacted], iterations=[redacted])\n"
    )
    assert render_tree(image, "/image/scram/SCRAM-SHA-512/alice", redact=False) == (
        "ScramCredentialData(salt=01ab, storedKey=02, serverKey=03, iterations=4096)\n"
    )


def test_tree_acl_leaf_uses_enum_names():
    image = replayed(rec("ACCESS_CONTROL_ENTRY_RECORD", id=uuid(5), resourceType=2, resourceName="orders",
                         patternType=4, principal="User:bob", host="*", operation=4, permissionType=2))
    assert render_tree(image, "/image/acls") == (
        f"{uuid(5)}:\n  StandardAcl(resourceType=TOPIC, resourceName=orders, patternType=PREFIXED, "
        "principal=User:bob, host=*, operation=WRITE, permissionType=DENY)\n"
    )


# --- diff ----------------------------------------------------------------------------------------


def test_diff_of_identical_images_is_empty():
    assert diff(cluster(), cluster()) == []


def test_diff_reports_added_removed_and_changed_entities():
    before = cluster(config(2, "t", "retention.ms", "5"), topic("old", uuid(3)))
    after = cluster(
        config(2, "t", "retention.ms", "5"), topic("old", uuid(3)),
        change(T, 0, leader=2),
        rec("REMOVE_TOPIC_RECORD", topicId=uuid(3)),
        config(4, "", "num.io.threads", "16"),
        rec("UNREGISTER_BROKER_RECORD", brokerId=3, brokerEpoch=10),
    )
    changes = diff(before, after)
    assert [(c.domain, c.key, c.kind) for c in changes] == [
        ("brokers", "3", "removed"),
        ("topics", "old", "removed"),
        ("partitions", "t-0", "changed"),
        ("configs", "BROKER:", "added"),
    ]
    partition_change = changes[2]
    assert (partition_change.before["leader"], partition_change.after["leader"]) == (1, 2)
    assert (partition_change.before["leaderEpoch"], partition_change.after["leaderEpoch"]) == (0, 1)
    assert changes[3].to_json() == {"domain": "configs", "key": "BROKER:", "kind": "added", "before": None,
                                    "after": {"num.io.threads": "16"}}


def test_diff_sees_a_recreated_topic_as_a_changed_id():
    before = cluster()
    after = cluster(rec("REMOVE_TOPIC_RECORD", topicId=T), topic("t", uuid(9)), partition(uuid(9), 0, [2]))
    assert diff(before, after)[0] == Change("topics", "t", "changed", {"topicId": T}, {"topicId": uuid(9)})


def test_diff_orders_partitions_numerically_and_covers_scalars():
    before = cluster(*(partition(T, p, [1]) for p in (2, 10)))
    after = cluster(*(partition(T, p, [2]) for p in (2, 10)), rec("ZK_MIGRATION_STATE_RECORD", zkMigrationState=1),
                    rec("PRODUCER_IDS_RECORD", brokerId=1, brokerEpoch=1, nextProducerId=1000))
    assert [(c.domain, c.key) for c in diff(before, after)] == [
        ("zkMigrationState", "zkMigrationState"), ("partitions", "t-2"), ("partitions", "t-10"),
        ("producerIds", "nextProducerId"),
    ]


def test_diff_hides_secret_changes_unless_unredacted():
    def with_salt(salt: bytes):
        return replayed(rec("USER_SCRAM_CREDENTIAL_RECORD", name="a", mechanism=1, salt=salt, storedKey=b"k",
                            serverKey=b"s", iterations=4096))

    assert diff(with_salt(b"1"), with_salt(b"2")) == []
    assert [c.key for c in diff(with_salt(b"1"), with_salt(b"2"), redact=False)] == ["SCRAM-SHA-256/a"]
