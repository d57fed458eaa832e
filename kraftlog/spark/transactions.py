"""Metadata transactions (reference §6.4) as a small marker table: which records an End commits
and an Abort drops. The rule is the state layer's own: the markers go through a ``ClusterImage``."""

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import NamedTuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from kraftlog.spark.replayed import Replayed
from kraftlog.state.image import ABORT, BEGIN, END, ClusterImage

MARKERS = (BEGIN, END, ABORT)
COMMITTED, ABORTED, OPEN = "committed", "aborted", "open"

TRANSACTIONS_SCHEMA = StructType([
    StructField("cluster_id", StringType(), False),
    StructField("txn_begin_offset", LongType(), False),
    StructField("txn_end_offset", LongType(), True),  # the End or Abort; null while open
    StructField("txn_end_timestamp", LongType(), True),
    StructField("txn_state", StringType(), False),
])


class Marker(NamedTuple):
    """A Begin-, End- or AbortTransactionRecord of a cluster's log."""

    cluster_id: str
    offset: int
    timestamp: int
    record_type: str
    payload: str | None


def transactions(markers: Iterable[Marker]) -> list[tuple]:
    """Rows of ``TRANSACTIONS_SCHEMA`` from the markers, per cluster in offset order. A marker Kafka
    would refuse (a second Begin, an End with nothing open) changes nothing, as in replay."""
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


def tag(spark: SparkSession, records: DataFrame, txns: list[tuple]) -> DataFrame:
    """``records`` with ``txn_begin_offset``, ``txn_end_offset``, ``txn_end_timestamp`` and ``txn_state``
    for the metadata records from a Begin to its End or Abort (control records are never in one)."""
    t = F.broadcast(spark.createDataFrame(txns, TRANSACTIONS_SCHEMA).withColumnRenamed("cluster_id", "t_cluster"))
    inside = (records.cluster_id == t.t_cluster) & ~records.is_control & (records["offset"] >= t.txn_begin_offset) \
        & (t.txn_end_offset.isNull() | (records["offset"] <= t.txn_end_offset))
    return records.join(t, inside, "left").drop("t_cluster")
