"""Each metadata record type's effect on the image (reference §6.1)."""

from test_state_support import config, partition, rec, register_broker, replayed, topic, uuid

from kraftlog.state.ids import MIGRATING
from kraftlog.state.tree import image_tree


def only_problem(image) -> str:
    assert len(image.problems) == 1, image.problems
    return image.problems[0].message


# --- features -----------------------------------------------------------------------------


def test_feature_levels_set_replace_and_level_zero_removes():
    image = replayed(
        rec("FEATURE_LEVEL_RECORD", name="metadata.version", featureLevel=20),
        rec("FEATURE_LEVEL_RECORD", name="group.version", featureLevel=1),
        rec("FEATURE_LEVEL_RECORD", name="transaction.version", featureLevel=2),
        rec("FEATURE_LEVEL_RECORD", name="metadata.version", featureLevel=21),
        rec("FEATURE_LEVEL_RECORD", name="group.version", featureLevel=0),
    )
    assert image.to_json()["features"] == {"metadata.version": 21, "transaction.version": 2}
    assert image.features.metadata_version == 21


def test_no_metadata_version_record_means_none():
    """Kafka 4.2 FeaturesImage.java line 40: ``EMPTY`` has ``Optional.empty()``, not 3.0-IV1."""
    image = replayed()
    assert image.features.metadata_version is None
    assert image.to_json()["features"] == {}
    assert image_tree(image)["features"]["metadataVersion"] == "none"


def test_a_kraft_version_feature_level_record_is_ignored():
    """Kafka 4.2 FeaturesDelta.java line 69 (KAFKA-18979): kraft.version is not a finalized feature."""
    image = replayed(rec("FEATURE_LEVEL_RECORD", name="metadata.version", featureLevel=21),
                     rec("FEATURE_LEVEL_RECORD", name="kraft.version", featureLevel=1))
    assert image.to_json()["features"] == {"metadata.version": 21} and not image.problems


def test_a_metadata_version_below_3_3_iv3_is_reported_as_kafka_4_refuses_it():
    """Kafka 4.2 FeaturesDelta.java line 63: ``fromFeatureLevel`` throws below MINIMUM_VERSION (3.3-IV3)."""
    image = replayed(rec("FEATURE_LEVEL_RECORD", name="metadata.version", featureLevel=6))
    assert image.features.metadata_version == 6
    assert only_problem(image).startswith("metadata.version 3.3-IV2 is below 3.3-IV3: Kafka 4.x refuses this record")
    assert not replayed(rec("FEATURE_LEVEL_RECORD", name="metadata.version", featureLevel=7)).problems


def test_zk_migration_state_record_is_a_no_op_from_4_0():
    """Kafka 4.2 MetadataDelta.java line 252: ZK_MIGRATION_STATE_RECORD is kept readable but a no-op."""
    at_3_9 = replayed(rec("FEATURE_LEVEL_RECORD", name="metadata.version", featureLevel=21),
                      rec("ZK_MIGRATION_STATE_RECORD", zkMigrationState=3))
    at_4_0 = replayed(rec("FEATURE_LEVEL_RECORD", name="metadata.version", featureLevel=22),
                      rec("ZK_MIGRATION_STATE_RECORD", zkMigrationState=3))
    assert at_3_9.to_json()["zkMigrationState"] == "POST_MIGRATION"
    assert at_4_0.to_json()["zkMigrationState"] == "NONE"


def test_zk_migration_state_is_rendered_by_name():
    assert replayed().to_json()["zkMigrationState"] == "NONE"
    image = replayed(rec("ZK_MIGRATION_STATE_RECORD", zkMigrationState=3))
    assert image.to_json()["zkMigrationState"] == "POST_MIGRATION"


# --- brokers ------------------------------------------------------------------------------


def test_register_broker_replaces_the_whole_registration():
    image = replayed(
        register_broker(1, epoch=10, fenced=False, rack="r1", listeners=("PLAINTEXT", "EXTERNAL")),
        rec("BROKER_REGISTRATION_CHANGE_RECORD", brokerId=1, brokerEpoch=10, inControlledShutdown=1),
        register_broker(1, epoch=25, fenced=True),
    )
    broker = image.to_json()["brokers"]["1"]
    assert broker["brokerEpoch"] == 25
    assert broker["fenced"] is True
    assert broker["inControlledShutdown"] is False
    assert broker["rack"] is None
    assert [e["name"] for e in broker["endPoints"]] == ["PLAINTEXT"]
    assert list(broker) == ["brokerId", "brokerEpoch", "incarnationId", "endPoints", "rack", "fenced",
                            "inControlledShutdown", "features", "logDirs"]


def test_register_broker_v0_defaults_controlled_shutdown_and_log_dirs():
    data = dict(register_broker(2).data)
    for absent in ("inControlledShutdown", "logDirs", "isMigratingZkBroker"):
        del data[absent]
    broker = replayed(rec("REGISTER_BROKER_RECORD", **data)).to_json()["brokers"]["2"]
    assert broker["inControlledShutdown"] is False
    assert broker["logDirs"] == []


def test_broker_listeners_and_features_render_sorted_by_name():
    image = replayed(register_broker(1, listeners=("PLAINTEXT", "CONTROLLER", "EXTERNAL")))
    assert [e["name"] for e in image.to_json()["brokers"]["1"]["endPoints"]] == [
        "CONTROLLER", "EXTERNAL", "PLAINTEXT"
    ]
    # the advertised order stays available for the Metadata view's default listener
    assert image.brokers.registrations[1]["endPoints"][0]["name"] == "PLAINTEXT"


def test_log_dirs_are_kept_in_kafka_uuid_order():
    # Uuid.compareTo is signed: a first byte >= 0x80 sorts before 0x00
    high, low = "gAAAAAAAAAAAAAAAAAAAAA", uuid(500)
    image = replayed(register_broker(1, log_dirs=[low, high]))
    assert image.to_json()["brokers"]["1"]["logDirs"] == [high, low]


def test_unregister_removes_without_an_epoch_check():
    image = replayed(register_broker(1, epoch=10), rec("UNREGISTER_BROKER_RECORD", brokerId=1, brokerEpoch=99))
    assert image.to_json()["brokers"] == {}
    assert image.problems == []


def test_fence_and_unfence_with_matching_epoch():
    image = replayed(register_broker(1, epoch=10, fenced=True), rec("UNFENCE_BROKER_RECORD", id=1, epoch=10))
    assert image.to_json()["brokers"]["1"]["fenced"] is False
    image.apply(rec("FENCE_BROKER_RECORD", id=1, epoch=10), 2, 0, 1)
    assert image.to_json()["brokers"]["1"]["fenced"] is True
    assert image.problems == []


def test_fence_with_an_epoch_mismatch_is_a_problem_and_changes_nothing():
    image = replayed(register_broker(1, epoch=10, fenced=False), rec("FENCE_BROKER_RECORD", id=1, epoch=9))
    assert "epoch 9" in only_problem(image) and "epoch 10" in only_problem(image)
    assert image.problems[0].offset == 1
    assert image.problems[0].type == "FENCE_BROKER_RECORD"
    assert image.to_json()["brokers"]["1"]["fenced"] is False


def test_registration_change_fencing_values():
    def fenced_after(start_fenced: bool, value: int) -> bool:
        image = replayed(
            register_broker(1, epoch=10, fenced=start_fenced),
            rec("BROKER_REGISTRATION_CHANGE_RECORD", brokerId=1, brokerEpoch=10, fenced=value),
        )
        assert image.problems == []
        return image.to_json()["brokers"]["1"]["fenced"]

    assert fenced_after(True, -1) is False
    assert fenced_after(False, 1) is True
    assert fenced_after(True, 0) is True
    assert fenced_after(False, 0) is False


def test_registration_change_without_tags_changes_nothing():
    image = replayed(
        register_broker(1, epoch=10, fenced=True, log_dirs=[uuid(7)]),
        rec("BROKER_REGISTRATION_CHANGE_RECORD", brokerId=1, brokerEpoch=10),
    )
    assert image.to_json()["brokers"]["1"] == replayed(register_broker(1, 10, fenced=True, log_dirs=[uuid(7)])
                                                       ).to_json()["brokers"]["1"]


def test_registration_change_enters_controlled_shutdown_and_replaces_log_dirs():
    image = replayed(
        register_broker(1, epoch=10, log_dirs=[uuid(7), uuid(8)]),
        rec("BROKER_REGISTRATION_CHANGE_RECORD", brokerId=1, brokerEpoch=10, inControlledShutdown=1),
        rec("BROKER_REGISTRATION_CHANGE_RECORD", brokerId=1, brokerEpoch=10, logDirs=[uuid(9)]),
        rec("BROKER_REGISTRATION_CHANGE_RECORD", brokerId=1, brokerEpoch=10, logDirs=[]),
    )
    broker = image.to_json()["brokers"]["1"]
    assert broker["inControlledShutdown"] is True
    assert broker["logDirs"] == [uuid(9)]


def test_registration_change_epoch_mismatch_is_reported_not_applied():
    image = replayed(
        register_broker(1, epoch=10, fenced=True),
        rec("BROKER_REGISTRATION_CHANGE_RECORD", brokerId=1, brokerEpoch=11, fenced=-1),
    )
    assert "carries epoch 11" in only_problem(image)
    assert image.to_json()["brokers"]["1"]["fenced"] is True


def test_registration_change_for_unknown_broker_or_value_is_a_problem():
    image = replayed(rec("BROKER_REGISTRATION_CHANGE_RECORD", brokerId=4, brokerEpoch=1, fenced=1))
    assert "not registered" in only_problem(image)
    image = replayed(
        register_broker(1, epoch=10),
        rec("BROKER_REGISTRATION_CHANGE_RECORD", brokerId=1, brokerEpoch=10, fenced=2, logDirs=[uuid(3)]),
    )
    assert "fenced value 2" in only_problem(image)
    assert image.to_json()["brokers"]["1"]["logDirs"] == []


# --- controllers --------------------------------------------------------------------------


def test_register_controller_replaces():
    def controller(port: int):
        return rec(
            "REGISTER_CONTROLLER_RECORD", controllerId=3000, incarnationId=uuid(3), zkMigrationReady=False,
            endPoints=[{"name": "CONTROLLER", "host": "c", "port": port, "securityProtocol": 0}],
            features=[{"name": "kraft.version", "minSupportedVersion": 0, "maxSupportedVersion": 1},
                      {"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 21}],
        )

    image = replayed(controller(9093), controller(9094))
    assert image.to_json()["controllers"] == {
        "3000": {
            "controllerId": 3000, "incarnationId": uuid(3), "zkMigrationReady": False,
            "endPoints": [{"name": "CONTROLLER", "host": "c", "port": 9094, "securityProtocol": 0}],
            "features": [{"name": "kraft.version", "minSupportedVersion": 0, "maxSupportedVersion": 1},
                         {"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 21}],
        }
    }


def test_unregister_controller_removes_the_registration():
    """KIP-1312 (MetadataVersion 4.4-IV2): ``ClusterDelta.replay(UnregisterControllerRecord)`` removes it."""
    register = rec("REGISTER_CONTROLLER_RECORD", controllerId=3001, incarnationId=uuid(3), zkMigrationReady=False,
                   endPoints=[], features=[])
    image = replayed(register, rec("REGISTER_CONTROLLER_RECORD", **{**register.data, "controllerId": 3002}),
                     rec("UNREGISTER_CONTROLLER_RECORD", controllerId=3001))
    assert list(image.to_json()["controllers"]) == ["3002"] and not image.problems
    assert set(image_tree(image)["cluster"]["controllers"]) == {"3002"}


# --- topics -------------------------------------------------------------------------------


def test_topic_then_partition_record_v0_defaults():
    image = replayed(topic("orders", uuid(1)), partition(uuid(1), 0, [1, 2, 3]))
    assert image.to_json()["topics"] == {
        "orders": {
            "topicId": uuid(1),
            "partitions": {
                "0": {
                    "replicas": [1, 2, 3], "isr": [1, 2, 3], "removingReplicas": [], "addingReplicas": [],
                    "leader": 1, "leaderRecoveryState": 0, "leaderEpoch": 0, "partitionEpoch": 0,
                    "directories": [MIGRATING] * 3, "eligibleLeaderReplicas": [], "lastKnownElr": [],
                }
            },
        }
    }


def test_partition_record_replaces_the_partition():
    image = replayed(
        topic("t", uuid(1)),
        partition(uuid(1), 0, [1, 2], leaderEpoch=4, partitionEpoch=7, eligibleLeaderReplicas=[2]),
        partition(uuid(1), 0, [3], directories=[uuid(50)], leaderRecoveryState=1),
    )
    p = image.to_json()["topics"]["t"]["partitions"]["0"]
    assert (p["replicas"], p["leader"], p["leaderEpoch"], p["partitionEpoch"]) == ([3], 3, 0, 0)
    assert p["directories"] == [uuid(50)]
    assert p["leaderRecoveryState"] == 1
    assert p["eligibleLeaderReplicas"] == []


def test_partition_record_all_migrating_or_empty_directories():
    image = replayed(
        topic("t", uuid(1)),
        partition(uuid(1), 0, [1, 2], directories=[MIGRATING, MIGRATING]),
        partition(uuid(1), 1, [1, 2], directories=[]),
    )
    parts = image.to_json()["topics"]["t"]["partitions"]
    assert parts["0"]["directories"] == parts["1"]["directories"] == [MIGRATING, MIGRATING]


def test_partition_record_with_directories_of_wrong_length_is_a_problem():
    image = replayed(topic("t", uuid(1)), partition(uuid(1), 0, [1, 2], directories=[uuid(50)]))
    assert "1 directories for 2 replicas" in only_problem(image)
    assert image.to_json()["topics"]["t"]["partitions"] == {}


def test_partition_record_for_unknown_topic_is_a_problem():
    image = replayed(partition(uuid(9), 0, [1]))
    assert "does not exist" in only_problem(image)
    assert image.to_json()["topics"] == {}


def test_partitions_render_in_numeric_order():
    image = replayed(topic("t", uuid(1)), *(partition(uuid(1), p, [1]) for p in (10, 2, 1)))
    assert list(image.to_json()["topics"]["t"]["partitions"]) == ["1", "2", "10"]


def test_remove_topic_drops_partitions_and_its_configs_only():
    image = replayed(
        topic("orders", uuid(1)),
        config(2, "orders", "retention.ms", "1000"),
        partition(uuid(1), 0, [1]),
        topic("payments", uuid(2)),
        config(2, "payments", "retention.ms", "2000"),
        rec("REMOVE_TOPIC_RECORD", topicId=uuid(1)),
    )
    state = image.to_json()
    assert list(state["topics"]) == ["payments"]
    assert state["configs"] == {"TOPIC:payments": {"retention.ms": "2000"}}


def test_topic_deleted_and_recreated_gets_new_id_and_no_old_configs():
    image = replayed(
        topic("orders", uuid(1)),
        config(2, "orders", "cleanup.policy", "compact"),
        partition(uuid(1), 0, [1, 2], leaderEpoch=3),
        rec("REMOVE_TOPIC_RECORD", topicId=uuid(1)),
        topic("orders", uuid(2)),
        partition(uuid(2), 0, [2]),
    )
    state = image.to_json()
    assert state["topics"]["orders"]["topicId"] == uuid(2)
    assert state["topics"]["orders"]["partitions"]["0"]["replicas"] == [2]
    assert state["topics"]["orders"]["partitions"]["0"]["leaderEpoch"] == 0
    assert state["configs"] == {}
    # a change addressed to the old id no longer lands anywhere
    image.apply(rec("PARTITION_CHANGE_RECORD", topicId=uuid(1), partitionId=0, leader=2), 6, 0, 1)
    assert "does not exist" in only_problem(image)


def test_remove_unknown_topic_is_a_problem():
    assert "does not exist" in only_problem(replayed(rec("REMOVE_TOPIC_RECORD", topicId=uuid(5))))


def test_clear_elr_for_one_topic_or_all_bumps_partition_epoch_only():
    def elr_image(*more):
        return replayed(
            topic("a", uuid(1)),
            partition(uuid(1), 0, [1, 2, 3], eligibleLeaderReplicas=[2], lastKnownElr=[]),
            partition(uuid(1), 1, [1, 2, 3]),
            topic("b", uuid(2)),
            partition(uuid(2), 0, [1, 2, 3], eligibleLeaderReplicas=[], lastKnownElr=[3]),
            *more,
        )

    one = elr_image(rec("CLEAR_ELR_RECORD", topicName="a")).to_json()["topics"]
    assert one["a"]["partitions"]["0"]["eligibleLeaderReplicas"] == []
    assert one["a"]["partitions"]["0"]["partitionEpoch"] == 1
    assert one["a"]["partitions"]["0"]["leaderEpoch"] == 0
    assert one["a"]["partitions"]["1"]["partitionEpoch"] == 0  # nothing to clear, untouched
    assert one["b"]["partitions"]["0"]["lastKnownElr"] == [3]

    everything = elr_image(rec("CLEAR_ELR_RECORD", topicName="")).to_json()["topics"]
    assert everything["b"]["partitions"]["0"]["lastKnownElr"] == []
    assert everything["b"]["partitions"]["0"]["partitionEpoch"] == 1
    assert everything["a"]["partitions"]["0"]["partitionEpoch"] == 1

    assert "does not exist" in only_problem(elr_image(rec("CLEAR_ELR_RECORD", topicName="zzz")))


# --- configs ------------------------------------------------------------------------------


def test_config_set_delete_and_empty_resource_disappears():
    image = replayed(
        config(4, "1", "log.cleaner.threads", "2"),
        config(4, "1", "num.io.threads", "8"),
        config(4, "1", "log.cleaner.threads", None),
        config(4, "", "num.io.threads", "16"),
        config(2, "orders", "retention.ms", "5"),
        config(2, "orders", "retention.ms", None),
        config(4, "2", "never.set", None),
    )
    assert image.to_json()["configs"] == {
        "BROKER:": {"num.io.threads": "16"},
        "BROKER:1": {"num.io.threads": "8"},
    }


def test_config_resource_keys_for_every_type_in_numeric_order():
    image = replayed(
        config(16, "metrics1", "interval.ms", "1"),
        config(32, "group1", "consumer.session.timeout.ms", "2"),
        config(4, "10", "a", "3"),
        config(4, "2", "a", "4"),
        config(64, "x", "a", "5"),
    )
    assert list(image.to_json()["configs"]) == [
        "64:x", "BROKER:2", "BROKER:10", "CLIENT_METRICS:metrics1", "GROUP:group1"
    ]


def test_password_configs_are_redacted_unless_asked():
    image = replayed(config(4, "", "listener.name.sasl.plain.sasl.jaas.config", "secret!"),
                     config(4, "", "ssl.keystore.password", "pw"), config(4, "", "num.io.threads", "8"))
    assert image.to_json()["configs"]["BROKER:"] == {
        "listener.name.sasl.plain.sasl.jaas.config": "[redacted]",
        "num.io.threads": "8",
        "ssl.keystore.password": "[redacted]",
    }
    assert image.to_json(redact=False)["configs"]["BROKER:"]["ssl.keystore.password"] == "pw"


# --- quotas, ACLs, SCRAM, tokens, producer ids -----------------------------------------------


def quota(entity: dict, key: str, value: float = 0.0, remove: bool = False):
    return rec(
        "CLIENT_QUOTA_RECORD",
        entity=[{"entityType": t, "entityName": n} for t, n in entity.items()],
        key=key, value=value, remove=remove,
    )


def test_client_quotas_by_entity_with_defaults_and_removal():
    image = replayed(
        quota({"user": "alice", "client-id": None}, "producer_byte_rate", 1048576.5),
        quota({"client-id": None, "user": "alice"}, "consumer_byte_rate", 2.0),
        quota({"user": "bob"}, "request_percentage", 50.0),
        quota({"user": "bob"}, "request_percentage", remove=True),
        quota({"ip": "10.0.0.1"}, "connection_creation_rate", 5.0),
    )
    assert image.to_json()["clientQuotas"] == {
        "client-id=<default>,user=alice": {"consumer_byte_rate": 2.0, "producer_byte_rate": 1048576.5},
        "ip=10.0.0.1": {"connection_creation_rate": 5.0},
    }


def acl(acl_id: str, operation: int = 3):
    return rec("ACCESS_CONTROL_ENTRY_RECORD", id=acl_id, resourceType=2, resourceName="orders", patternType=3,
               principal="User:alice", host="*", operation=operation, permissionType=3)


def test_acls_add_replace_and_remove():
    image = replayed(acl(uuid(2)), acl(uuid(1)), acl(uuid(1), operation=4),
                     rec("REMOVE_ACCESS_CONTROL_ENTRY_RECORD", id=uuid(2)))
    assert image.to_json()["acls"] == {uuid(1): acl(uuid(1), operation=4).data}
    image.apply(rec("REMOVE_ACCESS_CONTROL_ENTRY_RECORD", id=uuid(2)), 9, 0, 1)
    assert "unknown ACL id" in only_problem(image)


def scram(name: str, mechanism: int = 1, salt: bytes = b"salt-bytes"):
    return rec("USER_SCRAM_CREDENTIAL_RECORD", name=name, mechanism=mechanism, salt=salt,
               storedKey=b"\x01\x02\x03\x04", serverKey=b"\xff\x00\x80", iterations=8192)


def test_scram_credentials_are_redacted_by_default_and_removable():
    image = replayed(scram("alice"), scram("bob", mechanism=2), scram("carol", mechanism=2),
                     rec("REMOVE_USER_SCRAM_CREDENTIAL_RECORD", name="carol", mechanism=2))
    redacted = image.to_json()["scram"]
    assert redacted == {
        "SCRAM-SHA-256": {"alice": {"salt": "[redacted]", "storedKey": "[redacted]", "serverKey": "[redacted]",
                                    "iterations": 8192}},
        "SCRAM-SHA-512": {"bob": {"salt": "[redacted]", "storedKey": "[redacted]", "serverKey": "[redacted]",
                                  "iterations": 8192}},
    }
    clear = image.to_json(redact=False)["scram"]["SCRAM-SHA-256"]["alice"]
    assert (clear["salt"], clear["storedKey"], clear["serverKey"]) == ("c2FsdC1ieXRlcw==", "AQIDBA==", "/wCA")


def test_delegation_tokens_set_and_remove():
    token = {"owner": "User:alice", "requester": "User:bob", "renewers": ["User:carol"],
             "issueTimestamp": 1, "maxTimestamp": 3, "expirationTimestamp": 2}
    image = replayed(rec("DELEGATION_TOKEN_RECORD", tokenId="t1", **token),
                     rec("DELEGATION_TOKEN_RECORD", tokenId="t2", **token),
                     rec("REMOVE_DELEGATION_TOKEN_RECORD", tokenId="t1"))
    assert image.to_json()["delegationTokens"] == {"t2": {"tokenId": "t2", **token}}


def test_producer_ids_start_unissued_and_are_overwritten():
    assert replayed().to_json()["producerIds"] == {"nextProducerId": -1}
    image = replayed(rec("PRODUCER_IDS_RECORD", brokerId=1, brokerEpoch=4, nextProducerId=1000),
                     rec("PRODUCER_IDS_RECORD", brokerId=2, brokerEpoch=5, nextProducerId=2000))
    assert image.to_json()["producerIds"] == {"nextProducerId": 2000}


# --- the canonical JSON as a whole ----------------------------------------------------------


def test_canonical_json_has_exactly_the_documented_top_level_keys():
    assert list(replayed().to_json()) == [
        "provenance", "features", "brokers", "controllers", "topics", "configs", "clientQuotas", "acls",
        "scram", "delegationTokens", "producerIds", "zkMigrationState",
    ]


def test_to_json_is_a_snapshot_not_a_live_view():
    image = replayed(topic("t", uuid(1)), partition(uuid(1), 0, [1, 2]), register_broker(1))
    before = image.to_json()
    image.apply(rec("PARTITION_CHANGE_RECORD", topicId=uuid(1), partitionId=0, isr=[1], leader=1), 3, 0, 1)
    image.apply(rec("BROKER_REGISTRATION_CHANGE_RECORD", brokerId=1, brokerEpoch=10, fenced=1), 4, 0, 1)
    assert before["topics"]["t"]["partitions"]["0"]["isr"] == [1, 2]
    assert before["brokers"]["1"]["fenced"] is False


def test_metadata_versions_of_kafka_4_3_and_4_4_have_their_names():
    """apache/kafka@4425e970 server-common/.../MetadataVersion.java: levels 28-33."""
    from kraftlog.state.features import metadata_version_name
    assert [metadata_version_name(level) for level in range(27, 34)] == [
        "4.1-IV1", "4.2-IV0", "4.2-IV1", "4.3-IV0", "4.4-IV0", "4.4-IV1", "4.4-IV2"]
    assert metadata_version_name(34) == "34 (newer than kraftlog knows)"


def test_configs_of_a_topic_created_and_deleted_in_one_transaction_stay():
    """Kafka 4.2 ConfigurationsDelta.java line 73: a RemoveTopicRecord deletes only the configs the image
    held before the delta; a metadata transaction is one delta."""
    created_and_deleted = replayed(
        rec("BEGIN_TRANSACTION_RECORD"), topic("tmp", uuid(9)), config(2, "tmp", "retention.ms", "1"),
        rec("REMOVE_TOPIC_RECORD", topicId=uuid(9)), rec("END_TRANSACTION_RECORD"))
    assert created_and_deleted.to_json()["configs"] == {"TOPIC:tmp": {"retention.ms": "1"}}
    assert created_and_deleted.to_json()["topics"] == {}
    created_then_deleted = replayed(
        topic("tmp", uuid(9)), config(2, "tmp", "retention.ms", "1"),
        rec("BEGIN_TRANSACTION_RECORD"), config(2, "tmp", "cleanup.policy", "compact"),
        rec("REMOVE_TOPIC_RECORD", topicId=uuid(9)), rec("END_TRANSACTION_RECORD"))
    assert created_then_deleted.to_json()["configs"] == {}
