"""Stand-in records for the state tests: the attributes ``kraftlog.schema.MetadataRecord`` has."""

import base64
from dataclasses import dataclass, field

from kraftlog.state.image import ClusterImage


@dataclass
class Rec:
    type: str
    data: dict = field(default_factory=dict)
    version: int = 0
    error: str | None = None


def rec(kind: str, **data) -> Rec:
    return Rec(kind, data)


def uuid(n: int) -> str:
    """A distinct 22-character uuid text for small ``n``."""
    return base64.urlsafe_b64encode(n.to_bytes(16, "big")).rstrip(b"=").decode()


def replayed(*records: Rec, first_offset: int = 0, epoch: int = 1) -> ClusterImage:
    """An empty image with ``records`` applied at consecutive offsets, timestamp = 1000 * offset."""
    image = ClusterImage.empty()
    for offset, r in enumerate(records, first_offset):
        image.apply(r, offset, 1000 * offset, epoch)
    return image


def register_broker(broker_id: int, epoch: int = 10, *, fenced: bool = False, rack: str | None = None,
                    listeners: tuple[str, ...] = ("PLAINTEXT",), log_dirs: list[str] | None = None) -> Rec:
    return rec(
        "REGISTER_BROKER_RECORD",
        brokerId=broker_id,
        isMigratingZkBroker=False,
        incarnationId=uuid(1000 + broker_id),
        brokerEpoch=epoch,
        endPoints=[
            {"name": name, "host": f"b{broker_id}.{name.lower()}", "port": 9092 + i, "securityProtocol": 0}
            for i, name in enumerate(listeners)
        ],
        features=[{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 21}],
        rack=rack,
        fenced=fenced,
        inControlledShutdown=False,
        logDirs=log_dirs or [],
    )


def topic(name: str, topic_id: str) -> Rec:
    return rec("TOPIC_RECORD", name=name, topicId=topic_id)


def partition(topic_id: str, partition_id: int, replicas: list[int], **fields) -> Rec:
    """A PartitionRecord as the controller writes a new partition: leader = first replica, epochs 0."""
    data = {
        "partitionId": partition_id,
        "topicId": topic_id,
        "replicas": replicas,
        "isr": list(replicas),
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": replicas[0],
        "leaderEpoch": 0,
        "partitionEpoch": 0,
    }
    data.update(fields)
    return Rec("PARTITION_RECORD", data)


def change(topic_id: str, partition_id: int, **fields) -> Rec:
    return Rec("PARTITION_CHANGE_RECORD", {"partitionId": partition_id, "topicId": topic_id, **fields})


def config(resource_type: int, resource_name: str, name: str, value: str | None) -> Rec:
    return rec("CONFIG_RECORD", resourceType=resource_type, resourceName=resource_name, name=name, value=value)
