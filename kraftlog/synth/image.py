"""The simulated cluster's metadata as its active controller holds it: what the generator
intends the log to say, kept apart from ``kraftlog.state`` so that replay can be checked against it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from kraftlog.synth import records, versions
from kraftlog.synth.writer import MetadataRec

#: ``DirectoryId.MIGRATING`` and ``UNASSIGNED`` (reference §4.3).
MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"
UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"
NO_LEADER = -1


@dataclass(slots=True)
class Broker:
    id: int
    incarnation: str
    epoch: int
    endpoints: list[dict]
    rack: str | None
    log_dirs: list[str]  # empty when registered before 3.7-IV2
    software: int  # the latest metadata.version level of the release it runs
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclass(slots=True)
class Controller:
    id: int
    incarnation: str
    endpoints: list[dict]
    software: int


@dataclass(slots=True)
class Partition:
    id: int
    replicas: list[int]
    isr: list[int]
    directories: list[str]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    removing: list[int] = field(default_factory=list)
    adding: list[int] = field(default_factory=list)
    recovery: int = 0  # LeaderRecoveryState: 0 RECOVERED, 1 RECOVERING


@dataclass(slots=True)
class Topic:
    name: str
    id: str
    partitions: dict[int, Partition] = field(default_factory=dict)


@dataclass(slots=True)
class Image:
    """MetadataImage's domains as the controller sees them after each committed record."""

    features: dict[str, int] = field(default_factory=dict)
    brokers: dict[int, Broker] = field(default_factory=dict)
    controllers: dict[int, Controller] = field(default_factory=dict)
    topics: dict[str, Topic] = field(default_factory=dict)  # by topic id
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(default_factory=dict)
    acls: dict[str, dict] = field(default_factory=dict)
    scram: dict[tuple[int, str], dict] = field(default_factory=dict)  # (mechanism, user)
    tokens: dict[str, dict] = field(default_factory=dict)
    next_producer_id: int = -1

    @property
    def mv(self) -> int:
        return self.features.get("metadata.version", 0)

    def topic_named(self, name: str) -> Topic | None:
        return next((t for t in self.topics.values() if t.name == name), None)

    def set_config(self, resource: tuple[int, str], key: str, value: str | None) -> None:
        values = self.configs.setdefault(resource, {})
        if value is None:
            values.pop(key, None)
        else:
            values[key] = value
        if not values:
            del self.configs[resource]

    def set_quota(self, entity: tuple, key: str, value: float | None) -> None:
        values = self.quotas.setdefault(entity, {})
        if value is None:
            values.pop(key, None)
        else:
            values[key] = value
        if not values:
            del self.quotas[entity]

    def snapshot_records(self) -> Iterator[MetadataRec]:
        """The image in ``MetadataImage.write`` order (reference §6.3): no NoOp, no transaction
        marker, no Remove* record; fencing folded into the registrations."""
        mv = self.mv
        yield records.feature_level("metadata.version", mv)
        for name in sorted(self.features):
            if name != "metadata.version":
                yield records.feature_level(name, self.features[name])
        if versions.writes_zk_migration_state(mv):
            yield records.zk_migration_state()
        for broker_id in sorted(self.brokers):
            yield records.register_broker(self.brokers[broker_id], mv)
        if mv >= versions.CONTROLLER_REGISTRATION:
            for controller_id in sorted(self.controllers):
                yield records.register_controller(self.controllers[controller_id])
        for topic in sorted(self.topics.values(), key=lambda t: t.name):
            yield records.topic(topic)
            for pid in sorted(topic.partitions):
                yield records.partition(topic, topic.partitions[pid], mv)
        for (kind, name) in sorted(self.configs):
            for key, value in sorted(self.configs[(kind, name)].items()):
                yield records.config(kind, name, key, value)
        for entity in sorted(self.quotas, key=repr):
            for key, value in sorted(self.quotas[entity].items()):
                yield records.quota(entity, key, value)
        if self.next_producer_id >= 0:
            yield records.producer_ids(-1, -1, self.next_producer_id)
        for acl_id in sorted(self.acls):
            yield records.acl(self.acls[acl_id])
        for mechanism, user in sorted(self.scram):
            yield records.scram(user, mechanism, self.scram[(mechanism, user)])
        for token_id in sorted(self.tokens):
            yield records.token(self.tokens[token_id])
