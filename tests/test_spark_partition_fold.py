"""The column-wise partition fold against the record-by-record one: the same rows for every
partition it takes, and every partition a replay would not take as it is left to the latter."""

import json
import random

import pyarrow as pa
import pytest

from kraftlog.spark import entities
from kraftlog.spark.fold import EVENT_COLUMNS, fold_function
from kraftlog.spark.partition_fold import Fold
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


def _both(rows: pa.Table, replanned: set[str] = frozenset()) -> tuple[pa.Table, pa.Table, Fold]:
    fold = Fold(entities.PARTITION, rows, set(replanned))
    columns = pa.Table.from_batches([fold.folded()])
    return columns, _replayed(fold.left_to_replay()), fold


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
                                                for r in _events(rng, f"t{k}", messy=rng.random() < 0.6)]), set())
        left += int(fold.left.any())
        taken += int(not fold.left.all())
    assert left >= 20 and taken >= 20


def test_a_refused_change_leaves_its_partition_to_replay():
    rng = random.Random(7)
    rows = _table(_events(rng, "t0", messy=False, partitions=1, length=5)
                  + [("c", "t9", 0, 99, 99, 0, 1099, 1, "PARTITION_CHANGE_RECORD",
                      json.dumps({"partitionId": 0, "topicId": "t9", "isr": [1]}))])
    fold = Fold(entities.PARTITION, rows, set())
    left = fold.left_to_replay()
    assert left.column("topic_id").to_pylist() == ["t9"]


def test_a_cluster_with_snapshot_seeds_or_gaps_is_left_to_replay():
    rows = _table(_events(random.Random(3), "t0", messy=False))
    fold = Fold(entities.PARTITION, rows, {"c"})
    assert fold.left.all() and fold.folded().num_rows == 0
