"""Timelines: each entity's records folded in offset order, in parallel across entities.

An entity's events (its own records, and the few records of others that change it, such as its
topic's removal) are bucketed together (``events``) and sorted by effective offset; a Python task
walks its sorted rows once, replaying one entity at a time into a fresh ``ClusterImage``, so the
rules are the state layer's. Out comes one row per state the entity was in, valid from
``valid_from_offset`` up to (not including) ``valid_to_offset``; null while current. (Most
partitions are folded as columns instead, by ``partition_fold``, to the same rows.)

Records of a committed metadata transaction take effect together at its End (their effective
offset); snapshot seeds and gaps from the replay plan reset every entity of their cluster.
"""

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from kraftlog.spark.plan import GAP, SEED, Reset
from kraftlog.spark.replayed import Replayed
from kraftlog.state.image import ClusterImage

#: Columns of an entity's event rows besides ``cluster_id`` and its keys.
EVENT_COLUMNS = ("eff_offset", "offset", "seq", "eff_time", "epoch", "record_type", "data")
SNAPSHOT = "SNAPSHOT"
_FLUSH = 32768


@dataclass(frozen=True)
class Entity:
    """One timeline table: the entity's key, the record types that change it, and its state."""

    table: str
    keys: list[tuple[str, pa.DataType]]
    records: tuple[str, ...]  # its own record types (others reach it through routing)
    state: list[tuple[str, pa.DataType]]
    extract: Callable[[ClusterImage, tuple], tuple | None]  # the entity's state in an image, None = absent
    shown: Callable[[tuple, tuple], tuple] | None = None  # (key, state) -> state as written (redaction)
    follows_plan: bool = True  # False: not reset by snapshots and gaps (raft state)
    routed: tuple[str, ...] = field(default=())  # other record types its events include

    @property
    def key_names(self) -> list[str]:
        return [k for k, _ in self.keys]

    def schema(self) -> pa.Schema:
        return pa.schema([
            ("cluster_id", pa.string()), *self.keys,
            ("valid_from_offset", pa.int64()), ("valid_from_ms", pa.int64()),
            ("valid_to_offset", pa.int64()), ("valid_to_ms", pa.int64()),
            ("change", pa.string()), ("changed", pa.list_(pa.string())),
            ("change_offset", pa.int64()), ("change_records", pa.list_(pa.string())), ("ended_by", pa.string()),
            *self.state,
        ])


class _Rows:
    """Output rows, flushed as Arrow batches."""

    def __init__(self, entity: Entity, redact: bool) -> None:
        self.entity = entity
        self.schema = entity.schema()
        self.shown = entity.shown if redact else None
        self.rows: list[tuple] = []

    def add(self, key: tuple, head: tuple, state: tuple) -> None:
        if self.shown is not None:
            state = self.shown(key[1:], state)
        self.rows.append(key + head + state)

    def flush(self) -> Iterator[pa.RecordBatch]:
        if not self.rows:
            return
        columns = list(zip(*self.rows, strict=True))
        self.rows = []
        yield pa.RecordBatch.from_arrays(
            [pa.array(col, f.type) for col, f in zip(columns, self.schema, strict=True)], schema=self.schema)


class _Timeline:
    """One entity's replay: its image, the state it is in, and the events not yet settled."""

    def __init__(self, entity: Entity, key: tuple, resets: list[Reset], out: _Rows) -> None:
        self.entity, self.key, self.out = entity, key, out
        self.resets, self.next_reset = resets, 0
        self.image = ClusterImage()
        self.state: tuple | None = None
        self.opened: tuple = ()  # valid_from_offset, valid_from_ms, change, changed, change_offset, change_records
        self.at: int | None = None  # effective offset of the unsettled events
        self.at_ms: int | None = None
        self.types: list[str] = []
        self.change_offset = -1
        self.seeded = False  # the unsettled events are a snapshot's

    def feed(self, eff: int, offset: int, ms: int, epoch: int, record_type: str, data: str) -> None:
        if self.at is not None and eff != self.at:
            self.settle()
        self.reset_until(eff)
        if self.at is not None and eff != self.at:  # a seed before ``eff`` with no events of this entity
            self.settle()
        self.image.apply(Replayed(record_type, json.loads(data)), offset, ms, epoch)
        self.at, self.change_offset = eff, offset
        if not self.seeded:  # a snapshot's records take the snapshot's time
            self.at_ms = ms
            self.types.append(record_type)

    def reset_until(self, eff: float) -> None:
        while self.next_reset < len(self.resets) and self.resets[self.next_reset].offset <= eff:
            if self.state is None and self.at is None and eff == float("inf"):
                return  # nothing left that a reset could end
            r = self.resets[self.next_reset]
            self.next_reset += 1
            if self.at is not None:
                self.settle()
            self.image = ClusterImage()
            if r.kind == GAP:
                self.close(r.offset, None, GAP)
            elif r.kind == SEED:
                self.at, self.at_ms, self.change_offset = r.offset, r.snapshot.timestamp, r.offset
                self.types, self.seeded = [SNAPSHOT], True

    def settle(self) -> None:
        """The entity's state after every event at one effective offset."""
        new = self.entity.extract(self.image, self.key[1:])
        if new != self.state:
            old = self.state
            if old is not None:
                self.close(self.at, self.at_ms, None if new is not None else ",".join(self.types))
            if new is not None:
                change = "snapshot" if self.seeded else "created" if old is None else "changed"
                changed = [] if old is None else [n for (n, _), a, b in zip(self.entity.state, old, new, strict=True)
                                                  if a != b]
                self.opened = (self.at, self.at_ms, change, changed, self.change_offset, list(self.types))
                self.state = new
        self.at, self.types, self.seeded = None, [], False

    def close(self, offset: int, ms: int | None, ended_by: str | None) -> None:
        if self.state is not None:
            start, start_ms, change, changed, change_offset, types = self.opened
            self.out.add(self.key, (start, start_ms, offset, ms, change, changed, change_offset, types, ended_by),
                         self.state)
            self.state = None

    def finish(self) -> None:
        if self.at is not None:
            self.settle()
        self.reset_until(float("inf"))
        if self.at is not None:
            self.settle()
        if self.state is not None:
            start, start_ms, change, changed, change_offset, types = self.opened
            self.out.add(self.key, (start, start_ms, None, None, change, changed, change_offset, types, None),
                         self.state)


def fold_function(entity: Entity, resets: dict[str, list[Reset]], redact: bool):
    """The fold as a function of sorted event batches: timeline rows out."""
    names = ["cluster_id", *entity.key_names, *EVENT_COLUMNS]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        out = _Rows(entity, redact)
        timeline: _Timeline | None = None
        width = 1 + len(entity.keys)
        for batch in batches:
            columns = [batch.column(n).to_pylist() for n in names]
            for row in zip(*columns, strict=True):
                key = row[:width]
                if timeline is None or key != timeline.key:
                    if timeline is not None:
                        timeline.finish()
                    plan = resets.get(key[0], []) if entity.follows_plan else []
                    timeline = _Timeline(entity, key, plan, out)
                eff, offset, _seq, ms, epoch, record_type, data = row[width:]
                timeline.feed(eff, offset, ms, epoch, record_type, data)
            if len(out.rows) >= _FLUSH:
                yield from out.flush()
        if timeline is not None:
            timeline.finish()
        yield from out.flush()

    return run
