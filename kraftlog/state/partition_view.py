"""Each partition's leadership and health, as ``kafka-topics --describe`` judges it, from an image.

The rules are TopicCommand.PartitionDescription's (tools/.../TopicCommand.java): a partition has
a leader when the Metadata response names one (``metadata_view``: the leader is a registered,
unfenced broker); it is under-replicated when its replication factor (replicas minus the ones a
reassignment is adding) exceeds its ISR; under min ISR when it has no leader or its ISR is smaller
than ``min.insync.replicas``.
"""

from kraftlog.state.configs import BROKER, TOPIC
from kraftlog.state.ids import key_order
from kraftlog.state.image import ClusterImage
from kraftlog.state.metadata_view import metadata_response

MIN_ISR = "min.insync.replicas"
#: Kafka's default for ``min.insync.replicas`` (ServerLogConfigs.MIN_IN_SYNC_REPLICAS_DEFAULT).
DEFAULT_MIN_ISR = 1

#: Health flags, in the order they are listed.
FLAGS = ("leaderless", "leader-offline", "offline-replicas", "under-replicated", "under-min-isr")


def min_isr(image: ClusterImage, topic: str) -> tuple[int, str]:
    """``min.insync.replicas`` for ``topic`` and where it comes from: the topic's config, else
    the cluster-wide broker default (resource ``BROKER:``), else Kafka's default.

    A value that is no whole number >= 1 is refused (ValueError): Kafka would not accept it."""
    resources = image.configs.resources
    for source, resource in (("topic", (TOPIC, topic)), ("cluster", (BROKER, ""))):
        value = resources.get(resource, {}).get(MIN_ISR)
        if value is not None:
            if not value.strip().isdigit() or int(value) < 1:
                raise ValueError(f"{MIN_ISR}={value!r} of {source} config is not a whole number >= 1")
            return int(value), source
    return DEFAULT_MIN_ISR, "default"


def partition_rows(image: ClusterImage) -> list[dict]:
    """One row per partition, topics by name, partitions by id; ``flags`` lists what is unhealthy:
    leaderless (leader -1), leader-offline (the leader is fenced or unregistered), offline-replicas,
    under-replicated, under-min-isr."""
    response = {t["name"]: {p["partitionIndex"]: p for p in t["partitions"]} for t in metadata_response(image)["topics"]}
    rows = []
    for name in sorted(image.topics.id_by_name):
        topic = image.topics.by_name(name)
        minimum, source = min_isr(image, name)
        for partition_id in sorted(topic["partitions"], key=key_order):
            p = topic["partitions"][partition_id]
            served = response[name][partition_id]
            replication_factor = len(p["replicas"]) - len(p["addingReplicas"])
            has_leader = served["leaderId"] != -1
            flags = {
                "leaderless": p["leader"] == -1,
                "leader-offline": p["leader"] != -1 and not has_leader,
                "offline-replicas": bool(served["offlineReplicas"]),
                "under-replicated": replication_factor > len(p["isr"]),
                "under-min-isr": not has_leader or len(p["isr"]) < minimum,
            }
            rows.append({
                "topic": name,
                "topicId": topic["topicId"],
                "partition": partition_id,
                "leader": p["leader"],
                "leaderEpoch": p["leaderEpoch"],
                "replicas": list(p["replicas"]),
                "isr": list(p["isr"]),
                "eligibleLeaderReplicas": list(p["eligibleLeaderReplicas"]),
                "lastKnownElr": list(p["lastKnownElr"]),
                "offlineReplicas": served["offlineReplicas"],
                "addingReplicas": list(p["addingReplicas"]),
                "removingReplicas": list(p["removingReplicas"]),
                "minIsr": minimum,
                "minIsrFrom": source,
                "flags": [f for f in FLAGS if flags[f]],
            })
    return rows
