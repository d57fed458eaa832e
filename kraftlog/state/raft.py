"""Raft quorum state seen in the log: leader, epoch, kraft.version, voters (control records)."""

from collections.abc import Callable

UNKNOWN_LEADER = -1


class Raft:
    """Follows control records and batch epochs; not part of Kafka's metadata image.

    Every new epoch starts with a LeaderChange batch, so a batch epoch above the last
    LeaderChange means that record was not replayed and the leader is unknown."""

    def __init__(self) -> None:
        self.leader_id = UNKNOWN_LEADER
        self.leader_epoch = -1
        self.kraft_version = 0
        self.voters: list[dict] = []

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {
            "LEADER_CHANGE": self._leader_change,
            "KRAFT_VERSION": self._kraft_version,
            "KRAFT_VOTERS": self._voters,
        }

    def observe_epoch(self, epoch: int) -> None:
        if epoch > self.leader_epoch:
            self.leader_epoch = epoch
            self.leader_id = UNKNOWN_LEADER

    def _leader_change(self, data: dict) -> None:
        self.leader_id = data["leaderId"]
        if data.get("voters") is not None:
            self.voters = [dict(v) for v in data["voters"]]

    def _kraft_version(self, data: dict) -> None:
        self.kraft_version = data["kRaftVersion"]

    def _voters(self, data: dict) -> None:
        self.voters = [dict(v) for v in data["voters"]]

    def to_json(self) -> dict:
        return {
            "leaderId": self.leader_id,
            "leaderEpoch": self.leader_epoch,
            "kraftVersion": self.kraft_version,
            "voters": self.voters,
        }
