"""Snapshot-equivalent views: the timeline rows whose validity interval holds a chosen offset.

A point is an offset per cluster: one given with ``--at-offset``, the last offset before the first
record later than a ``--at-time``, or a checkpoint's last contained offset (end offset - 1). The
view at offset N is the state after every record with offset <= N, as ``kraftlog replay`` gives it.
"""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import LongType, StringType, StructField, StructType

from kraftlog.spark import entities
from kraftlog.spark.timelines import history_schema

POINTS_SCHEMA = StructType([
    StructField("cluster_id", StringType(), False),
    StructField("at_offset", LongType(), False),
    StructField("at", StringType(), False),  # what asked for it: "offset N", "time T", "checkpoint NAME"
])


def points(spark: SparkSession, rows: list[tuple[str, int, str]]) -> DataFrame:
    return spark.createDataFrame(sorted(set(rows)), POINTS_SCHEMA)


#: Per view, the timeline it is cut from.
VIEWS = {"state_topics": entities.TOPIC, "state_partitions": entities.PARTITION, "state_brokers": entities.BROKER,
         "state_configs": entities.CONFIG, "state_features": entities.FEATURE}


def schema(name: str) -> StructType:
    """The columns of view ``name``, as ``views`` selects them (so a run with no points writes them
    without a query)."""
    entity = VIEWS[name]
    history = {f.name: f for f in from_arrow_schema(history_schema(entity))}
    named = ["resource_type"] if "resource_type" in history else []  # a config's resource type name
    fields = [StructField("cluster_id", StringType()), *(POINTS_SCHEMA[c] for c in ("at_offset", "at")),
              *(history[n] for n in [*entity.key_names, *(n for n, _ in entity.state), *named])]
    if entity is entities.TOPIC:
        fields.append(StructField("partitions", LongType(), False))  # how many it has there
    return StructType(fields)


def views(histories: dict[str, DataFrame], at: DataFrame) -> dict[str, DataFrame]:
    """Every view at the points ``at``, from the timeline tables (by name)."""
    out = {name: view(histories[e.table], name, at) for name, e in VIEWS.items()}
    counts = out["state_partitions"].groupBy("cluster_id", "at_offset", "topic_id").count() \
        .withColumnRenamed("count", "partitions")
    out["state_topics"] = out["state_topics"].join(counts, ["cluster_id", "at_offset", "topic_id"], "left") \
        .fillna(0, ["partitions"]).select(*schema("state_topics").names)
    return out


def view(history: DataFrame, name: str, at: DataFrame) -> DataFrame:
    """View ``name``: its timeline's states at each point, valid_from_offset <= at_offset <
    valid_to_offset (``state_topics`` without its partition counts)."""
    p = F.broadcast(at.withColumnRenamed("cluster_id", "p_cluster"))
    holds = (history.cluster_id == p.p_cluster) & (history.valid_from_offset <= p.at_offset) \
        & (history.valid_to_offset.isNull() | (history.valid_to_offset > p.at_offset))
    return history.join(p, holds).select(*(n for n in schema(name).names if n != "partitions"))
