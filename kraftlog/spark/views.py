"""Snapshot-equivalent views: the timeline rows whose validity interval holds a chosen offset.

A point is an offset per cluster: one given with ``--at-offset``, the last offset before the first
record later than a ``--at-time``, or a checkpoint's last contained offset (end offset - 1). The
view at offset N is the state after every record with offset <= N, as ``kraftlog replay`` gives it.
"""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from kraftlog.spark.fold import Entity

POINTS_SCHEMA = StructType([
    StructField("cluster_id", StringType(), False),
    StructField("at_offset", LongType(), False),
    StructField("at", StringType(), False),  # what asked for it: "offset N", "time T", "checkpoint NAME"
])


def points(spark: SparkSession, rows: list[tuple[str, int, str]]) -> DataFrame:
    return spark.createDataFrame(sorted(set(rows)), POINTS_SCHEMA)


def view(history: DataFrame, entity: Entity, at: DataFrame) -> DataFrame:
    """``entity``'s states at each point: valid_from_offset <= at_offset < valid_to_offset."""
    p = F.broadcast(at.withColumnRenamed("cluster_id", "p_cluster"))
    holds = (history.cluster_id == p.p_cluster) & (history.valid_from_offset <= p.at_offset) \
        & (history.valid_to_offset.isNull() | (history.valid_to_offset > p.at_offset))
    named = ["resource_type"] if "resource_type" in history.columns else []  # a config's resource type name
    return history.join(p, holds).select("cluster_id", "at_offset", "at", *entity.key_names,
                                         *(n for n, _ in entity.state), *named)
