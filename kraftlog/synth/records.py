"""The metadata records Kafka's controller writes, in Kafka's JSON field names, at the version the
finalized metadata.version asks for (reference sections 3.3 and 8). Builders only: no state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kraftlog.synth import versions

if TYPE_CHECKING:
    from kraftlog.synth.image import Broker, Controller, Partition, Topic
    from kraftlog.synth.writer import MetadataRec

#: BrokerRegistrationChangeRecord.Fenced values.
FENCE, UNFENCE = 1, -1


def feature_level(name: str, level: int) -> MetadataRec:
    return ("FEATURE_LEVEL_RECORD", 0, {"name": name, "featureLevel": level})


def zk_migration_state() -> MetadataRec:
    return ("ZK_MIGRATION_STATE_RECORD", 0, {"zkMigrationState": 0})  # NONE: a KRaft-born cluster


def register_broker(b: Broker, mv: int) -> MetadataRec:
    version = versions.register_broker_version(mv)
    data = {"brokerId": b.id}
    if version >= 2:
        data["isMigratingZkBroker"] = False
    data |= {"incarnationId": b.incarnation, "brokerEpoch": b.epoch, "endPoints": b.endpoints,
             "features": versions.supported_features(b.software), "rack": b.rack, "fenced": b.fenced}
    if version >= 1:
        data["inControlledShutdown"] = b.in_controlled_shutdown
    if version >= 3:
        data["logDirs"] = list(b.log_dirs)
    return ("REGISTER_BROKER_RECORD", version, data)


def fencing(b: Broker, fenced: bool, mv: int) -> MetadataRec:
    """Fence/UnfenceBrokerRecord before 3.3-IV2, BrokerRegistrationChangeRecord v0 from then on."""
    if mv < versions.REGISTRATION_CHANGE:
        return ("FENCE_BROKER_RECORD" if fenced else "UNFENCE_BROKER_RECORD", 0, {"id": b.id, "epoch": b.epoch})
    return ("BROKER_REGISTRATION_CHANGE_RECORD", 0,
            {"brokerId": b.id, "brokerEpoch": b.epoch, "fenced": FENCE if fenced else UNFENCE})


def controlled_shutdown(b: Broker) -> MetadataRec:
    return ("BROKER_REGISTRATION_CHANGE_RECORD", 1,
            {"brokerId": b.id, "brokerEpoch": b.epoch, "inControlledShutdown": 1})


def unregister_broker(b: Broker) -> MetadataRec:
    return ("UNREGISTER_BROKER_RECORD", 0, {"brokerId": b.id, "brokerEpoch": b.epoch})


def register_controller(c: Controller) -> MetadataRec:
    return ("REGISTER_CONTROLLER_RECORD", 0, {
        "controllerId": c.id, "incarnationId": c.incarnation, "zkMigrationReady": False,
        "endPoints": c.endpoints, "features": versions.supported_features(c.software)})


def topic(t: Topic) -> MetadataRec:
    return ("TOPIC_RECORD", 0, {"name": t.name, "topicId": t.id})


def remove_topic(t: Topic) -> MetadataRec:
    return ("REMOVE_TOPIC_RECORD", 0, {"topicId": t.id})


def partition(t: Topic, p: Partition, mv: int) -> MetadataRec:
    version = versions.partition_version(mv)
    data = {"partitionId": p.id, "topicId": t.id, "replicas": list(p.replicas), "isr": list(p.isr),
            "removingReplicas": list(p.removing), "addingReplicas": list(p.adding), "leader": p.leader}
    if p.recovery:
        data["leaderRecoveryState"] = p.recovery
    data |= {"leaderEpoch": p.leader_epoch, "partitionEpoch": p.partition_epoch}
    if version >= 1:
        data["directories"] = list(p.directories)
    return ("PARTITION_RECORD", version, data)


def partition_change(t: Topic, p: Partition, mv: int, changes: dict) -> MetadataRec:
    """``changes`` holds only what changes (Kafka JSON names); ``directories`` is dropped below
    3.7-IV2, where the record cannot carry it."""
    version = versions.partition_version(mv)
    data = {"partitionId": p.id, "topicId": t.id}
    data |= {k: v for k, v in changes.items() if k != "directories" or version >= 1}
    return ("PARTITION_CHANGE_RECORD", version, data)


def config(kind: int, name: str, key: str, value: str | None) -> MetadataRec:
    return ("CONFIG_RECORD", 0, {"resourceType": kind, "resourceName": name, "name": key, "value": value})


def quota(entity: tuple, key: str, value: float | None) -> MetadataRec:
    return ("CLIENT_QUOTA_RECORD", 0, {
        "entity": [{"entityType": kind, "entityName": name} for kind, name in entity],
        "key": key, "value": 0.0 if value is None else value, "remove": value is None})


def producer_ids(broker_id: int, broker_epoch: int, next_id: int) -> MetadataRec:
    return ("PRODUCER_IDS_RECORD", 0, {"brokerId": broker_id, "brokerEpoch": broker_epoch, "nextProducerId": next_id})


def acl(entry: dict) -> MetadataRec:
    return ("ACCESS_CONTROL_ENTRY_RECORD", 0, entry)


def remove_acl(acl_id: str) -> MetadataRec:
    return ("REMOVE_ACCESS_CONTROL_ENTRY_RECORD", 0, {"id": acl_id})


def scram(user: str, mechanism: int, credential: dict) -> MetadataRec:
    return ("USER_SCRAM_CREDENTIAL_RECORD", 0, {"name": user, "mechanism": mechanism, **credential})


def remove_scram(user: str, mechanism: int) -> MetadataRec:
    return ("REMOVE_USER_SCRAM_CREDENTIAL_RECORD", 0, {"name": user, "mechanism": mechanism})


def token(entry: dict) -> MetadataRec:
    return ("DELEGATION_TOKEN_RECORD", 0, entry)


def remove_token(token_id: str) -> MetadataRec:
    return ("REMOVE_DELEGATION_TOKEN_RECORD", 0, {"tokenId": token_id})


def begin_transaction(name: str | None) -> MetadataRec:
    return ("BEGIN_TRANSACTION_RECORD", 0, {} if name is None else {"name": name})


def end_transaction() -> MetadataRec:
    return ("END_TRANSACTION_RECORD", 0, {})


def abort_transaction(reason: str) -> MetadataRec:
    return ("ABORT_TRANSACTION_RECORD", 0, {"reason": reason})
