"""What happens to the simulated cluster and when: operators, crashes and slow disks choose, the
controller (``controller.py``) writes. Each scenario checks the state it finds, since several run
at once, and schedules its later steps on the simulation's clock.

Kinds are dealt from a shuffled deck (reshuffled when empty), so any run with as many events as
the deck holds has every kind its metadata.version allows.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from kraftlog.synth import ids, versions
from kraftlog.synth.image import NO_LEADER, UNASSIGNED, Topic

if TYPE_CHECKING:
    from kraftlog.synth.sim import Simulation

SECOND = 1000
SESSION_TIMEOUT_MS = 9 * SECOND  # broker.session.timeout.ms
TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32

#: kind -> (copies in the deck, lowest metadata.version that has it)
KINDS = {
    "isr_storm": (3, 0), "preferred_election": (2, 0), "broker_restart": (2, 0), "broker_crash": (1, 0),
    "broker_unregister": (1, 0), "unclean_election": (1, 0), "controller_failover": (1, 0), "reassignment": (2, 0), "topic_create": (2, 0),
    "topic_delete": (1, 0), "topic_recreate": (1, 0), "partitions_add": (1, 0), "config": (4, 0), "acl": (2, 0),
    "quota": (2, 0), "producer_ids": (2, 0), "scram": (1, versions.SCRAM), "token": (1, versions.DELEGATION_TOKENS),
    "transaction": (1, versions.TRANSACTIONS), "aborted_transaction": (1, versions.TRANSACTIONS),
}
TOPIC_CONFIGS = {
    "retention.ms": ("3600000", "86400000", "604800000"), "cleanup.policy": ("compact", "delete", "compact,delete"),
    "min.insync.replicas": ("1", "2"), "segment.bytes": ("104857600", "536870912"),
    "compression.type": ("producer", "lz4", "zstd"), "max.message.bytes": ("1048588", "5242880"),
    "unclean.leader.election.enable": ("true", "false"),
}
BROKER_CONFIGS = {
    "log.cleaner.threads": ("1", "2", "4"), "num.io.threads": ("8", "16"), "num.replica.fetchers": ("1", "2", "4"),
    "listener.name.internal.ssl.key.password": None,  # a secret: a fresh random value each time
}
CLUSTER_CONFIGS = {"log.retention.ms": ("86400000", "604800000"), "min.insync.replicas": ("1", "2"),
                   "auto.create.topics.enable": ("false", "true")}
CLIENT_METRICS_CONFIGS = {"metrics": ("org.apache.kafka.producer.", "org.apache.kafka.consumer.fetch"),
                          "interval.ms": ("30000", "60000"), "match": ("client_software_name=apache-kafka-java",)}
GROUP_CONFIGS = {"consumer.session.timeout.ms": ("45000", "60000"), "consumer.heartbeat.interval.ms": ("3000", "5000")}
QUOTA_KEYS = {"user": ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"),
              "ip": ("connection_creation_rate",)}


class Scenarios:
    """The cluster's life. ``down`` holds nodes whose process is not running; ``busy`` brokers in
    the middle of a restart or a slow spell; ``dead`` nodes that never come back."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.ctl = sim.ctl
        self.rng: random.Random = sim.rng
        self.spec = sim.spec
        self.down: set[int] = set()
        self.busy: set[int] = set()
        self.dead: set[int] = set()
        self.reassigning: set[tuple[str, int]] = set()
        self.deck: list[str] = []
        self.turns: dict[str, int] = {}
        self.log_dirs = sim.node_dirs
        racks = self.spec.brokers >= 3 and self.rng.random() < 0.5
        self.racks = {b: f"rack-{'abc'[b % 3]}" if racks else None for b in self.spec.broker_ids}

    # --- helpers ---------------------------------------------------------------------------

    def at(self, t: int, fn: Callable[[int], object]) -> None:
        self.sim.schedule(t, fn)

    def turn(self, kind: str, cycle: int) -> int:
        """Which step of its cycle of variants a kind is at (add, add, remove, ...): removals come
        as surely as additions do."""
        n = self.turns.get(kind, 0)
        self.turns[kind] = n + 1
        return n % cycle

    def delay(self, low_s: float, high_s: float) -> int:
        return self.rng.randrange(int(low_s * SECOND), int(high_s * SECOND) + 1)

    @property
    def mv(self) -> int:
        return self.ctl.image.mv

    def up_brokers(self) -> list[int]:
        """Brokers running normally that no other scenario is busy with."""
        return [b for b in self.spec.broker_ids
                if b not in self.down and b not in self.busy and self.ctl.usable(b)]

    def can_stop_one(self) -> bool:
        """Keep most brokers up: at most a third of them in a restart or slow spell at once."""
        if self.spec.brokers == 1:
            return True
        return len(self.busy) < max(1, self.spec.brokers // 3) and len(self.up_brokers()) > 1

    def live_voters(self) -> list[int]:
        return [v for v in self.spec.controller_ids if v not in self.down and v not in self.dead]

    # --- the cluster's start ------------------------------------------------------------------

    def start(self, t: int) -> None:
        """The first election, controller and broker registrations, unfencing, the first topics."""
        ctl = self.ctl
        voters = self.spec.controller_ids
        ctl.elect(t, self.rng.choice(voters), voters, bump=self.rng.randrange(1, 3))
        t += self.delay(0.1, 0.5)
        if self.mv >= versions.CONTROLLER_REGISTRATION:
            for v in voters:
                t += self.delay(0.05, 0.3)
                self.at(t, lambda t, v=v: ctl.register_controller(t, v, ids.uuid_text(self.rng)))
        for b in self.spec.broker_ids:
            t += self.delay(0.2, 2)
            self.at(t, lambda t, b=b: self.broker_start(t, b))
        t += self.delay(20, 60)
        for _ in range(self.spec.topics):
            t += self.delay(1, 30)
            self.at(t, self.topic_create)

    def next_kind(self) -> str:
        """The next scenario kind this metadata.version allows, dealt from the deck."""
        while True:
            if not self.deck:
                self.deck = [kind for kind, (copies, _) in KINDS.items() for _ in range(copies)]
                self.rng.shuffle(self.deck)
            kind = self.deck.pop()
            if self.mv >= KINDS[kind][1]:
                return kind

    def random_event(self, t: int) -> None:
        """The next scenario; one that found nothing to act on goes back under the deck."""
        kind = self.next_kind()
        if getattr(self, kind)(t) is False and self.deck:
            self.deck.insert(0, kind)

    # --- brokers ------------------------------------------------------------------------------

    def broker_start(self, t: int, b: int) -> None:
        """A broker process (re)starts: registers fenced, is unfenced once caught up with the
        metadata log, then its replicas rejoin their ISRs."""
        if b in self.dead:
            return
        old = self.ctl.image.brokers.get(b)
        if old is not None and not old.fenced:  # the old incarnation's session has not expired yet
            self.at(t + 2 * SECOND, lambda t: self.broker_start(t, b))
            return
        self.down.discard(b)
        self.busy.add(b)
        self.ctl.register_broker(t, b, ids.uuid_text(self.rng), self.racks[b], self.log_dirs[b])
        self.at(t + self.delay(1, 5), lambda t: self._unfence(t, b))

    def _unfence(self, t: int, b: int) -> None:
        if b in self.down or b not in self.ctl.image.brokers:
            return
        self.ctl.unfence(t, b)
        self.at(t + self.delay(2, 20), lambda t: self._caught_up(t, b))

    def _caught_up(self, t: int, b: int) -> None:
        """Leaders add the restarted replica back to their ISR (AlterPartition)."""
        if self.ctl.usable(b):
            self._expand(t, b)
        self.busy.discard(b)
        self.at(t + self.delay(60, 300), self.preferred_election)

    def _expand(self, t: int, b: int) -> None:
        for topic, p in self.ctl.partitions():
            if b in p.replicas and b not in p.isr and p.leader != NO_LEADER and self.ctl.usable(p.leader):
                self.ctl.change(topic, p, {"isr": [*p.isr, b]})
        self.ctl.flush(t)

    def broker_restart(self, t: int) -> bool:
        """A rolling restart's step: controlled shutdown, fencing, a new incarnation."""
        candidates = self.up_brokers()
        if not candidates or not self.can_stop_one():
            return False
        b = self.rng.choice(candidates)
        self.busy.add(b)
        epoch = self.ctl.image.brokers[b].epoch
        self.ctl.controlled_shutdown(t, b)
        t += self.delay(1, 5)
        self.at(t, lambda t: self._stopped(t, b, epoch))
        self.at(t + self.delay(15, 90), lambda t: self.broker_start(t, b))
        return True

    def _stopped(self, t: int, b: int, epoch: int) -> None:
        """The incarnation with ``epoch`` is gone: fenced unless it was replaced or removed meanwhile."""
        registration = self.ctl.image.brokers.get(b)
        if registration is None or registration.epoch != epoch:
            return
        self.down.add(b)
        if not registration.fenced:
            self.ctl.fence(t, b)
            self._recover_unclean(t)

    def broker_crash(self, t: int, unregister: bool = False) -> bool:
        """The process dies: the controller fences it when its session times out; it comes back later."""
        candidates = self.up_brokers()
        if not candidates or not self.can_stop_one():
            return False
        self.crash(t, self.rng.choice(candidates), unregister=unregister)
        return True

    def broker_unregister(self, t: int) -> bool:
        """As a crash, but an operator unregisters the broker while it is down (``kafka-cluster
        unregister``); it registers afresh when it returns."""
        return self.broker_crash(t, unregister=True)

    def crash(self, t: int, b: int, restart: bool = True, unregister: bool = False) -> None:
        """The broker process dies; with ``restart`` it comes back after a while."""
        registration = self.ctl.image.brokers.get(b)
        if registration is None:
            return
        self.busy.add(b)
        self.down.add(b)
        t += SESSION_TIMEOUT_MS + self.delay(0, 1)
        self.at(t, lambda t, epoch=registration.epoch: self._stopped(t, b, epoch))
        if unregister:
            t += self.delay(5, 30)
            self.at(t, lambda t: self._unregister(t, b))
        if restart:
            self.at(t + self.delay(20, 120), lambda t: self.broker_start(t, b))

    def _unregister(self, t: int, b: int) -> None:
        registration = self.ctl.image.brokers.get(b)
        if b in self.down and registration is not None and registration.fenced:
            self.ctl.unregister(t, b)

    def unclean_election(self, t: int) -> bool:
        """A leader's followers fall behind until its ISR is itself alone, then it crashes; its
        topic allows unclean elections, so an out-of-sync replica takes over (RECOVERING)."""
        if not self.can_stop_one():
            return False
        up = set(self.up_brokers())
        chosen = next(((topic, p) for topic, p in self.ctl.partitions()
                       if p.leader in up and len(p.replicas) > 1 and set(p.replicas) <= up), None)
        if chosen is None:
            return False
        topic, p = chosen
        if not self.ctl.unclean_allowed(topic):
            self.ctl.set_config((TOPIC, topic.name), "unclean.leader.election.enable", "true")
        if p.isr != [p.leader]:
            self.ctl.change(topic, p, {"isr": [p.leader]})
        self.ctl.flush(t)
        self.crash(t + self.delay(1, 10), p.leader)
        return True

    def _recover_unclean(self, t: int) -> None:
        """A leader chosen uncleanly finishes recovery and says so (LeaderRecoveryState back to 0);
        the other replicas then catch up with it and rejoin the ISR."""
        def recover(t: int) -> None:
            for topic, p in self.ctl.partitions():
                if p.recovery and p.leader != NO_LEADER and self.ctl.usable(p.leader):
                    self.ctl.change(topic, p, {"leaderRecoveryState": 0})
                    self.at(t + self.delay(5, 30), lambda t, topic=topic, p=p: self._catch_up(t, topic, p))
            self.ctl.flush(t)
        if any(p.recovery for _, p in self.ctl.partitions()):
            self.at(t + self.delay(2, 10), recover)

    def _catch_up(self, t: int, topic: Topic, p) -> None:
        isr = [*p.isr, *(r for r in p.replicas if r not in p.isr and self.ctl.usable(r))]
        if self._alive(topic, p) and p.leader != NO_LEADER and isr != p.isr:
            self.ctl.change(topic, p, {"isr": isr})
            self.ctl.flush(t)

    def isr_storm(self, t: int) -> bool:
        """A slow broker falls out of its ISRs and back, a few times; each leader reports its
        partitions in one AlterPartition, so one batch per leader."""
        followers = {r for _, p in self.ctl.partitions() for r in p.isr if r != p.leader}
        candidates = [b for b in self.up_brokers() if b in followers]
        if not candidates or not self.can_stop_one():
            return False
        b = self.rng.choice(candidates)
        self.busy.add(b)
        rounds = self.rng.randrange(1, 4)
        for i in range(rounds):
            self.at(t, lambda t: self._shrink(t, b))
            t += self.delay(5, 60)
            self.at(t, lambda t, last=i == rounds - 1: self._regain(t, b, last))
            t += self.delay(5, 30)
        return True

    def _shrink(self, t: int, b: int) -> None:
        by_leader: dict[int, list] = {}
        for topic, p in self.ctl.partitions():
            if b in p.isr and p.leader not in (b, NO_LEADER) and self.ctl.usable(p.leader) and len(p.isr) > 1:
                by_leader.setdefault(p.leader, []).append((topic, p))
        for leader in sorted(by_leader):
            for topic, p in by_leader[leader]:
                self.ctl.change(topic, p, {"isr": [r for r in p.isr if r != b]})
            self.ctl.flush(t)
            t += self.rng.randrange(1, 200)

    def _regain(self, t: int, b: int, last: bool) -> None:
        if self.ctl.usable(b) and b not in self.down:
            self._expand(t, b)
        if last:
            self.busy.discard(b)

    def preferred_election(self, t: int) -> None:
        """``auto.leader.rebalance``: leadership back to each partition's first replica."""
        for topic, p in self.ctl.partitions():
            preferred = p.replicas[0]
            if p.leader not in (preferred, NO_LEADER) and preferred in p.isr and self.ctl.usable(preferred):
                self.ctl.change(topic, p, {"leader": preferred})
        self.ctl.flush(t)

    # --- the quorum -----------------------------------------------------------------------------

    def controller_failover(self, t: int, leader: int | None = None, restart: bool | None = None) -> None:
        """The active controller goes away (its process restarts, or it loses its quorum); the
        others elect a leader after an election timeout and the new epoch starts."""
        old = self.ctl.leader
        if restart is None:
            restart = self.rng.random() < 0.6
        if restart and self.spec.combined and old in self.busy:
            restart = False  # its broker is already restarting: only the controller resigns
        others = [v for v in self.live_voters() if v != old]
        new = leader if leader is not None else (self.rng.choice(others) if others else old)
        gap = self.delay(1, 3) if new != old else self.delay(8, 30)
        if restart:
            self.down.add(old)
            if self.spec.combined:
                self.crash(t, old, restart=False)  # its broker goes too; it returns with the node
        t += gap
        self.sim.pause_until(t)
        self.ctl.elect(t, new, self.live_voters() + ([new] if new in self.down else []),
                       bump=1 if self.rng.random() < 0.8 else 2)
        if restart:
            self.at(t + self.delay(2, 20), lambda t: self._node_back(t, old))

    def _node_back(self, t: int, node: int) -> None:
        if node in self.dead:
            return
        self.down.discard(node)
        if self.mv >= versions.CONTROLLER_REGISTRATION and node in self.spec.controller_ids:
            self.ctl.register_controller(t, node, ids.uuid_text(self.rng))
        if self.spec.combined and node in self.spec.broker_ids:
            self.at(t + self.delay(0.5, 3), lambda t: self.broker_start(t, node))

    def register_controllers(self, t: int) -> None:
        """After the upgrade to 3.7-IV0 the running controllers register."""
        for v in self.live_voters():
            t += self.delay(0.1, 2)
            self.at(t, lambda t, v=v: self.ctl.register_controller(t, v, ids.uuid_text(self.rng)))

    def report_log_dirs(self, t: int) -> None:
        """After the upgrade to 3.7-IV2 the running brokers register again with their log dirs."""
        for b in self.spec.broker_ids:
            if b not in self.down and b in self.ctl.image.brokers:
                t += self.delay(0.1, 2)
                self.at(t, lambda t, b=b: self._report_log_dir(t, b))

    def _report_log_dir(self, t: int, b: int) -> None:
        registration = self.ctl.image.brokers.get(b)
        if b not in self.down and registration is not None and not registration.log_dirs:
            self.ctl.reregister_broker(t, b, self.log_dirs[b])

    # --- topics ---------------------------------------------------------------------------

    def _placement(self, count: int, rf: int) -> list[list[int]] | None:
        """Round-robin over the usable brokers from a random start (no two replicas on one broker)."""
        usable = [b for b in self.spec.broker_ids if self.ctl.usable(b)]
        if len(usable) < rf:
            return None
        start = self.rng.randrange(len(usable))
        return [[usable[(start + p + j) % len(usable)] for j in range(rf)] for p in range(count)]

    def _new_topic(self, name: str | None = None) -> tuple[Topic, dict, list] | None:
        taken = {t.name for t in self.ctl.image.topics.values()}
        name = name or ids.topic_name(self.rng, taken)
        rf = min(self.spec.replication_factor, self.spec.brokers)
        count = max(1, self.spec.partitions + self.rng.randrange(-1, 2)) if self.spec.partitions > 1 else 1
        placement = self._placement(count, rf)
        if placement is None or name in taken:
            return None
        configs = {}
        for key in self.rng.sample(sorted(TOPIC_CONFIGS), self.rng.randrange(0, 3)):
            value = self.rng.choice(TOPIC_CONFIGS[key])
            if key != "min.insync.replicas" or int(value) <= rf:
                configs[key] = value
        topic = Topic(name, ids.uuid_text(self.rng))
        return topic, configs, [self.ctl.new_partition(pid, r) for pid, r in enumerate(placement)]

    def topic_create(self, t: int, name: str | None = None) -> bool:
        """A new topic; once the cluster holds half again its starting topics, old ones make way
        (``--topics`` stays the cluster's size over a long run)."""
        if name is None and len(self.ctl.image.topics) >= self.spec.topics * 3 // 2 + 2:
            return self.topic_delete(t)
        made = self._new_topic(name)
        if made is None:
            return False
        self.ctl.create_topic(*made)
        self.ctl.flush(t)
        return True

    def _some_topic(self) -> Topic | None:
        topics = sorted(self.ctl.image.topics.values(), key=lambda t: t.name)
        return self.rng.choice(topics) if topics else None

    def topic_delete(self, t: int) -> bool:
        topic = self._some_topic()
        if topic is None or len(self.ctl.image.topics) < 2:
            return False
        self.ctl.remove_topic(topic)
        self.ctl.flush(t)
        return True

    def topic_recreate(self, t: int) -> bool:
        """Deleted, then created again under the same name: a new topic id."""
        topic = self._some_topic()
        if topic is None:
            return False
        self.ctl.remove_topic(topic)
        self.ctl.flush(t)
        self.at(t + self.delay(5, 60), lambda t: self.topic_create(t, topic.name))
        return True

    def partitions_add(self, t: int) -> bool:
        topic = self._some_topic()
        if topic is None:
            return False
        rf = len(next(iter(topic.partitions.values())).replicas) if topic.partitions else 1
        placement = self._placement(self.rng.randrange(1, 4), rf)
        if placement is None:
            return False
        first = max(topic.partitions, default=-1) + 1
        for i, replicas in enumerate(placement):
            self.ctl.add_partition(topic, self.ctl.new_partition(first + i, replicas))
        self.ctl.flush(t)
        return True

    def reassignment(self, t: int) -> bool:
        """``kafka-reassign-partitions`` for a few partitions: swap, add or drop a replica. Adding
        ones join after catching up, then the reassignment completes in one record."""
        topic = self._some_topic()
        usable = [b for b in self.spec.broker_ids if self.ctl.usable(b)]
        if topic is None or self.spec.brokers < 2:
            return False
        chosen = [p for p in topic.partitions.values() if (topic.id, p.id) not in self.reassigning]
        started = False
        for p in self.rng.sample(chosen, min(len(chosen), self.rng.randrange(1, 4))):
            target = self._target(p.replicas, usable)
            if target is None or p.leader == NO_LEADER:
                continue
            if set(target) < set(p.replicas):
                isr = [r for r in p.isr if r in target]
                if not isr:
                    continue
                changes = {"replicas": target, "isr": isr}
                if p.leader not in target:
                    changes["leader"] = next((r for r in target if r in isr and self.ctl.usable(r)), NO_LEADER)
                self.ctl.change(topic, p, changes)
            else:
                adding = [r for r in target if r not in p.replicas]
                removing = [r for r in p.replicas if r not in target]
                changes = {"replicas": target + removing, "addingReplicas": adding}
                if removing:
                    changes["removingReplicas"] = removing
                self.ctl.change(topic, p, changes)
                self.reassigning.add((topic.id, p.id))
                if self.mv >= versions.DIRECTORIES:
                    self.at(t + self.delay(0.5, 3), lambda t, p=p: self._assign_dirs(t, topic, p))
                self.at(t + self.delay(10, 120), lambda t, p=p, target=target: self._complete(t, topic, p, target, 0))
            started = True
        self.ctl.flush(t)
        return started

    def _target(self, replicas: list[int], usable: list[int]) -> list[int] | None:
        spare = [b for b in usable if b not in replicas]
        moves = ["swap", "add"] if spare else []
        if len(replicas) > 1:
            moves.append("drop")
        if not moves:
            return None
        move = self.rng.choice(moves)
        if move == "drop":
            victim = self.rng.choice(replicas)
            return [r for r in replicas if r != victim]
        if move == "add":
            return [*replicas, self.rng.choice(spare)]
        out = list(replicas)
        out[self.rng.randrange(len(out))] = self.rng.choice(spare)
        return out

    def _alive(self, topic: Topic, p) -> bool:
        return self.ctl.image.topics.get(topic.id) is topic and topic.partitions.get(p.id) is p

    def _assign_dirs(self, t: int, topic: Topic, p) -> None:
        """AssignReplicasToDirs: a broker placed its new replica in its log dir."""
        if not self._alive(topic, p):
            return
        brokers = self.ctl.image.brokers  # a replica on an unregistered broker keeps waiting
        dirs = [brokers[r].log_dirs[0] if d == UNASSIGNED and r in brokers and brokers[r].log_dirs else d
                for r, d in zip(p.replicas, p.directories, strict=True)]
        if dirs != p.directories:
            self.ctl.change(topic, p, {"directories": dirs})
            self.ctl.flush(t)

    def _complete(self, t: int, topic: Topic, p, target: list[int], attempt: int) -> None:
        if not self._alive(topic, p) or not p.adding:
            self.reassigning.discard((topic.id, p.id))
            return
        isr = [*p.isr, *(r for r in p.adding if r not in p.isr and self.ctl.usable(r))]
        if p.leader != NO_LEADER and all(r in isr for r in target):
            isr = [r for r in isr if r in target]
            changes = {"replicas": target, "isr": isr, "addingReplicas": [], "removingReplicas": []}
            if p.leader not in target:
                changes["leader"] = next((r for r in target if r in isr and self.ctl.usable(r)), NO_LEADER)
            self.ctl.change(topic, p, changes)
            self.reassigning.discard((topic.id, p.id))
        else:
            if p.leader != NO_LEADER and isr != p.isr:
                self.ctl.change(topic, p, {"isr": isr})
            if attempt < 5:
                self.at(t + self.delay(30, 120), lambda t: self._complete(t, topic, p, target, attempt + 1))
            else:
                self.reassigning.discard((topic.id, p.id))  # left stuck, as reassignments sometimes are
        self.ctl.flush(t)

    # --- configs and security ------------------------------------------------------------------

    def config(self, t: int) -> bool:
        """An incremental alter-configs call: set a key, or delete one (a null value)."""
        image = self.ctl.image
        existing = [(r, k) for r, values in sorted(image.configs.items()) for k in sorted(values)]
        if self.turn("config", 4) == 3 and existing:
            resource, key = self.rng.choice(existing)
            self.ctl.set_config(resource, key, None)
        else:
            resource, menu = self._config_target()
            key = self.rng.choice(sorted(menu))
            values = menu[key]
            value = self.rng.choice(values) if values else ids.uuid_text(self.rng)
            self.ctl.set_config(resource, key, value)
        self.ctl.flush(t)
        return True

    def _config_target(self) -> tuple[tuple[int, str], dict]:
        targets = [("broker", BROKER_CONFIGS), ("cluster", CLUSTER_CONFIGS)]
        if self.ctl.image.topics:
            targets += [("topic", TOPIC_CONFIGS)] * 3
        if self.mv >= versions.CONTROLLER_REGISTRATION:
            targets.append(("client-metrics", CLIENT_METRICS_CONFIGS))
        if self.mv >= versions.ZOOKEEPER_GONE:
            targets.append(("group", GROUP_CONFIGS))
        kind, menu = self.rng.choice(targets)
        if kind == "topic":
            return (TOPIC, self._some_topic().name), menu
        if kind == "broker":
            return (BROKER, str(self.rng.choice(self.spec.broker_ids))), menu
        if kind == "cluster":
            return (BROKER, ""), menu
        if kind == "client-metrics":
            return (CLIENT_METRICS, f"subscription-{self.rng.randrange(1, 4)}"), menu
        return (GROUP, f"group-{self.rng.choice(ids.CLIENTS)}"), menu

    def acl(self, t: int) -> bool:
        acls = self.ctl.image.acls
        if self.turn("acl", 3) == 2 and acls:
            self.ctl.remove_acl(self.rng.choice(sorted(acls)))
        else:
            for _ in range(self.rng.randrange(1, 4)):
                self.ctl.add_acl(self._acl_entry())
        self.ctl.flush(t)
        return True

    def _acl_entry(self) -> dict:
        resource_type = self.rng.choice((2, 2, 3, 4, 5))
        if resource_type == 2:
            topic = self._some_topic()
            resource = topic.name if topic else "orders"
        else:
            resource = {3: "group-", 4: "kafka-cluster", 5: "txn-"}[resource_type]
            if resource_type != 4:
                resource += self.rng.choice(ids.CLIENTS)
        return {"id": ids.uuid_text(self.rng), "resourceType": resource_type, "resourceName": resource,
                "patternType": self.rng.choice((3, 3, 4)), "principal": f"User:{self.rng.choice(ids.USERS)}",
                "host": "*", "operation": self.rng.choice((2, 3, 4, 7, 8, 12)),
                "permissionType": self.rng.choice((3, 3, 3, 2))}

    def scram(self, t: int) -> bool:
        """alter-user-scram-credentials: upsert (a fresh salt each time) or delete."""
        existing = sorted(self.ctl.image.scram)
        if self.turn("scram", 3) == 2 and existing:
            mechanism, user = self.rng.choice(existing)
            self.ctl.remove_scram(user, mechanism)
        else:
            mechanism = self.rng.choice((1, 2))
            size = 32 if mechanism == 1 else 64
            self.ctl.set_scram(self.rng.choice(ids.USERS), mechanism, {
                "salt": self.rng.randbytes(32), "storedKey": self.rng.randbytes(size),
                "serverKey": self.rng.randbytes(size), "iterations": self.rng.choice((4096, 8192))})
        self.ctl.flush(t)
        return True

    def quota(self, t: int) -> bool:
        quotas = self.ctl.image.quotas
        if self.turn("quota", 3) == 2 and quotas:
            entity = self.rng.choice(sorted(quotas, key=repr))
            self.ctl.set_quota(entity, self.rng.choice(sorted(quotas[entity])), None)
        else:
            kind = self.rng.choice(("user", "user", "client-id", "user+client", "ip"))
            if kind == "ip":
                entity = (("ip", f"10.0.{self.rng.randrange(256)}.{self.rng.randrange(1, 255)}"),)
            elif kind == "user+client":
                entity = (("client-id", self.rng.choice(ids.CLIENTS)), ("user", self.rng.choice(ids.USERS)))
            else:
                names = ids.USERS if kind == "user" else ids.CLIENTS
                entity = ((kind, self.rng.choice((*names, None))),)  # None: the default entity
            key = self.rng.choice(QUOTA_KEYS["ip" if kind == "ip" else "user"])
            self.ctl.set_quota(entity, key, float(self.rng.choice((50, 100, 200, 1024, 1048576, 10485760))))
        self.ctl.flush(t)
        return True

    def token(self, t: int) -> bool:
        """create-delegation-token, renew, or expire (the controller then removes it)."""
        tokens = self.ctl.image.tokens
        step = self.turn("token", 3)
        if tokens and step:
            token_id = self.rng.choice(sorted(tokens))
            if step == 1:
                old = tokens[token_id]
                self.ctl.set_token({**old, "expirationTimestamp": min(old["maxTimestamp"], t + 86_400_000)})
            else:
                self.ctl.remove_token(token_id)
        else:
            owner = f"User:{self.rng.choice(ids.USERS)}"
            self.ctl.set_token({"owner": owner, "requester": owner, "renewers": [f"User:{self.rng.choice(ids.USERS)}"],
                                "issueTimestamp": t, "maxTimestamp": t + 7 * 86_400_000,
                                "expirationTimestamp": t + 86_400_000, "tokenId": ids.uuid_text(self.rng)})
        self.ctl.flush(t)
        return True

    def producer_ids(self, t: int) -> bool:
        usable = [b for b in self.spec.broker_ids if self.ctl.usable(b)]
        if not usable:
            return False
        self.ctl.allocate_producer_ids(self.rng.choice(usable))
        self.ctl.flush(t)
        return True

    # --- metadata transactions (3.6-IV1+) ------------------------------------------------------

    def _bulk(self) -> list[tuple[Topic, dict, list]]:
        """Topics imported in one go; their records may span several batches, so the controller
        writes them in a metadata transaction (KIP-868, as the ZK-migration driver writes its batches)."""
        made = []
        for _ in range(self.rng.randrange(2, 5)):
            topic = self._new_topic()
            if topic is not None and all(topic[0].name != m[0].name for m in made):
                made.append(topic)
        return made

    def transaction(self, t: int) -> bool:
        made = self._bulk()
        if not made:
            return False
        self.ctl.begin(None)
        for topic in made:
            self.ctl.create_topic(*topic)
        self.ctl.end()
        self.ctl.flush(t)
        return True

    def aborted_transaction(self, t: int) -> bool:
        """The controller fails over after the transaction's first batch: the new leader aborts it."""
        made = self._bulk()
        if not made:
            return False
        self.ctl.begin(None)
        self.ctl.create_topic(*made[0])
        self.ctl.flush(t)
        self.controller_failover(t)
        return True
