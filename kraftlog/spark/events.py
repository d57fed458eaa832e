"""What each timeline replays, as Arrow rows staged in buckets: the deduplicated log's committed
records inside the replayable ranges (at their effective offset), the seed snapshots' records, and
the raft control records.

A record reaches every entity it changes. A topic's creation and removal reach its partitions and
its configs, and ClearElr reaches partitions; such a row leaves the entity's key open
(``partition_id`` or ``config_name`` null, or ``topic_id`` for ClearElr) and ``expand`` fills it in
with every key of the bucket it can change, as the state layer decides what it does to each.

Rows are bucketed by cluster and key (a config by its resource name, which a topic's removal
routes by), so that one task holds all of an entity's events; a routed record for partitions goes
to every bucket. Each row keeps the hash it was bucketed by (``route_hash``; null for a row of
every bucket), so that a fold can split a big bucket into parts by key (``timelines.fold_bucket``). The tasks
that decode files write the buckets and the tasks that fold them read them, and no event row
passes through the JVM.
"""

import json
import zlib
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kraftlog.spark import entities as E
from kraftlog.spark.fold import EVENT_COLUMNS, Entity

EVENTS_TABLE = "events"  # staged: one folder per bucket
#: Pseudo record at the first offset of a leader epoch: the image observes the epoch, nothing else.
EPOCH_START = "EPOCH_START"
TOPIC_RESOURCE = 2  # ConfigResource.Type TOPIC
#: Every entity's key columns (an entity uses its own, the others stay null).
KEYS = [("topic_id", pa.string()), ("partition_id", pa.int32()), ("broker_id", pa.int32()),
        ("resource_type_id", pa.int32()), ("resource_name", pa.string()), ("config_name", pa.string()),
        ("acl_id", pa.string()), ("feature", pa.string())]
EVENTS = pa.schema([
    ("entity", pa.string()), ("cluster_id", pa.string()), *KEYS,
    ("target", pa.string()),  # the topic a ClearElr names ("" for every topic)
    ("eff_offset", pa.int64()), ("offset", pa.int64()), ("seq", pa.int64()), ("eff_time", pa.int64()),
    ("epoch", pa.int32()), ("record_type", pa.string()), ("data", pa.string()),
    ("route_hash", pa.int64()),  # ``route_hash`` of the row's route; null: a row of every bucket
])
#: Columns a source of events gives (``DECODED``'s names, with the effective offset and time).
SOURCE = ("eff_offset", "offset", "seq", "eff_time", "epoch", "record_type", "data", "topic_id", "topic_name",
          "partition_id", "broker_id", "resource_name")


def route_hash(cluster_id: str, route: object) -> int:
    """The hash an entity's events are bucketed by: the same for every process and run."""
    return zlib.crc32(f"{cluster_id}\0{route}".encode())


def bucket_of(cluster_id: str, route: object, buckets: int) -> int:
    """The bucket of an entity's events."""
    return route_hash(cluster_id, route) % buckets


def _hashes(cluster_id: str, route: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``route_hash`` for a column, computed once per distinct value."""
    if isinstance(route, pa.ChunkedArray):
        route = route.combine_chunks()
    encoded = pc.dictionary_encode(pc.fill_null(route.cast(pa.string()), ""))  # a null reaches no key
    table = np.asarray([route_hash(cluster_id, v) for v in encoded.dictionary.to_pylist()], np.int64)
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    return table[indices] if table.size else np.zeros(len(route), np.int64)


def _json_keys(data: pa.Array, fields: dict[str, tuple[str, pa.DataType]]) -> dict[str, pa.Array]:
    """Key columns read from each row's JSON data (configs and ACLs: few rows)."""
    parsed = [json.loads(d) for d in data.to_pylist()]
    return {column: pa.array([p.get(name) for p in parsed], t) for column, (name, t) in fields.items()}


def _table(entity: Entity, cluster_id: str, src: pa.Table, keys: dict[str, pa.Array],
           target: pa.Array | None = None, hashes: np.ndarray | None = None) -> pa.Table:
    """``src`` as ``EVENTS`` rows of ``entity`` (``hashes``: their ``route_hash``; none: every bucket's)."""
    n = src.num_rows
    return pa.Table.from_pydict({
        "entity": pa.repeat(pa.scalar(entity.table), n), "cluster_id": pa.repeat(pa.scalar(cluster_id), n),
        **{k: keys.get(k, pa.nulls(n, t)) for k, t in KEYS},
        "target": target if target is not None else pa.nulls(n, pa.string()),
        **{c: src.column(c) for c in EVENT_COLUMNS},
        "route_hash": pa.nulls(n, pa.int64()) if hashes is None else pa.array(hashes, pa.int64())}, schema=EVENTS)


def _rows(entity: Entity, cluster_id: str, src: pa.Table, keys: dict[str, pa.Array], target: pa.Array | None,
          route: pa.Array | None, buckets: int) -> list[tuple[int, pa.Table]]:
    """``src`` as rows of ``entity``, split by bucket (a null ``route``: every bucket)."""
    if not src.num_rows:
        return []
    if route is None:
        table = _table(entity, cluster_id, src, keys, target)
        return [(b, table) for b in range(buckets)]
    hashes = _hashes(cluster_id, route)
    table, at = _table(entity, cluster_id, src, keys, target, hashes), hashes % buckets
    order = np.argsort(at, kind="stable")  # one take, then a slice per bucket
    table, at = table.take(pa.array(order)), at[order]
    return [(int(at[lo]), table.slice(lo, hi - lo)) for lo, hi in runs(at)]


def runs(values: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of equal neighbouring values."""
    if not len(values):
        return []
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]]).tolist()
    return list(zip(starts, [*starts[1:], len(values)], strict=True))


def _route(entity: Entity, keys: dict[str, pa.Array]) -> pa.Array:
    """What an entity's own rows are bucketed by: its whole key, except for configs, whose topic's
    removal is routed by resource name. A partition's key is whole, so that one busy topic spreads
    over every bucket; its topic's records go to every bucket."""
    if entity is E.CONFIG:
        return keys["resource_name"]
    columns = [pc.cast(keys[k], pa.string()) for k in entity.key_names]
    return columns[0] if len(columns) == 1 else pc.binary_join_element_wise(*columns, "/")


def routed(cluster_id: str, src: pa.Table, buckets: int, names: dict[str, str]) -> list[tuple[int, pa.Table]]:
    """Every entity's event rows from one cluster's ``SOURCE`` rows, by bucket. ``names``: topic id
    -> name, for a removal (which names only the id) to reach the topic's configs."""
    out = []
    types = src.column("record_type")

    def of(kinds) -> pa.Table:
        return src.filter(pc.is_in(types, pa.array(list(kinds))))

    for entity in E.ENTITIES:
        if not entity.follows_plan:
            continue
        own = of(entity.records)
        keys = {k: own.column(k) for k in entity.key_names if k in own.column_names}
        if entity is E.CONFIG:
            keys = _json_keys(own.column("data"), {"resource_type_id": ("resourceType", pa.int32()),
                                                   "resource_name": ("resourceName", pa.string()),
                                                   "config_name": ("name", pa.string())})
        elif entity is E.ACL:
            keys = _json_keys(own.column("data"), {"acl_id": ("id", pa.string())})
        elif entity is E.FEATURE:
            keys = {"feature": own.column("resource_name")}
        out += _rows(entity, cluster_id, own, keys, None, _route(entity, keys), buckets)
        if E.TOPIC_RECORDS[0] not in entity.routed:
            continue
        topics = of(E.TOPIC_RECORDS)
        if entity is E.CONFIG:
            name = pc.coalesce(topics.column("topic_name"), pa.array(
                [names.get(t) for t in topics.column("topic_id").to_pylist()], pa.string()))
            out += _rows(entity, cluster_id, topics, {"resource_type_id": pa.repeat(pa.scalar(TOPIC_RESOURCE,
                         pa.int32()), topics.num_rows), "resource_name": name}, None, name, buckets)
            continue
        out += _rows(entity, cluster_id, topics, {"topic_id": topics.column("topic_id")}, None, None, buckets)
        clear = of([E.CLEAR_ELR])
        out += _rows(entity, cluster_id, clear, {}, pc.fill_null(clear.column("topic_name"), ""), None, buckets)
    return out


def controller_rows(cluster_id: str, src: pa.Table, buckets: int) -> list[tuple[int, pa.Table]]:
    """The raft control records of ``src`` as controller events (one timeline per cluster)."""
    control = src.filter(pc.is_in(src.column("record_type"), pa.array(list(E.CONTROLLER.records))))
    return _rows(E.CONTROLLER, cluster_id, control, {}, None,
                 pa.repeat(pa.scalar(""), control.num_rows), buckets)


def epoch_starts(cluster_id: str, starts: list[tuple[int, int, int]]) -> pa.Table:
    """The first offset of each leader epoch (epoch, offset, ms) as controller events: the leader is
    unknown there until a LeaderChange says who won."""
    epoch, offset, ms = zip(*starts, strict=True) if starts else ((), (), ())
    src = pa.table({"eff_offset": pa.array(offset, pa.int64()), "offset": pa.array(offset, pa.int64()),
                    "seq": pa.repeat(pa.scalar(-1, pa.int64()), len(starts)), "eff_time": pa.array(ms, pa.int64()),
                    "epoch": pa.array(epoch, pa.int32()),
                    "record_type": pa.repeat(pa.scalar(EPOCH_START), len(starts)),
                    "data": pa.repeat(pa.scalar("{}"), len(starts))})
    return _table(E.CONTROLLER, cluster_id, src, {}, hashes=np.full(len(starts), route_hash(cluster_id, ""), np.int64))


def expand(entity: Entity, rows: pa.Table, at: np.ndarray, names: dict[str, str]
           ) -> tuple[np.ndarray, dict[str, pa.Array]]:
    """``entity``'s rows (``at``, indices into ``rows``) with every open key filled in: one row per
    key of the bucket the routed record can change (a topic's partitions or configs; for ClearElr,
    the partitions of the topic it names, or of every topic). Returns the rows' indices and their
    key columns."""
    def columns(index: np.ndarray) -> dict[str, pa.Array]:
        return {k: rows.column(k).take(pa.array(index)).combine_chunks() for k in entity.key_names}

    if not entity.routed:
        return at, columns(at)
    own_mask = pc.is_in(rows.column("record_type").take(pa.array(at)), pa.array(list(entity.records))) \
        .to_numpy(zero_copy_only=False)
    own, other = at[own_mask], at[~own_mask]
    own_keys = columns(own)
    if not other.size:
        return own, own_keys
    cluster = rows.column("cluster_id").take(pa.array(own))
    keys = pa.table({"cluster_id": cluster, **own_keys}).group_by(["cluster_id", *entity.key_names]) \
        .aggregate([]).to_pylist()
    by_prefix = defaultdict(list)  # what a routed row names -> the keys it reaches
    for k in keys:
        if entity is E.PARTITION:
            by_prefix[(k["cluster_id"], k["topic_id"])].append(k)
            by_prefix[(k["cluster_id"], None)].append(k)
        elif k["resource_type_id"] == TOPIC_RESOURCE:
            by_prefix[(k["cluster_id"], k["resource_name"])].append(k)
    take, filled = [], defaultdict(list)
    routed_rows = rows.select(["cluster_id", "topic_id", "target", "resource_name"]).take(pa.array(other))
    for i, r in zip(other.tolist(), routed_rows.to_pylist(), strict=True):
        if entity is E.CONFIG:
            reached = by_prefix.get((r["cluster_id"], r["resource_name"]), [])
        elif r["topic_id"] is not None:
            reached = by_prefix.get((r["cluster_id"], r["topic_id"]), [])
        else:  # ClearElr: the partitions of the topic it names (any topic that had the name), or all
            reached = [k for k in by_prefix.get((r["cluster_id"], None), [])
                       if r["target"] == "" or names.get(k["topic_id"]) == r["target"]]
        for k in reached:
            take.append(i)
            for name in entity.key_names:
                filled[name].append(k[name])
    index = np.concatenate([own, np.asarray(take, np.int64)])
    return index, {name: pa.concat_arrays([own_keys[name], pa.array(filled[name], EVENTS.field(name).type)])
                   for name in entity.key_names}
