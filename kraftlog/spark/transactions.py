"""Metadata transactions (reference §6.4) from their markers: which records an End commits and
an Abort drops. The rule is the state layer's own: the markers go through a ``ClusterImage``."""

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import NamedTuple

from kraftlog.spark.replayed import Replayed
from kraftlog.state.image import ABORT, BEGIN, END, ClusterImage

MARKERS = (BEGIN, END, ABORT)
COMMITTED, ABORTED, OPEN = "committed", "aborted", "open"


class Marker(NamedTuple):
    """A Begin-, End- or AbortTransactionRecord of a cluster's log."""

    cluster_id: str
    offset: int
    timestamp: int
    record_type: str
    payload: str | None


def transactions(markers: Iterable[Marker]) -> list[tuple[str, int, int | None, int | None, str]]:
    """(cluster_id, begin offset, End or Abort offset, its timestamp, state) from the markers, per
    cluster in offset order (no End while open). A marker Kafka would refuse (a second Begin, an End
    with nothing open) changes nothing, as in replay."""
    by_cluster = defaultdict(list)
    for m in markers:
        by_cluster[m.cluster_id].append(m)
    out = []
    for cluster, rows in by_cluster.items():
        image = ClusterImage()
        for m in sorted(rows, key=lambda m: m.offset):
            before = image.transaction
            image.apply(Replayed(m.record_type, json.loads(m.payload or "{}")), m.offset, m.timestamp)
            if before is not None and image.transaction is None:
                state = COMMITTED if m.record_type == END else ABORTED
                out.append((cluster, before.begin_offset, m.offset, m.timestamp, state))
        if image.transaction is not None:
            out.append((cluster, image.transaction.begin_offset, None, None, OPEN))
    return out
