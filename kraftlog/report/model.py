"""The timeline model a report is drawn from: small, and bounded whatever the log's size.

Counts live in time buckets whose width grows as the log's time span does, so their number stays
under a cap; event lists keep their first and last items and count the rest. What remains grows
with the cluster (brokers, partitions), never with the number of records.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

T = TypeVar("T")

#: Bucket widths in ms; each is a multiple of the one before, so buckets merge exactly when the
#: span outgrows the cap. After one day the width doubles.
WIDTHS = (100, 200, 1_000, 2_000, 10_000, 20_000, 60_000, 120_000, 600_000, 1_200_000, 3_600_000,
          7_200_000, 21_600_000, 43_200_000, 86_400_000)


def next_width(width: int) -> int:
    return next((w for w in WIDTHS if w > width), width * 2)


class Capped(Generic[T]):
    """The first and the last ``cap // 2`` items of a stream, and how many were left out between.

    Items given by ``add_many`` past the head are made only when the tail is read, and only those it
    keeps then: a long stream's items mostly fall out of the tail before anyone reads it. What waits to be
    made is at most the tail's length plus one call's items."""

    def __init__(self, cap: int) -> None:
        self.head: list[T] = []
        self._tail: deque[T] = deque(maxlen=cap - cap // 2)
        self._waiting: deque[tuple[Callable[[int, int], list[T]], int, int]] = deque()  # after ``_tail``
        self._waiting_n = 0
        self.half = cap // 2
        self.total = 0

    def append(self, item: T) -> None:
        self.total += 1
        if len(self.head) < self.half:
            self.head.append(item)
        elif self._waiting:
            self._wait(lambda lo, hi: [item], 0, 1)
        else:
            self._tail.append(item)

    def add_many(self, n: int, make: Callable[[int, int], list[T]]) -> None:
        """``append`` of ``n`` items, ``make(lo, hi)`` giving items ``lo``..``hi``: only those kept are made
        (the tail's when it is read; ``make`` must give the same items then)."""
        room = min(max(self.half - len(self.head), 0), n)
        if room:
            self.head += make(0, room)
        rest = max(room, n - (self._tail.maxlen or 0))
        if rest < n:
            self._wait(make, rest, n)
        self.total += n

    def _wait(self, make: Callable[[int, int], list[T]], lo: int, hi: int) -> None:
        self._waiting.append((make, lo, hi))
        self._waiting_n += hi - lo
        keep = self._tail.maxlen or 0
        if self._waiting_n >= keep:
            self._tail.clear()  # the waiting items push all of it out
            while self._waiting_n - (self._waiting[0][2] - self._waiting[0][1]) >= keep:
                _, a, b = self._waiting.popleft()
                self._waiting_n -= b - a

    @property
    def tail(self) -> deque[T]:
        skip = max(self._waiting_n - (self._tail.maxlen or 0), 0)  # within the first waiting call's (``_wait``)
        while self._waiting:
            make, lo, hi = self._waiting.popleft()
            self._tail.extend(make(lo + skip, hi))
            skip = 0
        self._waiting_n = 0
        return self._tail

    def __iter__(self) -> Iterator[T]:
        yield from self.head
        yield from self.tail

    def __len__(self) -> int:
        return len(self.head) + len(self.tail)

    @property
    def omitted(self) -> int:
        return self.total - len(self)


class Event(NamedTuple):
    """Something that happened at one record. ``kind`` picks the marker; ``value`` is what a chart
    plots (a level, a count, a broker epoch); ``key`` ties it to a row (a partition)."""

    offset: int
    time: int
    kind: str
    subject: str
    detail: str
    value: int | None = None
    key: Any = None


#: Partition health, worst first: what an incident needs first.
#: offline: no leader (leader -1), Kafka's OfflinePartitionsCount (controller/metrics/ControllerMetricsChanges.java);
#: leader unavailable: its leader is a fenced or unregistered broker;
#: under-replicated: ISR smaller than the replicas; under min ISR: ISR smaller than min.insync.replicas;
#: ELR: eligible leader replicas recorded (KIP-966: the ISR fell below min ISR).
HEALTH = ("offline", "leader unavailable", "under min ISR", "under-replicated", "ELR")
Health = tuple[int, int, int, int, int]  # partitions in each HEALTH state, in that order


@dataclass(slots=True)
class Bucket:
    """What the log holds in one time slot: records by type, the churn counted there, and the most
    partitions in each health state at once while it lasted (None: no partition changed health)."""

    first_offset: int
    last_offset: int
    records: int = 0
    types: Counter = field(default_factory=Counter)
    leader_changes: int = 0
    isr_shrinks: int = 0
    isr_expands: int = 0
    health_peak: Health | None = None
    health_end: Health | None = None

    def merge(self, other: Bucket) -> None:
        """``other`` covers the later records (buckets merge in time order)."""
        self.first_offset = min(self.first_offset, other.first_offset)
        self.last_offset = max(self.last_offset, other.last_offset)
        self.records += other.records
        self.types.update(other.types)
        self.leader_changes += other.leader_changes
        self.isr_shrinks += other.isr_shrinks
        self.isr_expands += other.isr_expands
        if other.health_peak is not None:
            self.health_peak = other.health_peak if self.health_peak is None else \
                tuple(map(max, self.health_peak, other.health_peak))
            self.health_end = other.health_end


@dataclass(slots=True)
class Cell:
    """One partition in one bucket: its changes there and the ISR size they left."""

    first_offset: int
    first_time: int
    last_offset: int
    last_time: int
    isr: int  # size after the last change in the bucket
    min_isr: int
    leader: int
    leader_changes: int = 0
    shrinks: int = 0
    expands: int = 0

    def merge(self, later: Cell) -> None:
        """``later`` covers the later records (buckets merge in time order)."""
        self.last_offset, self.last_time = later.last_offset, later.last_time
        self.isr, self.leader = later.isr, later.leader
        self.min_isr = min(self.min_isr, later.min_isr)
        self.leader_changes += later.leader_changes
        self.shrinks += later.shrinks
        self.expands += later.expands


@dataclass(slots=True)
class PartitionTrack:
    """One partition's churn over the walk, with the state it started from."""

    topic: str
    topic_id: str
    partition: int
    replicas: int
    leader: int
    isr: tuple[int, ...]
    start_time: int | None  # None: it existed before the walk began
    start_isr: int
    removed_time: int | None = None
    leader_changes: int = 0
    shrinks: int = 0
    expands: int = 0
    unclean: int = 0
    cells: dict[int, Cell] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def churn(self) -> int:
        return self.leader_changes + self.shrinks + self.expands

    @property
    def rank(self) -> tuple:
        """Where the page lists it: most churn first, ties by name (a total order: the key is in it)."""
        return -self.churn, self.topic, self.partition, self.topic_id


class PartitionHealth(NamedTuple):
    """A partition in a health state at the end of the log, with what put it there."""

    name: str
    leader: int
    isr: tuple[int, ...]
    replicas: int
    min_isr: int
    elr: tuple[int, ...]


@dataclass(slots=True)
class Epoch:
    """A Raft epoch of the metadata quorum, from its first batch; ``leader`` from its LeaderChange."""

    epoch: int
    offset: int
    time: int
    leader: int = -1
    voters: str = ""


@dataclass(slots=True)
class BrokerLane:
    """A broker's state over the walk: where it started, then each transition."""

    start_state: str  # "active" | "fenced" | "shutdown" | "absent"
    events: Capped[Event]


@dataclass(slots=True)
class Timeline:
    """Everything a report shows, for one node's copy of the log."""

    source: str
    cluster_id: str | None
    node_id: int | None
    base: str
    width: int = WIDTHS[0]
    buckets: dict[int, Bucket] = field(default_factory=dict)
    first_offset: int | None = None
    last_offset: int | None = None
    records: int = 0
    untimed: int = 0  # records with no timestamp (<= 0), left out of the buckets
    type_totals: Counter = field(default_factory=Counter)
    epochs: Capped[Epoch] = field(default_factory=lambda: Capped(2000))
    controller_events: Capped[Event] = field(default_factory=lambda: Capped(400))
    brokers: dict[int, BrokerLane] = field(default_factory=dict)
    partitions: dict[tuple[str, int], PartitionTrack] = field(default_factory=dict)
    partitions_dropped: int = 0  # removed partitions left out of ``partitions``: too little churn to be drawn
    leader_events: Capped[Event] = field(default_factory=lambda: Capped(2000))
    topic_events: Capped[Event] = field(default_factory=lambda: Capped(1000))
    start_topics: int = 0
    changes: Capped[Event] = field(default_factory=lambda: Capped(1000))  # configs, ACLs, quotas, SCRAM, tokens
    feature_events: Capped[Event] = field(default_factory=lambda: Capped(400))
    start_metadata_version: int | None = None
    aborted_records: int = 0
    problems: Capped[str] = field(default_factory=lambda: Capped(100))
    start_health: Health = (0, 0, 0, 0, 0)
    health_changes: Capped[tuple[int, int, Health]] = field(default_factory=lambda: Capped(4000))  # offset, time
    end_health: dict[str, list[PartitionHealth]] = field(default_factory=dict)  # HEALTH name -> partitions

    @property
    def time_range(self) -> tuple[int, int] | None:
        """First and last bucketed ms (bucket starts to bucket ends)."""
        if not self.buckets:
            return None
        return min(self.buckets) * self.width, (max(self.buckets) + 1) * self.width
