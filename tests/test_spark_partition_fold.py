"""The column-wise partition fold against the record-by-record one: the same rows for every
partition it takes, and every partition a replay would not take as it is left to the latter."""

import json
import random

import numpy as np
import pyarrow as pa
import pytest

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


def _partition(rng: random.Random, topic: str, p: int, messy: bool) -> dict:
    replicas = _ids(rng)
    d = {"partitionId": p, "topicId": topic, "replicas": replicas, "isr": replicas[: rng.randint(1, len(replicas))],
         "leader": replicas[0], "leaderEpoch": rng.randint(0, 5), "partitionEpoch": rng.randint(0, 9)}
    if rng.random() < 0.3:
        d["directories"] = [rng.choice([DIR_A, DIR_B]) for _ in replicas]
    if rng.random() < 0.2:
        d["eligibleLeaderReplicas"] = None if rng.random() < 0.5 else _ids(rng)
    if rng.random() < 0.2:
        d["leaderRecoveryState"] = rng.choice([0, 1])
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
    for f in ("isr", "addingReplicas", "removingReplicas", "eligibleLeaderReplicas", "lastKnownElr"):
        if rng.random() < 0.3:
            d[f] = _ids(rng) if rng.random() < 0.8 else []
    if rng.random() < 0.4:
        d["leader"] = rng.choice([-1, 1, 2, 3])
    if rng.random() < 0.1:
        d["leaderRecoveryState"] = rng.choice([-1, 0, 1, 7] if messy else [-1, 0, 1])
    if rng.random() < 0.15:
        d["replicas"] = _ids(rng)
        if rng.random() < 0.5:
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
