"""Partitions' cells (``model.Cell``) while the log goes by, as rows of numbers merged with numpy.

A fold closes a partition's cell each time its changes move to another bucket: hundreds of thousands
of cells per million records while the buckets are narrow, against the few tens of thousands a page
keeps once they have widened. ``Cells`` keeps them as rows and merges them a batch at a time, as
``Cell.merge`` and ``collect._regroup`` would have one by one: each track's cells end up the same,
in the same order (``tests/test_report_cells.py`` checks it against ``Cell`` field by field).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from kraftlog.report.model import Cell, PartitionTrack

_FIELDS = tuple(f.name for f in dataclasses.fields(Cell))
#: A row: the track (by number), when it was put (merges and a track's cells go in this order), the bucket,
#: then ``Cell``'s fields in order.
_TRACK, _ORDER, _BUCKET = 0, 1, 2
_AT = {name: 3 + i for i, name in enumerate(_FIELDS)}
_ROW = 3 + len(_FIELDS)
#: ``Cell.merge``: what the later cell gives, the least of, and the sums; the rest is the earlier one's.
_LATER = [_AT[f] for f in ("last_offset", "last_time", "isr", "leader")]
_LEAST = [_AT["min_isr"]]
_SUMS = [_AT[f] for f in ("leader_changes", "shrinks", "expands")]
_MERGE_ROWS = 1 << 16  # rows held before they are merged (or twice those left by the last merge)


class Cells:
    """The cells put in the partitions' tracks (``put``: a bucket index, then ``Cell``'s fields), made into
    ``PartitionTrack.cells`` at the end (``made``); ``regroup`` is ``collect._regroup`` of every track's cells."""

    def __init__(self, partitions: dict[tuple[str, int], PartitionTrack]) -> None:
        self.partitions = partitions  # the model's: a track no longer there has its cells dropped
        self.tracks: list[PartitionTrack | None] = []
        self.numbers: dict[int, int] = {}  # id of a track -> its number (its index in ``tracks``)
        self.chunks: list[np.ndarray] = []
        self.ones: list[tuple] = []  # rows put one at a time
        self.rows = 0
        self.order = 0
        self.limit = _MERGE_ROWS

    def number(self, track: PartitionTrack) -> int:
        n = self.numbers.get(id(track))
        if n is None:
            n = self.numbers[id(track)] = len(self.tracks)
            self.tracks.append(track)
        return n

    def put(self, tracks: np.ndarray, cells: np.ndarray) -> None:
        """Cells (rows: bucket index, then ``Cell``'s fields) into the tracks numbered ``tracks``, in this order."""
        k = len(tracks)
        if not k:
            return
        rows = np.empty((k, _ROW), np.int64)
        rows[:, _TRACK] = tracks
        rows[:, _ORDER] = np.arange(self.order, self.order + k)
        rows[:, _BUCKET:] = cells
        self.order += k
        self.chunks.append(rows)
        self._grown(k)

    def put_one(self, track: PartitionTrack, cell: tuple) -> None:
        self.ones.append((self.number(track), self.order, *cell))
        self.order += 1
        self._grown(1)

    def _grown(self, k: int) -> None:
        self.rows += k
        if self.rows > self.limit:
            self._merged()
            self.limit = max(_MERGE_ROWS, 2 * self.rows)

    def _all(self) -> np.ndarray:
        if self.ones:
            self.chunks.append(np.asarray(self.ones, np.int64).reshape(-1, _ROW))
            self.ones = []
        rows = np.concatenate(self.chunks) if self.chunks else np.zeros((0, _ROW), np.int64)
        self.chunks = []
        return rows

    def _merged(self) -> np.ndarray:
        """One row per track and bucket, as the cells put there merge in the order put (``Cell.merge``); the
        rows of tracks the model no longer has are dropped."""
        rows = self._all()
        rows = rows[self._alive()[rows[:, _TRACK]]]
        rows = _merge(rows[np.lexsort((rows[:, _ORDER], rows[:, _BUCKET], rows[:, _TRACK]))])
        self.chunks, self.rows = [rows], len(rows)
        return rows

    def _alive(self) -> np.ndarray:
        """Per track number, whether the model has that track (those it has not are forgotten)."""
        alive = []
        for n, track in enumerate(self.tracks):
            here = track is not None and self.partitions.get((track.topic_id, track.partition)) is track
            if track is not None and not here:
                del self.numbers[id(track)]
                self.tracks[n] = None
            alive.append(here)
        return np.asarray(alive, bool)

    def regroup(self, factor: int) -> None:
        """``collect._regroup`` of each track's cells: bucket ``i`` becomes ``i // factor``, the cells of a new
        bucket merged in the order of their old ones, and a track's cells then in bucket order."""
        rows = self._merged()  # by track and bucket: a new bucket's in the order of their old ones
        rows[:, _BUCKET] //= factor  # (not negative: times are positive)
        rows = _merge(rows)
        rows[:, _ORDER] = np.arange(self.order, self.order + len(rows))
        self.order += len(rows)
        self.chunks, self.rows = [rows], len(rows)

    def made(self) -> None:
        """Each track's cells as ``Cell``s in its ``cells``, in the order their buckets were first put."""
        rows = self._merged()
        rows = rows[np.lexsort((rows[:, _ORDER], rows[:, _TRACK]))]
        tracks = self.tracks
        for n, bucket, *fields in rows[:, [_TRACK, _BUCKET, *range(3, _ROW)]].tolist():
            tracks[n].cells[bucket] = Cell(*fields)
        self.chunks, self.rows = [], 0


def _merge(rows: np.ndarray) -> np.ndarray:
    """Rows sorted by track, bucket and order, one per track and bucket: the first's order, bucket and
    first fields, the last's later fields, the least min ISR and the summed counts (``Cell.merge``)."""
    if not len(rows):
        return rows
    head = np.ones(len(rows), bool)
    head[1:] = (rows[1:, _TRACK] != rows[:-1, _TRACK]) | (rows[1:, _BUCKET] != rows[:-1, _BUCKET])
    starts = np.flatnonzero(head)
    if len(starts) == len(rows):
        return rows
    ends = np.append(starts[1:], len(rows)) - 1
    out = rows[starts]
    out[:, _LATER] = rows[ends][:, _LATER]
    out[:, _LEAST] = np.minimum.reduceat(rows[:, _LEAST], starts)
    out[:, _SUMS] = np.add.reduceat(rows[:, _SUMS], starts)
    return out
