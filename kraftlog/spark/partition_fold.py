"""Partition timelines folded as columns: the bulk of a busy log's timeline events.

A partition's state after each PartitionChangeRecord is ``merge_partition`` applied in turn, but
every field it changes is either replaced when present (leader, ISR, the reassignment and ELR
lists, recovery state) or counted (the two epochs). So the state after any event is read off
columns: the last event of its lifetime that set each field, and running counts since its
PartitionRecord. Only replicas and directories depend on the state before in a way counts cannot
say; they change at the few PartitionRecords and reassignments, which go through the state
layer's own ``new_partition`` and ``placement`` one by one.

The replay plan's resets (a snapshot seed, a gap) reach each partition as an event of their own at
their offset, ahead of the snapshot's records there: they end the partition's lifetime as a topic's
removal does, a seed's records start the next one, and the rows they open or close read as the
record-by-record fold writes them ("snapshot", "gap").

A partition whose events a plain replay would not take as they are (a record of a topic or
partition that does not exist, a malformed or out-of-range field, a ClearElrRecord, a record at a
gap's offset, two resets at one offset) is left to ``fold``'s record-by-record replay, whole: this
module only takes what it can fold to the same rows, and ``tests/test_spark_partition_fold.py``
holds the two side by side.

What each field does comes from the state layer's tables (``PARTITION_RECORD``,
``PARTITION_CHANGE_RECORD``): the lists, placement fields and defaults are read from them. The
fold is built for their rules as they stand (lists replaced when not null, the leader's sentinel
that bumps the leader epoch, the recovery state's sentinel, placement); a record carrying a field
the tables do not name, or one whose rule is not among those, goes to the record-by-record fold.
"""

import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kraftlog.spark.fold import SNAPSHOT, Entity
from kraftlog.spark.plan import GAP, SEED, Reset
from kraftlog.state.problems import ReplayProblem
from kraftlog.state.topics import (
    ALWAYS_BUMPS,
    KEY,
    LEADER_RECOVERY_STATES,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    PLACEMENT,
    REPLACE,
    REQUIRED,
    Init,
    Merge,
    new_partition,
    placement,
)

TOPIC, REMOVE, PARTITION, CHANGE, SEEDED, GAPPED = range(6)
#: A reset's event: its record type (what ``change_records`` and ``ended_by`` say) and kind.
_RESETS = {SEED: (SNAPSHOT, SEEDED), GAP: (GAP, GAPPED)}
_KINDS = {"TOPIC_RECORD": TOPIC, "REMOVE_TOPIC_RECORD": REMOVE, "PARTITION_RECORD": PARTITION,
          "PARTITION_CHANGE_RECORD": CHANGE, **dict(_RESETS.values())}

#: The two sentinel fields this fold is built for, with the rules it folds them by.
_LEADER, _RECOVERY = "leader", "leaderRecoveryState"
_FOLDED_SENTINELS = {
    _LEADER: (Merge("sentinel", "leader", PARTITION_CHANGE_RECORD[_LEADER].unchanged, bumps="leaderEpoch"),
              Init("sentinel", "leader")),
    _RECOVERY: (Merge("sentinel", "leaderRecoveryState", PARTITION_CHANGE_RECORD[_RECOVERY].unchanged),
                Init("sentinel", "leaderRecoveryState", absent=0)),
    "leaderEpoch": (None, Init("sentinel", "leaderEpoch")),
    "partitionEpoch": (None, Init("sentinel", "partitionEpoch")),
}
NO_LEADER_CHANGE = _FOLDED_SENTINELS[_LEADER][0].unchanged
NO_RECOVERY_STATE_CHANGE = _FOLDED_SENTINELS[_RECOVERY][0].unchanged


def _foldable(name: str, rule: Merge | Init, change: bool) -> bool:
    """Whether this fold folds ``name``'s rule as the state layer declares it."""
    if rule.rule in (KEY, PLACEMENT):
        return True
    if rule.rule == REPLACE and change:
        return rule.state == name
    if rule.rule == REPLACE:  # a PartitionRecord's list: refused or empty when absent or null
        return rule.state == name and rule.absent in (REQUIRED, ()) and rule.null in (REQUIRED, ())
    built = _FOLDED_SENTINELS.get(name, (None, None))[0 if change else 1]
    return rule == built


#: Fields of each record this fold takes; a record with any other field goes to the record-by-record fold.
_FOLDED = {
    CHANGE: frozenset(n for n, m in PARTITION_CHANGE_RECORD.items() if _foldable(n, m, True)),
    PARTITION: frozenset(n for n, i in PARTITION_RECORD.items() if _foldable(n, i, False)),
}
#: The lists replaced when present: (JSON name, its PartitionRecord value when absent (None: refused)).
_LISTS = tuple((n, None if PARTITION_RECORD[n].absent is REQUIRED else PARTITION_RECORD[n].absent)
               for n, m in PARTITION_CHANGE_RECORD.items() if m.rule == REPLACE and n in _FOLDED[CHANGE]
               and n in _FOLDED[PARTITION])
_NULL_IS_EMPTY = {n for n, _ in _LISTS if PARTITION_RECORD[n].null == ()}
_PLACEMENT = tuple(n for n, m in PARTITION_CHANGE_RECORD.items() if m.rule == PLACEMENT)
_ABSENT = -1
assert ALWAYS_BUMPS == "partitionEpoch" and PARTITION_CHANGE_RECORD[_LEADER].bumps == "leaderEpoch", \
    "the fold counts these epochs"


def state_column(name: str) -> str:
    """The timeline column of a partition state field (``addingReplicas`` -> ``adding_replicas``)."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).lower()


class _Interned:
    """Distinct values as dense codes: equal codes, equal values."""

    def __init__(self) -> None:
        self.codes: dict[tuple, int] = {}
        self.values: list[tuple] = []

    def code(self, value) -> int:
        value = tuple(value)
        c = self.codes.get(value)
        if c is None:
            c = self.codes[value] = len(self.values)
            self.values.append(value)
        return c

    def array(self, codes: np.ndarray, t: pa.ListType) -> pa.Array:
        """The lists of ``codes`` as a list array, gathered with numpy (a list ``take`` is slower)."""
        lengths = np.fromiter(map(len, self.values), np.int64, len(self.values))
        firsts = np.cumsum(lengths) - lengths
        n = lengths[codes]
        offsets = np.r_[0, np.cumsum(n)]
        at = np.repeat(firsts[codes] - offsets[:-1], n) + np.arange(offsets[-1])
        flat = pa.array([x for v in self.values for x in v], t.value_type)
        values = pa.array(flat.to_numpy()[at]) if pa.types.is_integer(t.value_type) else flat.take(pa.array(at))
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values)


def _ints(value) -> bool:
    return isinstance(value, list) and all(type(x) is int for x in value)


class _Distinct:
    """Each distinct payload parsed once: what it sets as a PartitionChangeRecord (``_ABSENT``:
    nothing) and as a PartitionRecord, its name as a TopicRecord, and whether a replay would take
    it as each (a PartitionRecord's required fields and directories are checked by
    ``new_partition`` itself, in ``Fold._place``)."""

    def __init__(self, payloads: list[str], lists: _Interned, names: _Interned) -> None:
        n = len(payloads)
        self.data = [json.loads(p) for p in payloads]
        self.ok = {k: np.ones(n, bool) for k in (TOPIC, PARTITION, CHANGE)}
        self.leader = np.full(n, NO_LEADER_CHANGE, np.int64)
        self.recovery = np.full(n, NO_RECOVERY_STATE_CHANGE, np.int64)
        self.epochs = np.zeros((n, 2), np.int64)  # a PartitionRecord's leaderEpoch, partitionEpoch
        self.changed = {f: np.full(n, _ABSENT, np.int64) for f, _ in _LISTS}
        self.recorded = {f: np.full(n, _ABSENT, np.int64) for f, _ in _LISTS}
        self.moves = np.zeros(n, bool)  # a change of replicas or directories
        self.name = np.zeros(n, np.int64)
        for i, d in enumerate(self.data):
            self._parse(i, d, lists, names)

    def _parse(self, i: int, d: dict, lists: _Interned, names: _Interned) -> None:
        name = d.get("name")
        self.ok[TOPIC][i] = isinstance(name, str)
        self.name[i] = names.code((name,))
        self.ok[PARTITION][i] = _FOLDED[PARTITION].issuperset(d)
        self.ok[CHANGE][i] = _FOLDED[CHANGE].issuperset(d)
        leader = d.get(_LEADER, NO_LEADER_CHANGE)
        recovery = d.get(_RECOVERY, NO_RECOVERY_STATE_CHANGE)
        epochs = d.get("leaderEpoch", 0), d.get("partitionEpoch", 0)
        if not all(type(x) is int for x in (leader, recovery, *epochs)):
            self.ok[PARTITION][i] = self.ok[CHANGE][i] = False
            return
        self.leader[i], self.recovery[i], self.epochs[i] = leader, recovery, epochs
        self.ok[CHANGE][i] &= recovery == NO_RECOVERY_STATE_CHANGE or recovery in LEADER_RECOVERY_STATES
        self.moves[i] = any(d.get(f) is not None for f in _PLACEMENT)
        for f, default in _LISTS:
            value = d.get(f)
            if value is not None and not _ints(value):
                self.ok[PARTITION][i] = self.ok[CHANGE][i] = False
            elif value is not None:
                self.changed[f][i] = self.recorded[f][i] = lists.code(value)
            elif f in _NULL_IS_EMPTY or (f not in d and default is not None):
                self.recorded[f][i] = lists.code(())
            # else ``new_partition`` refuses the record (``_place`` finds out)


def _last(cond: np.ndarray) -> np.ndarray:
    """For each row, the index of the last row at or before it where ``cond`` holds (-1: none)."""
    return np.maximum.accumulate(np.where(cond, np.arange(len(cond)), -1))


def _before(last: np.ndarray, key_start: np.ndarray) -> np.ndarray:
    """``_last`` of the row before, within the row's own key (-1: none)."""
    out = np.r_[-1, last[:-1]]
    out[out < key_start] = -1
    return out


def _key_starts(rows: pa.Table) -> np.ndarray:
    """Where each partition's rows start (rows sorted by key)."""
    c = pc.dictionary_encode(rows.column("cluster_id").combine_chunks()).indices.to_numpy()
    t = pc.dictionary_encode(rows.column("topic_id").combine_chunks()).indices.to_numpy()
    part = rows.column("partition_id").to_numpy()
    return np.r_[True, (c[1:] != c[:-1]) | (t[1:] != t[:-1]) | (part[1:] != part[:-1])]


def _with_resets(rows: pa.Table, resets: dict[str, list[Reset]]) -> tuple[pa.Table, np.ndarray]:
    """``rows`` with an event per reset of its cluster in each partition's rows, ahead of the
    events at its offset; and which rows are the given ones."""
    if not any(resets.values()):
        return rows, np.ones(rows.num_rows, bool)
    start = _key_starts(rows)
    starts = np.flatnonzero(start)
    clusters = rows.column("cluster_id").take(pa.array(starts)).to_pylist()
    source, added = [], []
    for i, cluster in zip(starts.tolist(), clusters, strict=True):
        for r in resets.get(cluster, []):
            source.append(i)
            added.append((r.offset, None if r.snapshot is None else r.snapshot.timestamp, *_RESETS[r.kind]))
    if not added:
        return rows, np.ones(rows.num_rows, bool)
    at = pa.array(source, pa.int64())
    eff, ms, types, _ = zip(*added, strict=True)
    extra = pa.table({**{name: rows.column(name).take(at) for name in ("cluster_id", "topic_id", "partition_id")},
                      "eff_offset": eff, "offset": eff, "seq": [-1] * len(added), "eff_time": ms,
                      "epoch": [None] * len(added), "record_type": types, "data": ["{}"] * len(added)},
                     schema=rows.schema)
    key = np.cumsum(start) - 1
    n = rows.num_rows
    order = np.lexsort([np.r_[np.arange(n), np.zeros(len(added), np.int64)],
                        np.r_[np.ones(n, np.int64), np.zeros(len(added), np.int64)],
                        np.r_[rows.column("eff_offset").to_numpy(), np.asarray(eff, np.int64)],
                        np.r_[key, key[source]]])
    return pa.concat_tables([rows, extra]).take(pa.array(order)), order < n


class Fold:
    """The partitions of one bucket's ordered rows: those folded here, and the keys left to ``fold``."""

    def __init__(self, entity: Entity, rows: pa.Table, resets: dict[str, list[Reset]]) -> None:
        self.entity = entity
        rows, self.given = _with_resets(rows, resets)
        self.rows = rows  # not empty
        start = _key_starts(rows)
        self.key = np.cumsum(start) - 1
        self.key_start = np.flatnonzero(start)[self.key]
        types = pc.dictionary_encode(rows.column("record_type").combine_chunks())
        kinds = np.asarray([_KINDS.get(x, -1) for x in types.dictionary.to_pylist()], np.int64)
        self.kind = kinds[types.indices.to_numpy()]
        data = pc.dictionary_encode(rows.column("data").combine_chunks())
        self.lists, self.names = _Interned(), _Interned()
        self.values = _Distinct(data.dictionary.to_pylist(), self.lists, self.names)
        self.payload = data.indices.to_numpy()
        bad = (self.kind < 0) | (self.given & (self.kind >= SEEDED))  # no record is named like a reset
        for k, ok in self.values.ok.items():  # a removal's payload is only its topic id
            bad |= (self.kind == k) & ~ok[self.payload]
        bad |= self._at_resets(resets)
        bad |= self._out_of_order()
        self._place(bad)
        self.left = np.isin(self.key, self.key[bad])

    def _at_resets(self, resets: dict[str, list[Reset]]) -> np.ndarray:
        """Events a replay would take in another order than a sort by offset: any at a gap's offset,
        every one of a cluster with two resets at one offset."""
        eff = self.rows.column("eff_offset").to_numpy()
        cluster = self.rows.column("cluster_id")
        bad = np.zeros(len(eff), bool)
        for c, rs in resets.items():
            if not rs:
                continue
            offsets = [r.offset for r in rs]
            mine = pc.equal(cluster, c).to_numpy(zero_copy_only=False)
            if len(set(offsets)) < len(offsets):
                bad |= mine
            gaps = np.asarray([r.offset for r in rs if r.kind == GAP], np.int64)
            bad |= mine & self.given & np.isin(eff, gaps)
        return bad

    def _out_of_order(self) -> np.ndarray:
        """Records a replay would refuse: a partition, or a topic's removal, with no topic; a change
        with no partition."""
        kind, ks = self.kind, self.key_start
        topic_before = _before(_last((kind == TOPIC) | (kind == REMOVE) | (kind >= SEEDED)), ks)
        has_topic = (topic_before >= 0) & (kind[np.maximum(topic_before, 0)] == TOPIC)
        life_before = _before(_last(kind != CHANGE), ks)
        has_partition = (life_before >= 0) & (kind[np.maximum(life_before, 0)] == PARTITION)
        return (((kind == PARTITION) | (kind == REMOVE)) & ~has_topic) | ((kind == CHANGE) & ~has_partition)

    def _place(self, bad: np.ndarray) -> None:
        """Replicas and directories at each PartitionRecord and move, one by one through the state
        layer (a bad directory count marks the key bad)."""
        kind, v = self.kind, self.values
        self.moves = (kind == PARTITION) | ((kind == CHANGE) & v.moves[self.payload])
        self.replicas = np.full(len(kind), _ABSENT, np.int64)
        self.directories = np.full(len(kind), _ABSENT, np.int64)
        current: dict[int, dict] = {}
        dirs = self.dirs = _Interned()
        bad_keys = set(self.key[bad].tolist())
        for i in np.flatnonzero(self.moves).tolist():
            key = int(self.key[i])
            if key in bad_keys:
                continue
            data = v.data[self.payload[i]]
            try:
                if kind[i] == PARTITION:
                    p = new_partition(data)
                    state = current[key] = {"replicas": p["replicas"], "directories": p["directories"]}
                else:
                    replicas, directories = placement(current[key], data)
                    state = current[key] = {"replicas": replicas, "directories": directories}
            except (ReplayProblem, KeyError, TypeError, ValueError):
                bad[i] = True
                bad_keys.add(key)
                continue
            if not _ints(state["replicas"]) or not all(isinstance(d, str) for d in state["directories"]):
                bad[i] = True
                bad_keys.add(key)
                continue
            self.replicas[i] = self.lists.code(state["replicas"])
            self.directories[i] = dirs.code(state["directories"])

    def folded(self) -> pa.RecordBatch:
        """The timeline rows of the keys folded here (``Entity.schema`` columns)."""
        keep = np.flatnonzero(~self.left)
        rows = self.rows.select(["cluster_id", "topic_id", "partition_id", "eff_offset", "offset", "eff_time",
                                 "record_type"])
        rows = (rows if keep.size == len(self.left) else rows.take(pa.array(keep))).combine_chunks()
        kind, payload = self.kind[keep], self.payload[keep]
        key, n = self.key[keep], keep.size
        v = self.values
        if not n:
            return pa.RecordBatch.from_pylist([], schema=self.entity.schema())
        first = np.r_[True, key[1:] != key[:-1]]
        key_start = np.flatnonzero(first)[np.cumsum(first) - 1]

        # lifetimes: from a PartitionRecord to the next record of its topic (or its next PartitionRecord)
        life = _last(kind != CHANGE)
        alive = (life >= key_start) & (kind[np.maximum(life, 0)] == PARTITION)
        topic = _last(kind == TOPIC)
        is_change = kind == CHANGE
        sets_leader = is_change & (v.leader[payload] != NO_LEADER_CHANGE)
        state: dict[str, np.ndarray] = {}
        state["topic_name"] = v.name[payload][np.maximum(topic, 0)]
        state["leader"] = v.leader[payload][_last((kind == PARTITION) | sets_leader)]
        p_epochs = v.epochs[payload][np.maximum(life, 0)]
        leader_changes, changes = np.cumsum(sets_leader), np.cumsum(is_change)
        at_life = np.maximum(life, 0)
        state["leader_epoch"] = p_epochs[:, 0] + leader_changes - leader_changes[at_life]
        state["partition_epoch"] = p_epochs[:, 1] + changes - changes[at_life]
        recovery = v.recovery[payload]
        sets_recovery = (kind == PARTITION) | (is_change & (recovery != NO_RECOVERY_STATE_CHANGE))
        record_recovery = np.where(recovery == NO_RECOVERY_STATE_CHANGE, 0, recovery)  # a record's default
        state["leader_recovery_state"] = np.where(kind == PARTITION, record_recovery, recovery)[_last(sets_recovery)]
        moved = _last(self.moves[keep])
        state["replicas"] = self.replicas[keep][np.maximum(moved, 0)]
        for f, _ in _LISTS:
            column = state_column(PARTITION_CHANGE_RECORD[f].state)
            changed = v.changed[f][payload]
            value = np.where(kind == PARTITION, v.recorded[f][payload], changed)
            state[column] = value[_last((kind == PARTITION) | (is_change & (changed != _ABSENT)))]
        state["directories"] = self.directories[keep][np.maximum(moved, 0)]
        return self._rows(rows, key, kind, first, alive, state)

    def _rows(self, rows: pa.Table, key: np.ndarray, kind: np.ndarray, first: np.ndarray, alive: np.ndarray,
              state: dict[str, np.ndarray]) -> pa.RecordBatch:
        """One row per state: settled after each run of events at one effective offset. ``state``:
        each state column's codes after each event (equal codes, equal values)."""
        n = len(key)
        eff = rows.column("eff_offset").to_numpy()
        group_start = first | np.r_[True, eff[1:] != eff[:-1]]
        starts = np.flatnonzero(group_start)
        ends = np.r_[starts[1:], n] - 1
        g_alive, g_first = alive[ends], first[starts]
        prev_alive = np.r_[False, g_alive[:-1]] & ~g_first
        names = [name for name, _ in self.entity.state]
        g_state = {name: state[name][ends] for name in names}
        bits = np.zeros(len(starts), np.int64)  # the state columns that differ from the group before's
        for j, name in enumerate(names):
            g = g_state[name]
            bits[1:] |= (g[1:] != g[:-1]).astype(np.int64) << j
        differs = (g_alive != prev_alive) | (g_alive & prev_alive & (bits != 0))
        changes = np.flatnonzero(differs)  # groups where the state changes
        opens = changes[g_alive[changes]]
        nxt = np.full(changes.size, -1)  # the next change of the same key closes a row
        nxt[:-1] = np.where(key[starts[changes[1:]]] == key[starts[changes[:-1]]], changes[1:], -1)
        close = nxt[g_alive[changes]]
        closed = close >= 0
        cl = np.maximum(close, 0)

        at = ends[opens]
        times = rows.column("eff_time")
        ms, timed = pc.fill_null(times, 0).to_numpy(), times.is_valid().to_numpy(zero_copy_only=False)
        offset = rows.column("offset").to_numpy()
        # a seed's group lists the snapshot, not its records (its event is the group's first)
        seeded = kind[starts] == SEEDED
        listed = ~np.repeat(seeded, np.diff(np.r_[starts, n])) | (kind == SEEDED)
        types = rows.column("record_type").chunk(0).filter(pa.array(listed))
        records = pa.ListArray.from_arrays(pa.array(np.r_[0, np.cumsum(np.add.reduceat(listed, starts))], pa.int32()),
                                           types)

        def when(values: np.ndarray, mask: np.ndarray) -> pa.Array:
            return pa.array(values, pa.int64(), mask=~mask)

        ended = np.flatnonzero(closed & ~g_alive[cl])  # rows whose partition is gone after them
        which = np.zeros(len(opens), np.int64)
        which[ended] = np.arange(1, ended.size + 1)
        ended_by = pa.concat_arrays([pa.nulls(1, pa.string()),
                                     pc.binary_join(records.take(pa.array(cl[ended])), ",")]).take(pa.array(which))
        created = ~prev_alive[opens]
        changed = _changed(np.where(created, 0, bits[opens]), names)
        take = pa.array(at)
        columns = {
            **{k: rows.column(k).chunk(0).take(take) for k in ("cluster_id", "topic_id", "partition_id")},
            "valid_from_offset": pa.array(eff[at]), "valid_from_ms": when(ms[at], timed[at]),
            "valid_to_offset": when(eff[ends[cl]], closed), "valid_to_ms": when(ms[ends[cl]], closed & timed[ends[cl]]),
            "change": pa.array(np.where(seeded[opens], "snapshot", np.where(created, "created", "changed"))),
            "changed": changed,
            "change_offset": pa.array(offset[at]), "change_records": records.take(pa.array(opens)),
            "ended_by": ended_by,
        }
        for name, t in self.entity.state:
            col = g_state[name][opens]
            if name == "topic_name":
                columns[name] = pa.array([v[0] for v in self.names.values] or [""], pa.string()).take(pa.array(col))
            elif name == "directories":
                columns[name] = self.dirs.array(col, t)
            elif pa.types.is_list(t):
                columns[name] = self.lists.array(col, t)
            else:
                columns[name] = pa.array(col).cast(t)
        schema = self.entity.schema()
        return pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)

    def left_to_replay(self) -> pa.Table:
        """The rows of the keys this fold does not take, for ``fold`` (which adds the resets itself)."""
        return self.rows.filter(pa.array(self.left & self.given))


def _changed(bits: np.ndarray, names: list[str]) -> pa.Array:
    """Per row, the names of the state columns whose bit is set."""
    uniq, inverse = np.unique(bits, return_inverse=True)
    lists = [[n for j, n in enumerate(names) if b >> j & 1] for b in uniq.tolist()]
    return pa.array(lists, pa.list_(pa.string())).take(pa.array(inverse.ravel()))
