"""The active controller's side of every change: which records Kafka's QuorumController appends,
in which order and batches (reference section 6), applied to the simulated image at their offsets.

Sources of the rules: ``ReplicationControlManager`` (fencing, controlled shutdown, unfencing,
reassignment), ``PartitionChangeBuilder`` (leader-epoch bumps), ``ClusterControlManager``
(broker epochs are the registration's offset), ``ActivationRecordsGenerator`` (bootstrap and the
failover abort), ``LeaderState`` (the epoch's first batch).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from kraftlog.synth import records, versions
from kraftlog.synth.image import MIGRATING, NO_LEADER, UNASSIGNED, Broker, Controller, Image, Partition, Topic
from kraftlog.synth.truth import Truth
from kraftlog.synth.writer import LogWriter, MetadataRec

BOOTSTRAP = "Bootstrap records"
FAILOVER = "Controller failover"


@dataclass(slots=True)
class _Transaction:
    begin: int
    name: str | None
    effects: list[Callable[[int], None]]


def directories_from(replicas: list[int], directories: list[str], new_replicas: list[int]) -> list[str]:
    """``DirectoryId.createDirectoriesFrom``: replicas that stay keep their directory, new ones are unassigned."""
    placed = dict(zip(replicas, directories, strict=True))
    return [placed.get(r, UNASSIGNED) for r in new_replicas]


class ActiveController:
    """Appends records for one change at a time and applies them to ``image`` as they commit.

    Records collect in ``pending`` and go out as one batch on ``flush`` (a controller result),
    split at ``max_records`` (``MAX_RECORDS_PER_BATCH``). Inside a metadata transaction, image
    changes wait for the EndTransactionRecord, as a broker's image does."""

    def __init__(self, image: Image, log: LogWriter, truth: Truth, rng: random.Random, voters: list[int],
                 kraft_version: int, max_records: int, voter_dirs: dict[int, str], format_level: int,
                 software: int) -> None:
        self.image = image
        self.log = log
        self.truth = truth
        self.rng = rng
        self.voters = voters
        self.kraft_version = kraft_version
        self.max_records = max_records
        self.voter_dirs = voter_dirs
        self.format_level = format_level  # the cluster was formatted at this metadata.version
        self.software = software  # the latest level of the release every node runs
        self.epoch = 0
        self.leader = -1
        self.pending: list[MetadataRec] = []
        self.transaction: _Transaction | None = None
        self.zk_state_written = False

    # --- appending ----------------------------------------------------------------------

    def offset(self) -> int:
        """The offset the next added record gets."""
        return self.log.next_offset + len(self.pending)

    def add(self, rec: MetadataRec, effect: Callable[[int], None] | None = None) -> int:
        offset = self.offset()
        self.pending.append(rec)
        if effect is not None:
            if self.transaction is not None:
                self.transaction.effects.append(effect)
            else:
                effect(offset)
        return offset

    def flush(self, t: int) -> None:
        pending, self.pending = self.pending, []
        for i in range(0, len(pending), self.max_records):
            self.log.data(pending[i:i + self.max_records], self.epoch, t)

    def begin(self, name: str | None) -> None:
        offset = self.add(records.begin_transaction(name))
        self.transaction = _Transaction(offset, name, [])

    def end(self) -> None:
        txn, self.transaction = self.transaction, None
        offset = self.add(records.end_transaction())
        for effect in txn.effects:
            effect(offset)
        self.truth.transaction(txn.begin, offset, "committed", txn.name)

    # --- quorum --------------------------------------------------------------------------

    def elect(self, t: int, leader: int, alive: list[int], bump: int = 1) -> None:
        """A new epoch: its first batch is the LeaderChange control batch (with kraft.version and
        the voter set under kraft.version 1), then the activation records."""
        self.epoch += bump
        self.leader = leader
        self.truth.epoch(self.epoch, leader, self.log.next_offset)
        others = [v for v in alive if v != leader]
        granting = sorted([leader, *self.rng.sample(others, min(len(others), len(self.voters) // 2))])
        control = [("LEADER_CHANGE", {"version": 0, "leaderId": leader,
                                      "voters": [{"voterId": v} for v in self.voters],
                                      "grantingVoters": [{"voterId": v} for v in granting]})]
        if self.kraft_version:
            control += self.raft_records()
        self.log.control(control, self.epoch, t)
        self._activate(t + self.rng.randrange(20, 200))

    def raft_records(self) -> list[tuple[str, dict]]:
        """KRaftVersionRecord and VotersRecord, for epoch starts and snapshot headers (kraft.version 1)."""
        voters = [{"voterId": v, "voterDirectoryId": self.voter_dirs[v],
                   "endpoints": [{"name": "CONTROLLER", "host": f"controller-{v}", "port": 9093}],
                   "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}
                  for v in self.voters]
        return [("KRAFT_VERSION", {"version": 0, "kRaftVersion": self.kraft_version}),
                ("KRAFT_VOTERS", {"version": 0, "voters": voters})]

    def _activate(self, t: int) -> None:
        """``ActivationRecordsGenerator``: bootstrap an empty log; abort what a failed leader left open."""
        if self.transaction is not None:
            txn, self.transaction = self.transaction, None
            offset = self.add(records.abort_transaction(FAILOVER))
            self.truth.transaction(txn.begin, offset, "aborted", txn.name)
        if not self.image.features:
            self.bootstrap()
        elif versions.writes_zk_migration_state(self.image.mv) and not self.zk_state_written:
            self.add(records.zk_migration_state())
            self.zk_state_written = True
        self.flush(t)

    def bootstrap(self) -> None:
        """The bootstrap records (metadata.version, other finalized features, ZK migration state
        NONE), in a "Bootstrap records" transaction from 3.6-IV1 on."""
        mv = self.format_level
        txn = mv >= versions.TRANSACTIONS
        if txn:
            self.begin(BOOTSTRAP)
        for name, level in self.bootstrap_features().items():
            self.add(records.feature_level(name, level), self._feature_effect(name, level))
        if versions.writes_zk_migration_state(mv):
            self.add(records.zk_migration_state())
            self.zk_state_written = True
        if txn:
            self.end()

    def bootstrap_features(self) -> dict[str, int]:
        """What ``bootstrap.checkpoint`` holds: metadata.version first."""
        return {"metadata.version": self.format_level, **versions.finalized_features(self.format_level)}

    def _feature_effect(self, name: str, level: int) -> Callable[[int], None]:
        def effect(offset: int) -> None:
            self.image.features[name] = level
            self.truth.feature(name, level, offset)
        return effect

    def upgrade(self, t: int, level: int) -> None:
        """``kafka-features upgrade``: metadata.version, plus the features the new release finalizes."""
        old = self.image.features.get("metadata.version", 0)
        self.add(records.feature_level("metadata.version", level), self._feature_effect("metadata.version", level))
        for name, feature_level in versions.finalized_features(level).items():
            if versions.finalized_features(old).get(name) != feature_level:
                self.add(records.feature_level(name, feature_level), self._feature_effect(name, feature_level))
        self.flush(t)

    # --- registrations -------------------------------------------------------------------

    def register_controller(self, t: int, controller_id: int, incarnation: str) -> None:
        c = Controller(controller_id, incarnation,
                       [{"name": "CONTROLLER", "host": f"controller-{controller_id}", "port": 9093,
                         "securityProtocol": 0}], self.software)
        self.add(records.register_controller(c), lambda _: self.image.controllers.__setitem__(controller_id, c))
        self.flush(t)

    def register_broker(self, t: int, broker_id: int, incarnation: str, rack: str | None, log_dir: str) -> None:
        """A new incarnation registers fenced; its epoch is the offset of the registration. Log
        dirs are registered from 3.7-IV2 (JBOD) on."""
        b = Broker(broker_id, incarnation, self.offset(),
                   [{"name": "PLAINTEXT", "host": f"broker-{broker_id}", "port": 9092, "securityProtocol": 0}],
                   rack, [log_dir] if self.image.mv >= versions.DIRECTORIES else [], self.software)

        def effect(offset: int) -> None:
            self.image.brokers[broker_id] = b
            self.truth.broker(b, offset)
        self.add(records.register_broker(b, self.image.mv), effect)
        self.flush(t)

    def reregister_broker(self, t: int, broker_id: int, log_dir: str) -> None:
        """The same incarnation registers again (after the upgrade to 3.7-IV2, to report its log
        dirs): epoch, fencing and controlled-shutdown state stay."""
        old = self.image.brokers[broker_id]
        b = Broker(old.id, old.incarnation, old.epoch, old.endpoints, old.rack, [log_dir], old.software,
                   old.fenced, old.in_controlled_shutdown)

        def effect(offset: int) -> None:
            self.image.brokers[broker_id] = b
            self.truth.broker(b, offset)
        self.add(records.register_broker(b, self.image.mv), effect)
        self.flush(t)

    def _broker_effect(self, b: Broker, **changes) -> Callable[[int], None]:
        def effect(offset: int) -> None:
            for name, value in changes.items():
                setattr(b, name, value)
            self.truth.broker(b, offset)
        return effect

    def unfence(self, t: int, broker_id: int) -> None:
        """The registration change first, then leaders for partitions left with none whose ISR holds it."""
        b = self.image.brokers[broker_id]
        self.add(records.fencing(b, False, self.image.mv), self._broker_effect(b, fenced=False))
        for topic, p in self.partitions():
            if p.leader == NO_LEADER and broker_id in p.isr:
                self.change(topic, p, {"leader": broker_id})
        self.flush(t)

    def controlled_shutdown(self, t: int, broker_id: int) -> None:
        """From 3.3-IV3 the broker is marked first; leadership and ISR membership move away after."""
        b = self.image.brokers[broker_id]
        if self.image.mv >= versions.CONTROLLED_SHUTDOWN:
            self.add(records.controlled_shutdown(b), self._broker_effect(b, in_controlled_shutdown=True))
        self._leave(broker_id, unclean=False)
        self.flush(t)

    def fence(self, t: int, broker_id: int) -> None:
        """Partitions first (ISR, leaders; unclean elections where a topic allows them), then the fence."""
        b = self.image.brokers[broker_id]
        self._leave(broker_id, unclean=True)
        self.add(records.fencing(b, True, self.image.mv), self._broker_effect(b, fenced=True))
        self.flush(t)

    def unregister(self, t: int, broker_id: int) -> None:
        b = self.image.brokers[broker_id]

        def effect(offset: int) -> None:
            del self.image.brokers[broker_id]
            self.truth.broker_removed(broker_id, offset)
        self.add(records.unregister_broker(b), effect)
        self.flush(t)

    def usable(self, broker_id: int) -> bool:
        """Registered, unfenced and not shutting down: a broker leadership may go to."""
        b = self.image.brokers.get(broker_id)
        return b is not None and not b.fenced and not b.in_controlled_shutdown

    def _leave(self, broker_id: int, unclean: bool) -> None:
        """``generateLeaderAndIsrUpdates``: drop the broker from every ISR (never emptying one) and
        move its leaderships to the first usable ISR member, or to no leader."""
        for topic, p in self.partitions():
            if broker_id not in p.isr and p.leader != broker_id:
                continue
            isr = [r for r in p.isr if r != broker_id] or list(p.isr)
            changes: dict = {}
            if p.leader == broker_id:
                leader = next((r for r in p.replicas if r in isr and r != broker_id and self.usable(r)), NO_LEADER)
                if leader == NO_LEADER and unclean and self.unclean_allowed(topic):
                    leader = next((r for r in p.replicas if r != broker_id and self.usable(r)), NO_LEADER)
                    if leader != NO_LEADER:
                        isr = [leader]
                        changes["leaderRecoveryState"] = 1
                changes["leader"] = leader
            if isr != p.isr:
                changes = {"isr": isr, **changes}
            self.change(topic, p, changes)

    def unclean_allowed(self, topic: Topic) -> bool:
        return self.image.configs.get((2, topic.name), {}).get("unclean.leader.election.enable") == "true"

    # --- partitions ----------------------------------------------------------------------

    def partitions(self) -> list[tuple[Topic, Partition]]:
        return [(t, t.partitions[pid]) for t in sorted(self.image.topics.values(), key=lambda t: t.name)
                for pid in sorted(t.partitions)]

    def change(self, topic: Topic, p: Partition, changes: dict) -> None:
        """One PartitionChangeRecord. An ISR shrink before 3.6-IV0 and any replica removal re-state
        the leader, which bumps the leader epoch (``triggerLeaderEpochBumpIfNeeded``)."""
        if "leader" not in changes and p.leader != NO_LEADER and (
            ("isr" in changes and set(p.isr) - set(changes["isr"]) and self.image.mv < versions.NO_EPOCH_BUMP_ON_SHRINK)
            or ("replicas" in changes and set(p.replicas) - set(changes["replicas"]))
        ):
            changes = {**changes, "leader": p.leader}
        if "replicas" in changes and "directories" not in changes and self.image.mv >= versions.DIRECTORIES:
            changes = {**changes, "directories": directories_from(p.replicas, p.directories, changes["replicas"])}
        if not changes:
            return

        def effect(offset: int) -> None:
            if "replicas" in changes:
                p.replicas = list(changes["replicas"])
            if "directories" in changes:
                p.directories = list(changes["directories"])
            elif "replicas" in changes:  # below 3.7-IV2: every directory is MIGRATING, and stays so
                p.directories = [MIGRATING] * len(p.replicas)  # (PartitionRegistration.merge)
            for name, attr in (("isr", "isr"), ("addingReplicas", "adding"), ("removingReplicas", "removing")):
                if name in changes:
                    setattr(p, attr, list(changes[name]))
            if "leader" in changes:
                p.leader = changes["leader"]
                p.leader_epoch += 1
            if "leaderRecoveryState" in changes:
                p.recovery = changes["leaderRecoveryState"]
            p.partition_epoch += 1
            self.truth.partition(topic, p, offset)
        self.add(records.partition_change(topic, p, self.image.mv, changes), effect)

    def create_topic(self, topic: Topic, configs: dict[str, str], partitions: list[Partition]) -> None:
        """TopicRecord, its ConfigRecords, then one PartitionRecord per partition (one result)."""
        def effect(offset: int) -> None:
            self.image.topics[topic.id] = topic
            self.truth.topic_created(topic, offset)
        self.add(records.topic(topic), effect)
        for key, value in configs.items():
            self.set_config((2, topic.name), key, value)
        for p in partitions:
            self.add_partition(topic, p)

    def add_partition(self, topic: Topic, p: Partition) -> None:
        def effect(offset: int) -> None:
            topic.partitions[p.id] = p
            self.truth.partition(topic, p, offset)
        self.add(records.partition(topic, p, self.image.mv), effect)

    def new_partition(self, pid: int, replicas: list[int]) -> Partition:
        """Leader = first replica, epochs 0; each replica in its broker's log dir when it reported one."""
        dirs = [self.default_dir(r) for r in replicas]
        return Partition(pid, list(replicas), list(replicas), dirs, replicas[0])

    def default_dir(self, broker_id: int) -> str:
        """``ClusterDescriber.defaultDir``: the broker's one log dir; MIGRATING if it reported none."""
        b = self.image.brokers.get(broker_id)
        return b.log_dirs[0] if b is not None and len(b.log_dirs) == 1 else MIGRATING

    def remove_topic(self, topic: Topic) -> None:
        """RemoveTopicRecord; the topic's configs go with it."""
        def effect(offset: int) -> None:
            del self.image.topics[topic.id]
            self.image.configs.pop((2, topic.name), None)
            self.truth.topic_removed(topic, offset)
        self.add(records.remove_topic(topic), effect)

    # --- the rest of the image -------------------------------------------------------------

    def set_config(self, resource: tuple[int, str], key: str, value: str | None) -> None:
        self.add(records.config(*resource, key, value), lambda _: self.image.set_config(resource, key, value))

    def set_quota(self, entity: tuple, key: str, value: float | None) -> None:
        self.add(records.quota(entity, key, value), lambda _: self.image.set_quota(entity, key, value))

    def allocate_producer_ids(self, broker_id: int) -> None:
        """A block of 1000 ids; the record carries the first id of the next block."""
        b = self.image.brokers[broker_id]
        next_id = max(self.image.next_producer_id, 0) + 1000
        self.add(records.producer_ids(broker_id, b.epoch, next_id),
                 lambda _: setattr(self.image, "next_producer_id", next_id))

    def add_acl(self, entry: dict) -> None:
        self.add(records.acl(entry), lambda _: self.image.acls.__setitem__(entry["id"], entry))

    def remove_acl(self, acl_id: str) -> None:
        self.add(records.remove_acl(acl_id), lambda _: self.image.acls.pop(acl_id))

    def set_scram(self, user: str, mechanism: int, credential: dict) -> None:
        self.add(records.scram(user, mechanism, credential),
                 lambda _: self.image.scram.__setitem__((mechanism, user), credential))

    def remove_scram(self, user: str, mechanism: int) -> None:
        self.add(records.remove_scram(user, mechanism), lambda _: self.image.scram.pop((mechanism, user)))

    def set_token(self, entry: dict) -> None:
        self.add(records.token(entry), lambda _: self.image.tokens.__setitem__(entry["tokenId"], entry))

    def remove_token(self, token_id: str) -> None:
        self.add(records.remove_token(token_id), lambda _: self.image.tokens.pop(token_id))
