"""Which entity a record is about: the keys filters select on and Spark partitions by.

One table, by api key, from entity to the record's field; the few records whose entity needs a
rule (configs, ACLs, quotas) have one function each.
"""

from __future__ import annotations

from collections.abc import Callable

from kraftlog.schema.control import ControlRecord
from kraftlog.schema.records import MetadataRecord

ENTITY_KEYS = ("topic_id", "topic_name", "partition_id", "broker_id", "resource_type", "resource_name")

#: ConfigResource.Type ids (clients/.../config/ConfigResource.java).
CONFIG_RESOURCE_TYPES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
#: ACL ResourceType ids (clients/.../resource/ResourceType.java).
ACL_RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                      6: "DELEGATION_TOKEN", 7: "USER"}

# api key -> {entity key: field of data}; a str value under resource_type is a constant.
_FIELDS: dict[int, dict[str, str]] = {
    0: {"broker_id": "brokerId"},                                 # RegisterBroker
    1: {"broker_id": "brokerId"},                                 # UnregisterBroker
    2: {"topic_id": "topicId", "topic_name": "name"},             # Topic
    3: {"topic_id": "topicId", "partition_id": "partitionId"},    # Partition
    5: {"topic_id": "topicId", "partition_id": "partitionId"},    # PartitionChange
    7: {"broker_id": "id"},                                       # FenceBroker
    8: {"broker_id": "id"},                                       # UnfenceBroker
    9: {"topic_id": "topicId"},                                   # RemoveTopic
    10: {"resource_name": "tokenId"},                             # DelegationToken
    11: {"resource_name": "name"},                                # UserScramCredential
    12: {"resource_name": "name"},                                # FeatureLevel
    15: {"broker_id": "brokerId"},                                # ProducerIds (-1 in snapshots)
    16: {"resource_name": "name"},                                # RemoveFeatureLevel
    17: {"broker_id": "brokerId"},                                # BrokerRegistrationChange
    22: {"resource_name": "name"},                                # RemoveUserScramCredential
    26: {"resource_name": "tokenId"},                             # RemoveDelegationToken
    27: {"broker_id": "controllerId"},                            # RegisterController: node ids are one space
    28: {"topic_name": "topicName"},                              # ClearElr ("" = every topic)
    29: {"broker_id": "controllerId"},                            # UnregisterController
}
_RESOURCE_TYPES = {10: "DELEGATION_TOKEN", 11: "USER", 12: "FEATURE", 16: "FEATURE", 22: "USER",
                   26: "DELEGATION_TOKEN"}


def _config(data: dict, out: dict) -> None:
    kind = CONFIG_RESOURCE_TYPES.get(data["resourceType"], str(data["resourceType"]))
    name = data["resourceName"]
    out["resource_type"], out["resource_name"] = kind, name
    if kind == "TOPIC":
        out["topic_name"] = name
    elif kind == "BROKER" and name.isascii() and name.isdigit() and len(name) <= 10:  # "" = cluster default
        out["broker_id"] = int(name)


def _acl(data: dict, out: dict) -> None:
    out["resource_type"] = ACL_RESOURCE_TYPES.get(data["resourceType"], str(data["resourceType"]))
    out["resource_name"] = data["resourceName"]


def _client_quota(data: dict, out: dict) -> None:
    """``client-id=<default>,user=alice``: entity types sorted, null name = the default entity."""
    parts = sorted((e["entityType"], "<default>" if e["entityName"] is None else e["entityName"])
                   for e in data["entity"])
    out["resource_type"] = "CLIENT_QUOTA"
    out["resource_name"] = ",".join(f"{t}={n}" for t, n in parts)


_RULES: dict[int, Callable[[dict, dict], None]] = {4: _config, 6: _acl, 14: _client_quota, 18: _acl}


def fields_of(api_key: int) -> dict[str, str]:
    """Entity key -> the field of a record of ``api_key`` that holds it, where ``entity_of`` reads it so
    (not the configs', ACLs' and quotas' rules): for a caller that needs one key of millions of records."""
    return _FIELDS.get(api_key, {})


def entity_of(rec: MetadataRecord | ControlRecord) -> dict:
    """All of ``ENTITY_KEYS``, None where the record type has no such entity (or failed to decode)."""
    out: dict = dict.fromkeys(ENTITY_KEYS)
    if not isinstance(rec, MetadataRecord) or rec.error is not None:
        return out
    data = rec.data
    for key, name in _FIELDS.get(rec.api_key, {}).items():
        out[key] = data.get(name)
    if rec.api_key in _RESOURCE_TYPES:
        out["resource_type"] = _RESOURCE_TYPES[rec.api_key]
    rule = _RULES.get(rec.api_key)
    if rule is not None:
        rule(data, out)
    if out["broker_id"] is not None and out["broker_id"] < 0:
        out["broker_id"] = None
    if out["topic_name"] == "":
        out["topic_name"] = None
    return out
