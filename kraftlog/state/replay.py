"""Replay streams of records into images: the log after an image, and snapshots from empty."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from kraftlog.files.heap import REPLAYING, rare_collections
from kraftlog.files.records import Block, Entry
from kraftlog.state.image import ClusterImage, OpenTransaction, Provenance
from kraftlog.state.problems import Problem


@dataclass(slots=True)
class ReplayResult:
    image: ClusterImage
    records: int
    last_read: int = -1  # the highest offset read, the one that ended the replay included

    @property
    def problems(self) -> list[Problem]:
        return self.image.problems

    @property
    def open_transaction(self) -> OpenTransaction | None:
        """A transaction begun and not ended by the requested end: the image is the pre-Begin one."""
        return self.image.transaction


#: ``with rare_full_collections():`` full collections a hundred times rarer while a log is replayed: the
#: image and the decoded records shared across walks live long, yet each full collection visits them all,
#: so its cost grows with the cluster and lands on whatever allocates at the time (``history``'s rendering).
rare_full_collections = functools.partial(rare_collections, REPLAYING)


def replay(
    entries: Iterable[Entry | Block], image: ClusterImage | None = None, until: int | None = None,
    until_time: int | None = None,
) -> ReplayResult:
    """Apply the entries that come after ``image`` (an empty image if none), up to offset ``until``
    and to the last entry with a timestamp at or before ``until_time``; a ``Block`` as each of its
    records would be.

    Entries at or below the image's offset are skipped: segments may start before the snapshot
    the image was loaded from."""
    with rare_full_collections():
        return _replay(entries, ClusterImage.empty() if image is None else image, until, until_time)


def _replay(entries: Iterable[Entry | Block], image: ClusterImage, until: int | None,
            until_time: int | None) -> ReplayResult:
    after = image.provenance.offset
    count = 0
    last_read = -1
    for entry in entries:
        if type(entry) is not Entry:
            offsets = entry.offsets
            ends = np.zeros(len(entry), bool)
            if until_time is not None:
                ends |= entry.timestamps > until_time
            if until is not None:
                ends |= (offsets > after) & (offsets > until)
            end = int(np.argmax(ends)) if ends.any() else len(entry)
            last_read = max(last_read, int(offsets[: end + 1].max()))
            run = entry.part(int(np.searchsorted(offsets[:end], after, side="right")), end)  # consecutive
            if len(run):
                image.apply_block(run)
                count += len(run)
            if end < len(entry):
                break
            continue
        rec, offset, timestamp, epoch = entry
        if offset > last_read:
            last_read = offset
        if until_time is not None and timestamp > until_time:
            break
        if offset <= after:
            continue
        if until is not None and offset > until:
            break
        image.apply(rec, offset, timestamp, epoch)  # a NoOp too: apply is as cheap as pass_over now
        count += 1
    return ReplayResult(image, count, last_read)


def load_snapshot(entries: Iterable[Entry], end_offset: int, epoch: int) -> ClusterImage:
    """The image a ``.checkpoint`` holds: its records replayed onto an empty image.

    Offsets inside a snapshot count from 0, so the provenance comes from the snapshot's id
    (end offset - 1, epoch) and its header's lastContainedLogTimestamp."""
    image = ClusterImage.empty()
    timestamp = -1
    for entry in entries:
        if entry.record.type == "SNAPSHOT_HEADER" and entry.record.error is None:
            timestamp = entry.record.data.get("lastContainedLogTimestamp", -1)
        image.apply(entry.record, entry.offset, entry.timestamp, entry.epoch)
    image.provenance = Provenance(end_offset - 1, epoch, timestamp)
    return image
