"""What to simulate for one cluster: its shape, its metadata.version path and Kafka's log settings."""

from __future__ import annotations

from dataclasses import dataclass

from kraftlog.synth import versions

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """One cluster. Brokers are nodes 1..B; controllers are nodes 1..C when ``combined`` (both
    roles in one process), else B+1..B+C. Node copies are written for the voters first, then
    the broker-only nodes."""

    name: str
    seed: str
    metadata_versions: tuple[int, ...]
    start_ms: int
    duration_ms: int
    brokers: int = 3
    controllers: int = 1
    combined: bool = True
    topics: int = 5
    partitions: int = 3
    replication_factor: int = 3
    kraft_version: int = 0
    events_per_hour: float = 30.0
    nodes: int = 1
    diverge: bool = False
    max_records_per_batch: int = 10_000  # QuorumController's MAX_RECORDS_PER_BATCH
    segment_bytes: int = 8 << 20
    segment_ms: int = 7 * DAY_MS  # metadata.log.segment.ms
    snapshot_bytes: int = 20 << 20  # metadata.log.max.record.bytes.between.snapshots
    snapshot_interval_ms: int = HOUR_MS  # metadata.log.max.snapshot.interval.ms
    max_bytes: int | None = None

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    @property
    def controller_ids(self) -> list[int]:
        first = 1 if self.combined else self.brokers + 1
        return list(range(first, first + self.controllers))

    @property
    def node_ids(self) -> list[int]:
        """Every node, voters first: the order node copies are written in."""
        voters = self.controller_ids
        return voters + [b for b in self.broker_ids if b not in voters]

    @property
    def written_nodes(self) -> list[int]:
        return self.node_ids[: self.nodes]

    @property
    def diverging_node(self) -> int | None:
        """The last written voter: it leads an epoch whose tail never reaches the others."""
        return max(v for v in self.written_nodes if v in self.controller_ids) if self.diverge else None

    def check(self) -> None:
        """Raise ValueError for shapes Kafka (or the simulation) cannot have."""
        if self.brokers < 1 or self.controllers < 1:
            raise ValueError("a cluster needs at least one broker and one controller")
        if self.combined and self.controllers > self.brokers:
            raise ValueError("combined nodes are brokers too: --controllers cannot exceed --brokers")
        if not 1 <= self.nodes <= len(self.node_ids):
            raise ValueError(f"--nodes must be 1..{len(self.node_ids)} (the cluster's nodes)")
        if not 1 <= self.replication_factor <= self.brokers:
            raise ValueError("--replication-factor must be 1..--brokers")
        if min(self.metadata_versions) < versions.CONTROLLED_SHUTDOWN <= versions.ZOOKEEPER_GONE <= max(
                self.metadata_versions):
            raise ValueError("4.x runs metadata.version 3.3-IV3 or later only: start a path to 4.x at 3.3-IV3")
        if self.kraft_version and self.metadata_versions[0] < versions.KRAFT_VERSION_1:
            raise ValueError("kraft.version 1 needs metadata.version 3.9-IV0 or later at format time")
        if self.diverge and (self.controllers < 3 or not any(v in self.controller_ids for v in self.written_nodes[1:])):
            raise ValueError("a diverging copy needs 3+ controllers and 2+ written nodes, one a second voter")
        if self.segment_bytes < 4096 or self.snapshot_bytes < 1:
            raise ValueError("--segment-bytes must be at least 4096 and --snapshot-bytes positive")
        if self.max_records_per_batch < 2:
            raise ValueError("--max-records-per-batch must be at least 2")
