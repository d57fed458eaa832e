"""The report's cells kept as rows (``report.cells.Cells``) against ``Cell`` made and merged one by one, as
``collect`` made them before: the same cells, field by field, in the same order in each track."""

import importlib
import random

import numpy as np

from kraftlog.report import cells as cells_module
from kraftlog.report.cells import Cells
from kraftlog.report.model import Cell, PartitionTrack

collect_module = importlib.import_module("kraftlog.report.collect")


def _track(topic: str, p: int) -> PartitionTrack:
    return PartitionTrack(topic, topic, p, 3, 1, (1, 2, 3), None, 3)


def _put(track: PartitionTrack, idx: int, *cell: int) -> None:
    """A cell into the track one by one: made, or merged into the one there (``Cell.merge``)."""
    made = track.cells.get(idx)
    if made is None:
        track.cells[idx] = Cell(*cell)
    else:
        made.merge(Cell(*cell))


def test_cells_merge_in_the_order_put_and_regroup_by_old_buckets():
    partitions = {("t", 0): _track("t", 0), ("t", 1): _track("t", 1)}
    store = Cells(partitions)
    t0, t1 = store.number(partitions[("t", 0)]), store.number(partitions[("t", 1)])
    # (bucket, first offset, first time, last offset, last time, isr, min isr, leader, moves, shrinks, expands)
    store.put(np.asarray([t0, t1, t0]), np.asarray([(7, 10, 700, 12, 701, 2, 2, 1, 1, 1, 0),
                                                    (3, 11, 300, 11, 300, 3, 3, 2, 0, 0, 1),
                                                    (6, 13, 600, 14, 601, 3, 1, 2, 1, 0, 1)]))
    store.put_one(partitions[("t", 0)], (7, 15, 702, 15, 702, 1, 1, 3, 1, 1, 0))
    assert partitions[("t", 0)].cells == {}  # made at the end
    store.regroup(2)  # t-0: buckets 6 and 7 become 3, 6's cell first (older bucket), though put after 7's
    store.put_one(partitions[("t", 0)], (1, 20, 200, 20, 200, 3, 3, 1, 0, 0, 1))
    store.made()  # in the order first put (3 was, 1 came after the widening)
    assert list(partitions[("t", 0)].cells.items()) == [(3, Cell(13, 600, 15, 702, 1, 1, 3, 3, 2, 1)),
                                                        (1, Cell(20, 200, 20, 200, 3, 3, 1, 0, 0, 1))]
    assert list(partitions[("t", 1)].cells.items()) == [(1, Cell(11, 300, 11, 300, 3, 3, 2, 0, 0, 1))]
    store = Cells(partitions)
    for p in (0, 1):
        store.put_one(partitions[("t", p)], (5, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0))
    partitions[("t", 1)] = _track("t", 1)
    store.regroup(1)  # a merge: the cells of a track the model no longer has are dropped
    assert store.rows == 1


def test_cells_agree_with_cells_made_one_by_one(monkeypatch):
    """Random puts (in batches and one at a time), widenings and tracks removed and re-made, merged often
    (a tiny merge threshold) and seldom: each live track's cells as ``Cell.merge`` and ``collect._regroup``
    leave them, field by field and in order."""
    rng = random.Random(18)
    for merge_rows in (3, 1 << 16):
        monkeypatch.setattr(cells_module, "_MERGE_ROWS", merge_rows)
        for _ in range(30):
            keys = [("t", p) for p in range(4)]
            fast = {k: _track(*k) for k in keys}
            slow = {k: _track(*k) for k in keys}
            store = Cells(fast)
            for _ in range(rng.randrange(5, 60)):
                op = rng.random()
                if op < 0.1:  # a widening
                    factor = rng.choice((2, 5, 10))
                    store.regroup(factor)
                    for track in slow.values():
                        track.cells = collect_module._regroup(track.cells, factor, Cell.merge)
                elif op < 0.15:  # a partition re-made: its old track's cells go with it
                    k = rng.choice(keys)
                    fast[k], slow[k] = _track(*k), _track(*k)
                else:
                    batch = []
                    for _ in range(rng.randrange(1, 6)):
                        k = rng.choice(keys)
                        t = rng.randrange(1, 400)
                        batch.append((k, (rng.randrange(0, 40), rng.randrange(1000), t, rng.randrange(1000), t + 5,
                                          rng.randrange(4), rng.randrange(4), rng.randrange(-1, 4), rng.randrange(3),
                                          rng.randrange(3), rng.randrange(3))))
                    for k, cell in batch:
                        _put(slow[k], *cell)
                    if len(batch) == 1 and op < 0.5:
                        store.put_one(fast[batch[0][0]], batch[0][1])
                    else:
                        store.put(np.asarray([store.number(fast[k]) for k, _ in batch]),
                                  np.asarray([c for _, c in batch]))
            store.made()
            for k in keys:
                assert list(fast[k].cells.items()) == list(slow[k].cells.items())
