"""The column-wise partition fold against the record-by-record one: the same rows for every
partition it takes, and every partition a replay would not take as it is left to the latter."""

import json
import random

import numpy as np
import pyarrow as pa
import pytest

from kraftlog.schema import message_of
from kraftlog.schema.fields import INT8, INT32, UUID, Array
from kraftlog.spark import entities
from kraftlog.spark.fold import EVENT_COLUMNS, fold_function
from kraftlog.spark.partition_fold import Fold
from kraftlog.spark.plan import GAP, SEED, Reset, Snapshot
from kraftlog.state.ids import MIGRATING

NAMES = ["cluster_id", "topic_id", "partition_id", *EVENT_COLUMNS]
SORT = [(c, "ascending") for c in ("cluster_id", "topic_id", "partition_id", "valid_from_offset")]
DIR_A, DIR_B = "AAAAAAAAAAAAAAAAAAAABA", "AAAAAAAAAAAAAAAAAAAACA"


def _ids(rng: random.Random) -> list[int]:
    return rng.sample(range(1, 7), rng.randint(1, 4))


# The generators below are built from the schema table: a record carries each untagged field of its
# latest version, and each tagged field now and then, with a value of its type. A field the schema
# gains is generated the day it is declared; the fold refuses it until it is taught (and the merge
# table names it, ``test_the_merge_tables_name_every_field_of_the_schema``).
PARTITION_FIELDS = message_of("PartitionRecord").fields
CHANGE_FIELDS = message_of("PartitionChangeRecord").fields
KEYS = ("partitionId", "topicId")
#: Where a field's meaning narrows the values of its type: the values Kafka writes.
POOLS = {"leader": [-1, 1, 2, 3], "leaderEpoch": range(6), "partitionEpoch": range(10)}
#: How often a change carries a tagged field (others: 0.3).
PRESENT = {"leader": 0.4, "leaderRecoveryState": 0.1, "replicas": 0.15}


def _value(rng: random.Random, f, change: bool):
    """A value of ``f``'s type (narrowed by ``POOLS``)."""
    t = f.type
    if isinstance(t, Array) and t.element is INT32:  # replicas are never empty
        return _ids(rng) if f.json == "replicas" or rng.random() < 0.8 else []
    if isinstance(t, Array) and t.element is UUID:
        return [rng.choice([DIR_A, DIR_B, MIGRATING]) for _ in range(rng.randint(0, 3))]
    if t is INT32:
        return rng.choice(POOLS.get(f.json, range(-1, 4)))
    if t is INT8:  # leaderRecoveryState: -1 is "no change" in a change record
        return rng.choice([-1, 0, 1] if change else [0, 1])
    raise AssertionError(f"no generator for {f.json} ({t.name}): teach this test the type")


def _partition(rng: random.Random, topic: str, p: int, messy: bool) -> dict:
    d = {"partitionId": p, "topicId": topic}
    for f in PARTITION_FIELDS:
        if f.json in KEYS or (f.tag is not None and rng.random() > 0.2):
            continue
        d[f.json] = _value(rng, f, change=False)
    replicas = d["replicas"] = _ids(rng)
    d["isr"], d["leader"] = replicas[: rng.randint(1, len(replicas))], replicas[0]
    d["directories"] = [rng.choice([DIR_A, DIR_B]) for _ in replicas] if rng.random() < 0.3 else []
    if "eligibleLeaderReplicas" in d and rng.random() < 0.5:
        d["eligibleLeaderReplicas"] = None
    if messy and rng.random() < 0.3:
        bad = rng.choice(["dirs", "recovery", "missing", "null_adding"])
        if bad == "dirs":
            d["directories"] = [DIR_A] * (len(replicas) + 1)
        elif bad == "recovery":
            d["leaderRecoveryState"] = 5
        elif bad == "missing":
            del d["leaderEpoch"]
        else:
            d["addingReplicas"] = None
    return d


def _change(rng: random.Random, topic: str, p: int, messy: bool) -> dict:
    d = {"partitionId": p, "topicId": topic}
    for f in CHANGE_FIELDS:
        if f.json in (*KEYS, "directories") or rng.random() > PRESENT.get(f.json, 0.3):
            continue
        d[f.json] = _value(rng, f, change=True)
        if messy and f.json == "leaderRecoveryState" and rng.random() < 0.3:
            d[f.json] = 7
    if "replicas" in d and (not messy or rng.random() < 0.5):  # Kafka writes both from 3.7-IV2
        d["directories"] = [rng.choice([DIR_A, DIR_B, MIGRATING]) for _ in d["replicas"]]
        if messy and rng.random() < 0.3:
            d["directories"].append(DIR_A)
    elif messy and rng.random() < 0.05:
        d["directories"] = [DIR_B]  # fits a one-replica partition only
    return d


def _events(rng: random.Random, topic: str, messy: bool, partitions: int = 3, length: int = 40) -> list[tuple]:
    """One topic's records, routed to each of its partitions as the job routes them: rows of ``NAMES``."""
    out, offset = [], rng.randint(0, 5)
    created: set[int] = set()
    started = not messy or rng.random() < 0.7
    if started:
        out.append((None, "TOPIC_RECORD", {"name": f"name-{topic}", "topicId": topic}))
    for _ in range(length):
        p = rng.randrange(partitions)
        roll = rng.random()
        if roll < 0.03:
            out.append((None, "REMOVE_TOPIC_RECORD", {"topicId": topic}))
            if not messy:
                out.append((None, "TOPIC_RECORD", {"name": f"again-{topic}", "topicId": topic}))
                created.clear()
        elif roll < 0.05:
            out.append((None, "TOPIC_RECORD", {"name": rng.choice(["x", "y"]), "topicId": topic}))
            created.clear()
        elif p not in created or roll < 0.1:
            out.append((p, "PARTITION_RECORD", _partition(rng, topic, p, messy)))
            created.add(p)
        else:
            out.append((p, "PARTITION_CHANGE_RECORD", _change(rng, topic, p, messy)))
        if messy and rng.random() < 0.02:
            out.append((p, "CLEAR_ELR_RECORD", {"topicName": ""}))
    rows = []
    eff_of: dict[int, int] = {}
    for i, (p, kind, data) in enumerate(out):
        offset += 1
        if rng.random() < 0.1 and i + 3 < len(out):  # a transaction: these take effect at its End
            for j in range(i, i + 3):
                eff_of.setdefault(j, offset + 3)
        eff = eff_of.get(i, offset)
        for q in range(partitions) if p is None else [p]:
            rows.append(("c", topic, q, eff, offset, 0, 1000 + eff, 1, kind, json.dumps(data)))
    return rows


def _table(rows: list[tuple]) -> pa.Table:
    t = pa.table([pa.array(c) for c in zip(*rows, strict=True)], names=NAMES)
    return t.sort_by([(c, "ascending") for c in ("cluster_id", "topic_id", "partition_id", "eff_offset", "offset",
                                                 "seq")])


def _replayed(rows: pa.Table, resets=None) -> pa.Table:
    out = fold_function(entities.PARTITION, resets or {}, redact=True)(iter(rows.to_batches()))
    return pa.Table.from_batches(list(out), schema=entities.PARTITION.schema())


def _both(rows: pa.Table, resets=None) -> tuple[pa.Table, pa.Table, Fold]:
    fold = Fold(entities.PARTITION, rows, resets or {})
    columns = pa.Table.from_batches([fold.folded()])
    return columns, _replayed(fold.left_to_replay(), resets), fold


@pytest.mark.parametrize("seed", range(40))
def test_clean_partitions_are_all_folded_as_columns_to_the_same_rows(seed):
    rng = random.Random(seed)
    rows = _table([r for k in range(rng.randint(1, 3)) for r in _events(rng, f"t{k}", messy=False)])
    columns, rest, fold = _both(rows)
    assert rest.num_rows == 0 and not fold.left.any()
    assert columns.num_rows > 0
    assert columns.sort_by(SORT).equals(_replayed(rows).sort_by(SORT))


@pytest.mark.parametrize("seed", range(60))
def test_messy_partitions_are_left_to_replay_and_the_rows_are_the_same(seed):
    rng = random.Random(1000 + seed)
    rows = _table([r for k in range(rng.randint(1, 4))
                   for r in _events(rng, f"t{k}", messy=rng.random() < 0.6)])
    columns, rest, _ = _both(rows)
    assert pa.concat_tables([columns, rest]).sort_by(SORT).equals(_replayed(rows).sort_by(SORT))


def test_messy_cases_do_reach_both_folds():
    """The messy generator is worth running: both folds get partitions across the seeds."""
    left = taken = 0
    for seed in range(60):
        rng = random.Random(1000 + seed)
        fold = Fold(entities.PARTITION, _table([r for k in range(rng.randint(1, 4))
                                                for r in _events(rng, f"t{k}", messy=rng.random() < 0.6)]), {})
        left += int(fold.left.any())
        taken += int(not fold.left.all())
    assert left >= 20 and taken >= 20


def test_a_refused_change_leaves_its_partition_to_replay():
    rng = random.Random(7)
    rows = _table(_events(rng, "t0", messy=False, partitions=1, length=5)
                  + [("c", "t9", 0, 99, 99, 0, 1099, 1, "PARTITION_CHANGE_RECORD",
                      json.dumps({"partitionId": 0, "topicId": "t9", "isr": [1]}))])
    fold = Fold(entities.PARTITION, rows, {})
    left = fold.left_to_replay()
    assert left.column("topic_id").to_pylist() == ["t9"]


def _with_resets(rng: random.Random, rows: list[tuple], partitions: int = 3) -> tuple[list[tuple], list[Reset]]:
    """One topic's rows with resets as a replay plan makes them: gaps, and seeds whose snapshot
    holds the topic and some of its partitions (now and then exactly as the log left them, so
    that nothing changes there), at an offset no log record takes."""
    top = max(r[3] for r in rows) + 5
    offsets = sorted(rng.sample(range(2, top), rng.randint(1, 3)))
    gaps = [at for at in offsets if rng.random() < 0.35]
    seeds = [at for at in offsets if at not in gaps]

    def known(eff: int) -> bool:  # no log record is replayed from a gap to the next seed
        return not any(g <= eff < min([s for s in seeds if s > g], default=1 << 40) for g in gaps)

    resets, out = [], [r for r in rows if r[3] not in offsets and known(r[3])]
    for at in offsets:
        if at in gaps:
            resets.append(Reset(at, GAP))
            continue
        ms = None if rng.random() < 0.1 else 500 + at
        resets.append(Reset(at, SEED, Snapshot(at + 1, 99, ms)))
        last = {}  # the partition's PartitionRecord, if nothing changed it since
        name = None
        for r in sorted(rows, key=lambda r: r[3]):
            if r[3] < at and r[8] == "PARTITION_RECORD":
                last[r[2]] = r[9]
            elif r[3] < at and r[8] == "PARTITION_CHANGE_RECORD":
                last.pop(r[2], None)
            elif r[3] < at and r[8] == "TOPIC_RECORD":
                name = json.loads(r[9])["name"]
        topic = rows[0][1]
        seq = 0
        out += [("c", topic, q, at, at, seq, ms, 1, "TOPIC_RECORD",
                 json.dumps({"name": name if name and rng.random() < 0.6 else "seeded", "topicId": topic}))
                for q in range(partitions)]
        for q in range(partitions):
            if rng.random() < 0.25:
                continue  # the snapshot does not hold it
            seq += 1
            same = last.get(q) if rng.random() < 0.6 else None
            out.append(("c", topic, q, at, at, seq, ms, 1, "PARTITION_RECORD",
                        same or json.dumps(_partition(rng, topic, q, messy=False))))
    return out, resets


@pytest.mark.parametrize("seed", range(40))
def test_partitions_across_seeds_and_gaps_fold_as_columns_to_the_same_rows(seed):
    rng = random.Random(2000 + seed)
    rows, resets = _with_resets(rng, _events(rng, "t0", messy=False))
    table = _table(rows)
    columns, rest, fold = _both(table, {"c": resets})
    assert pa.concat_tables([columns, rest]).sort_by(SORT).equals(_replayed(table, {"c": resets}).sort_by(SORT))
    assert not fold.left[fold.given].all()


def test_seeds_and_gaps_reach_every_kind_of_row():
    """The generator above is worth running: rows the seeds open, close and leave alone, and gaps."""
    seen = set()
    for seed in range(40):
        rng = random.Random(2000 + seed)
        rows, resets = _with_resets(rng, _events(rng, "t0", messy=False))
        out = _replayed(_table(rows), {"c": resets}).to_pylist()
        seen |= {r["change"] for r in out} | {r["ended_by"] for r in out}
        seeds = {r.offset for r in resets if r.kind == SEED}
        seen |= {"kept across a seed" for r in out if any(r["valid_from_offset"] < s < (r["valid_to_offset"] or 1 << 40)
                                                          for s in seeds)}
    assert {"snapshot", "gap", "SNAPSHOT", "kept across a seed", "created", "changed"} <= seen


@pytest.mark.parametrize("same_offset", [False, True])
def test_what_a_plan_never_makes_is_left_to_replay(same_offset):
    """A record at a gap's offset; a gap and a seed at one offset: the replay's order, not a sort's."""
    rows = _table(_events(random.Random(3), "t0", messy=False))
    at = rows.column("eff_offset")[rows.num_rows // 2].as_py()
    resets = [Reset(at + 100, GAP), Reset(at + 100, SEED, Snapshot(at + 101, 9, 5))] if same_offset else [Reset(at, GAP)]
    columns, rest, fold = _both(rows, {"c": resets})
    eff = fold.rows.column("eff_offset").to_numpy()
    touched = fold.given if same_offset else np.isin(fold.key, fold.key[fold.given & (eff == at)])
    assert touched.any() and fold.left[touched].all()
    assert pa.concat_tables([columns, rest]).sort_by(SORT).equals(_replayed(rows, {"c": resets}).sort_by(SORT))


def test_a_field_the_merge_table_does_not_name_is_left_to_replay():
    rows = _table(_events(random.Random(7), "t0", messy=False, partitions=1, length=5)
                  + [("c", "t0", 0, 99, 99, 0, 1099, 1, "PARTITION_CHANGE_RECORD",
                      json.dumps({"partitionId": 0, "topicId": "t0", "isr": [1], "futureField": 1}))])
    fold = Fold(entities.PARTITION, rows, {})
    assert fold.left.all()
    columns, rest, _ = _both(rows)
    assert pa.concat_tables([columns, rest]).sort_by(SORT).equals(_replayed(rows).sort_by(SORT))


def test_replicas_without_directories_follow_kafkas_merge_in_both_folds():
    """PartitionRegistration.merge: all-MIGRATING stays MIGRATING for every replica; with real
    directories, a replica count change without directories is refused (left to replay)."""
    def rows(directories):
        events = [(None, "TOPIC_RECORD", {"name": "n", "topicId": "t0"}),
                  (0, "PARTITION_RECORD", {"partitionId": 0, "topicId": "t0", "replicas": [1, 2], "isr": [1, 2],
                                           "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
                                           "directories": directories}),
                  (0, "PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": "t0", "replicas": [1, 2, 3]})]
        return _table([("c", "t0", 0, o, o, 0, 1000 + o, 1, kind, json.dumps(d))
                       for o, (_, kind, d) in enumerate(events)])
    migrating = rows([])
    columns, rest, fold = _both(migrating)
    assert not fold.left.any() and columns.sort_by(SORT).equals(_replayed(migrating).sort_by(SORT))
    assert columns.sort_by(SORT).column("directories").to_pylist()[-1] == [MIGRATING] * 3
    placed = rows([DIR_A, DIR_B])
    columns, rest, fold = _both(placed)
    assert fold.left.all() and rest.column("replicas").to_pylist()[-1] == [1, 2]
