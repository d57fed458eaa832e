"""Topics and partitions (``TopicsImage``), with ``PartitionRegistration.merge`` semantics."""

from collections.abc import Callable

from kraftlog.state.ids import MIGRATING, UNASSIGNED, sorted_map
from kraftlog.state.problems import ReplayProblem

#: PartitionChangeRecord.Leader default: the leader (and so the leader epoch) stays as it is.
NO_LEADER_CHANGE = -2
#: PartitionChangeRecord.LeaderRecoveryState default: unchanged.
NO_RECOVERY_STATE_CHANGE = -1
#: LeaderRecoveryState values.
LEADER_RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}

#: Fields a PartitionChangeRecord replaces when present; absent (null) means unchanged.
_REPLACED_LISTS = ("isr", "removingReplicas", "addingReplicas", "eligibleLeaderReplicas", "lastKnownElr")


def _directories(directories: list[str] | None, replicas: list[int]) -> list[str]:
    """Kafka stores null or empty directories as MIGRATING for every replica (pre-JBOD metadata)."""
    if not directories:
        return [MIGRATING] * len(replicas)
    if len(directories) != len(replicas):
        raise ReplayProblem(f"{len(directories)} directories for {len(replicas)} replicas")
    return list(directories)


def _recovery_state(value: int) -> int:
    if value not in LEADER_RECOVERY_STATES:
        raise ReplayProblem(f"unknown leaderRecoveryState {value}")
    return value


def new_partition(data: dict) -> dict:
    """A PartitionRecord's state: it replaces whatever the partition had."""
    replicas = list(data["replicas"])
    return {
        "replicas": replicas,
        "isr": list(data["isr"]),
        "removingReplicas": list(data.get("removingReplicas", [])),
        "addingReplicas": list(data.get("addingReplicas", [])),
        "leader": data["leader"],
        "leaderRecoveryState": _recovery_state(data.get("leaderRecoveryState", 0)),
        "leaderEpoch": data["leaderEpoch"],
        "partitionEpoch": data["partitionEpoch"],
        "directories": _directories(data.get("directories"), replicas),
        "eligibleLeaderReplicas": list(data.get("eligibleLeaderReplicas") or []),
        "lastKnownElr": list(data.get("lastKnownElr") or []),
    }


def placement(old: dict, change: dict) -> tuple[list[int], list[str]]:
    """Replicas and directories after a PartitionChangeRecord: replicas that stay keep their
    directory; added ones are not placed yet."""
    replicas = change.get("replicas")
    directories = change.get("directories")
    if not directories:
        if replicas is None:
            directories = old["directories"]
        else:
            placed = dict(zip(old["replicas"], old["directories"], strict=False))
            directories = [placed.get(r, UNASSIGNED) for r in replicas]
    replicas = old["replicas"] if replicas is None else list(replicas)
    return replicas, _directories(directories, replicas)


def merge_partition(old: dict, change: dict) -> dict:
    """The partition after a PartitionChangeRecord (reference §6.2); ``old`` is left untouched.

    Every change bumps the partition epoch. A Leader field other than -2 bumps the leader epoch,
    even when it is -1 or names the current leader, because the controller writes the current
    leader on purpose to fence stale replicas."""
    new = dict(old)
    new["replicas"], new["directories"] = placement(old, change)
    for name in _REPLACED_LISTS:
        if change.get(name) is not None:
            new[name] = list(change[name])
    leader = change.get("leader", NO_LEADER_CHANGE)
    if leader != NO_LEADER_CHANGE:
        new["leader"] = leader
        new["leaderEpoch"] = old["leaderEpoch"] + 1
    recovery = change.get("leaderRecoveryState", NO_RECOVERY_STATE_CHANGE)
    if recovery != NO_RECOVERY_STATE_CHANGE:
        new["leaderRecoveryState"] = _recovery_state(recovery)
    new["partitionEpoch"] = old["partitionEpoch"] + 1
    return new


class Topics:
    """Topic id -> {name, topicId, partitions}, plus the name index Kafka keeps beside it."""

    def __init__(self) -> None:
        self.by_id: dict[str, dict] = {}
        self.id_by_name: dict[str, str] = {}

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {
            "TOPIC_RECORD": self._topic,
            "PARTITION_RECORD": self._partition,
            "PARTITION_CHANGE_RECORD": self._partition_change,
            "CLEAR_ELR_RECORD": self._clear_elr,
        }

    def by_name(self, name: str) -> dict | None:
        topic_id = self.id_by_name.get(name)
        return None if topic_id is None else self.by_id[topic_id]

    def _topic_or_problem(self, topic_id: str, what: str) -> dict:
        topic = self.by_id.get(topic_id)
        if topic is None:
            raise ReplayProblem(f"{what} for topic id {topic_id}, which does not exist")
        return topic

    def _topic(self, data: dict) -> None:
        name, topic_id = data["name"], data["topicId"]
        old = self.by_id.get(topic_id)
        if old is not None and self.id_by_name.get(old["name"]) == topic_id:
            del self.id_by_name[old["name"]]  # the id is re-created under a new name: one name per id
        self.by_id[topic_id] = {"name": name, "topicId": topic_id, "partitions": {}}
        self.id_by_name[name] = topic_id

    def _partition(self, data: dict) -> None:
        topic = self._topic_or_problem(data["topicId"], "PartitionRecord")
        topic["partitions"][data["partitionId"]] = new_partition(data)

    def _partition_change(self, data: dict) -> None:
        topic = self._topic_or_problem(data["topicId"], "PartitionChangeRecord")
        partition_id = data["partitionId"]
        old = topic["partitions"].get(partition_id)
        if old is None:
            raise ReplayProblem(f"PartitionChangeRecord for {topic['name']}-{partition_id}, which does not exist")
        topic["partitions"][partition_id] = merge_partition(old, data)

    def remove(self, topic_id: str) -> str:
        """Drop a topic and its partitions; returns its name so its configs can go too."""
        topic = self._topic_or_problem(topic_id, "RemoveTopicRecord")
        del self.by_id[topic_id]
        if self.id_by_name.get(topic["name"]) == topic_id:
            del self.id_by_name[topic["name"]]
        return topic["name"]

    def _clear_elr(self, data: dict) -> None:
        """Empty both ELR lists where set, as a PartitionChangeRecord would: partition epoch only."""
        name = data.get("topicName", "")
        if name:
            topic = self.by_name(name)
            if topic is None:
                raise ReplayProblem(f"ClearElrRecord for topic {name}, which does not exist")
            topics = [topic]
        else:
            topics = list(self.by_id.values())
        clear = {"eligibleLeaderReplicas": [], "lastKnownElr": []}
        for topic in topics:
            partitions = topic["partitions"]
            for partition_id, partition in partitions.items():
                if partition["eligibleLeaderReplicas"] or partition["lastKnownElr"]:
                    partitions[partition_id] = merge_partition(partition, clear)

    def to_json(self) -> dict:
        return {
            name: {
                "topicId": topic_id,
                "partitions": sorted_map(self.by_id[topic_id]["partitions"], dict),
            }
            for name, topic_id in sorted(self.id_by_name.items())
        }
