"""The timeline tables: for each kind of entity, its key, the records that change it, and how its
state is read out of a ``ClusterImage`` (the state layer keeps Kafka's JSON shapes; the tables
keep snake_case columns)."""

import json

import pyarrow as pa

from kraftlog.schema.redact import REDACTED, is_secret_config
from kraftlog.spark.fold import Entity
from kraftlog.state.acls import OPERATIONS, PATTERN_TYPES, PERMISSION_TYPES, RESOURCE_TYPES
from kraftlog.state.image import ClusterImage

INTS = pa.list_(pa.int32())
TOPIC_RECORDS = ("TOPIC_RECORD", "REMOVE_TOPIC_RECORD")
CLEAR_ELR = "CLEAR_ELR_RECORD"


def _partition(image: ClusterImage, key: tuple) -> tuple | None:
    topic_id, partition_id = key
    topic = image.topics.by_id.get(topic_id)
    p = topic["partitions"].get(partition_id) if topic else None
    if p is None:
        return None
    return (topic["name"], p["leader"], p["leaderEpoch"], p["partitionEpoch"], p["leaderRecoveryState"],
            p["replicas"], p["isr"], p["addingReplicas"], p["removingReplicas"], p["eligibleLeaderReplicas"],
            p["lastKnownElr"], p["directories"])


PARTITION = Entity(
    "partition_history",
    keys=[("topic_id", pa.string()), ("partition_id", pa.int32())],
    records=("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"),
    routed=(*TOPIC_RECORDS, CLEAR_ELR),
    state=[("topic_name", pa.string()), ("leader", pa.int32()), ("leader_epoch", pa.int32()),
           ("partition_epoch", pa.int32()), ("leader_recovery_state", pa.int8()), ("replicas", INTS),
           ("isr", INTS), ("adding_replicas", INTS), ("removing_replicas", INTS),
           ("eligible_leader_replicas", INTS), ("last_known_elr", INTS), ("directories", pa.list_(pa.string()))],
    extract=_partition,
)


def _topic(image: ClusterImage, key: tuple) -> tuple | None:
    topic = image.topics.by_id.get(key[0])
    return None if topic is None else (topic["name"],)


TOPIC = Entity("topic_history", keys=[("topic_id", pa.string())], records=TOPIC_RECORDS,
               state=[("topic_name", pa.string())], extract=_topic)

_ENDPOINT = pa.struct([("name", pa.string()), ("host", pa.string()), ("port", pa.int32()),
                       ("security_protocol", pa.int16())])
_FEATURE = pa.struct([("name", pa.string()), ("min_supported_version", pa.int16()),
                      ("max_supported_version", pa.int16())])


def _broker(image: ClusterImage, key: tuple) -> tuple | None:
    r = image.brokers.registrations.get(key[0])
    if r is None:
        return None
    endpoints = [{"name": e["name"], "host": e["host"], "port": e["port"], "security_protocol": e["securityProtocol"]}
                 for e in r["endPoints"]]
    features = [{"name": f["name"], "min_supported_version": f["minSupportedVersion"],
                 "max_supported_version": f["maxSupportedVersion"]} for f in r["features"]]
    return (r["brokerEpoch"], r["incarnationId"], r["rack"], r["fenced"], r["inControlledShutdown"],
            r["isMigratingZkBroker"], endpoints, features, r["logDirs"])


BROKER = Entity(
    "broker_history",
    keys=[("broker_id", pa.int32())],
    records=("REGISTER_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD",
             "BROKER_REGISTRATION_CHANGE_RECORD"),
    state=[("broker_epoch", pa.int64()), ("incarnation_id", pa.string()), ("rack", pa.string()),
           ("fenced", pa.bool_()), ("in_controlled_shutdown", pa.bool_()), ("is_migrating_zk_broker", pa.bool_()),
           ("endpoints", pa.list_(_ENDPOINT)), ("features", pa.list_(_FEATURE)), ("log_dirs", pa.list_(pa.string()))],
    extract=_broker,
)


def _config(image: ClusterImage, key: tuple) -> tuple | None:
    resource_type, resource_name, name = key
    value = image.configs.resources.get((resource_type, resource_name), {}).get(name)
    return None if value is None else (value,)


def _config_shown(key: tuple, state: tuple) -> tuple:
    """Secret values are replaced as ``kraftlog replay`` replaces them; a change still shows."""
    return (REDACTED,) if is_secret_config(key[2]) else state


CONFIG = Entity(
    "config_history",
    keys=[("resource_type_id", pa.int32()), ("resource_name", pa.string()), ("config_name", pa.string())],
    records=("CONFIG_RECORD",),
    routed=TOPIC_RECORDS,
    state=[("value", pa.string())],
    extract=_config,
    shown=_config_shown,
)


def _acl(image: ClusterImage, key: tuple) -> tuple | None:
    e = image.acls.entries.get(key[0])
    if e is None:
        return None
    return (RESOURCE_TYPES.get(e["resourceType"], str(e["resourceType"])), e["resourceName"],
            PATTERN_TYPES.get(e["patternType"], str(e["patternType"])), e["principal"], e["host"],
            OPERATIONS.get(e["operation"], str(e["operation"])),
            PERMISSION_TYPES.get(e["permissionType"], str(e["permissionType"])))


ACL = Entity(
    "acl_history",
    keys=[("acl_id", pa.string())],
    records=("ACCESS_CONTROL_ENTRY_RECORD", "REMOVE_ACCESS_CONTROL_ENTRY_RECORD"),
    state=[("resource_type", pa.string()), ("resource_name", pa.string()), ("pattern_type", pa.string()),
           ("principal", pa.string()), ("host", pa.string()), ("operation", pa.string()),
           ("permission_type", pa.string())],
    extract=_acl,
)


def _feature(image: ClusterImage, key: tuple) -> tuple | None:
    level = image.features.levels.get(key[0])
    return None if level is None else (level,)


FEATURE = Entity("feature_history", keys=[("feature", pa.string())], records=("FEATURE_LEVEL_RECORD",),
                 state=[("level", pa.int16())], extract=_feature)


def _controller(image: ClusterImage, key: tuple) -> tuple:
    raft = image.raft
    return (raft.leader_id, raft.leader_epoch, raft.kraft_version, json.dumps(raft.voters, separators=(",", ":")))


CONTROLLER = Entity(
    "controller_history",
    keys=[],
    records=("LEADER_CHANGE", "KRAFT_VERSION", "KRAFT_VOTERS"),
    state=[("leader_id", pa.int32()), ("leader_epoch", pa.int32()), ("kraft_version", pa.int16()),
           ("voters", pa.string())],
    extract=_controller,
    follows_plan=False,
)

ENTITIES = (TOPIC, PARTITION, BROKER, CONFIG, ACL, FEATURE, CONTROLLER)
#: Metadata record types some timeline replays (raft control records are handled apart).
REPLAYED_TYPES = tuple(sorted({t for e in ENTITIES if e.follows_plan for t in (*e.records, *e.routed)}))
