"""What each timeline replays: the deduplicated log's records with their effective offsets, the
snapshot records that seed the plan, and the routing of records that change other entities (a
topic's creation and removal reach its partitions and configs; ClearElr reaches partitions)."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from kraftlog.spark import entities as E
from kraftlog.spark.fold import EVENT_COLUMNS, Entity
from kraftlog.spark.plan import Plan
from kraftlog.spark.transactions import COMMITTED

#: Pseudo record at the first offset of a leader epoch: the image observes the epoch, nothing else.
EPOCH_START = "EPOCH_START"
_CARRIED = ("topic_id", "topic_name", "partition_id", "broker_id", "resource_type", "resource_name")
_RANGES = StructType([StructField("r_cluster", StringType(), False), StructField("lo", LongType(), False),
                      StructField("hi", LongType(), False)])
_SEEDS = StructType([StructField("file_id", IntegerType(), False),
                     StructField("seed_offset", LongType(), False), StructField("seed_time", LongType(), True)])


def replay_events(spark: SparkSession, records: DataFrame, snapshot_records: DataFrame,
                  plans: dict[str, Plan]) -> DataFrame:
    """Every event of the timelines that follow the plan: committed log records inside the
    replayable ranges (at their effective offset), then the seed snapshots' records. ``records``
    are the log's decoded records with ``cluster_id`` and their transaction (``transactions.tag``),
    ``snapshot_records`` those of the snapshots, with ``cluster_id``."""
    ranges = F.broadcast(spark.createDataFrame(
        [(c, lo, hi) for c, p in plans.items() for lo, hi in p.ranges], _RANGES))
    log = records.filter(F.col("record_type").isin(*E.REPLAYED_TYPES) & F.col("error").isNull()
                         & ~F.col("is_control") & (F.col("txn_state").isNull() | (F.col("txn_state") == COMMITTED)))
    committed = F.col("txn_state") == COMMITTED
    log = log.join(ranges, (log.cluster_id == ranges.r_cluster) & log["offset"].between(ranges.lo, ranges.hi),
                   "left_semi").select(
        "cluster_id",
        F.when(committed, F.col("txn_end_offset")).otherwise(F.col("offset")).alias("eff_offset"),
        "offset", F.lit(0).cast("long").alias("seq"),
        F.when(committed, F.col("txn_end_timestamp")).otherwise(F.col("timestamp")).alias("eff_time"),
        "epoch", "record_type", F.coalesce("data_json", "payload").alias("data"), *_CARRIED)
    seeds = [(s.file_id, s.end_offset - 1, s.timestamp) for p in plans.values() for s in p.seeds]
    if not seeds:
        return log
    seed = F.broadcast(spark.createDataFrame(seeds, _SEEDS))
    snap = snapshot_records.filter(F.col("record_type").isin(*E.REPLAYED_TYPES) & F.col("error").isNull()
                                   & ~F.col("is_control")).join(seed, "file_id").select(
        "cluster_id", F.col("seed_offset").alias("eff_offset"), F.col("seed_offset").alias("offset"),
        F.col("offset").alias("seq"), F.col("seed_time").alias("eff_time"), "epoch", "record_type",
        F.coalesce("data_json", "payload").alias("data"), *_CARRIED)
    return log.unionByName(snap)


def controller_events(spark: SparkSession, records: DataFrame,
                      epoch_starts: list[tuple[str, int, int, int]]) -> DataFrame:
    """Raft control records, and the first offset of each leader epoch (cluster, epoch, offset, ms),
    where the leader is unknown until a LeaderChange says who won."""
    control = records.filter(F.col("is_control") & F.col("record_type").isin(*E.CONTROLLER.records)
                             & F.col("error").isNull()).select(
        "cluster_id", F.col("offset").alias("eff_offset"), "offset", F.lit(0).cast("long").alias("seq"),
        F.col("timestamp").alias("eff_time"), "epoch", "record_type", F.col("payload").alias("data"))
    starts = spark.createDataFrame(epoch_starts, "cluster_id string, epoch int, offset long, eff_time long").select(
        "cluster_id", F.col("offset").alias("eff_offset"), "offset", F.lit(-1).cast("long").alias("seq"), "eff_time",
        "epoch", F.lit(EPOCH_START).alias("record_type"), F.lit("{}").alias("data"))
    return control.unionByName(starts)


def _json(path: str) -> F.Column:
    return F.get_json_object("data", path)


def entity_events(entity: Entity, events: DataFrame, names: DataFrame) -> DataFrame:
    """``entity``'s own events keyed by its key columns, plus the routed events that change it."""
    cols = ["cluster_id", *entity.key_names, *EVENT_COLUMNS]
    own = events.filter(F.col("record_type").isin(*entity.records))
    if entity is E.CONFIG:
        own = own.withColumn("resource_type_id", _json("$.resourceType").cast("int")) \
            .withColumn("config_name", _json("$.name"))
    elif entity is E.ACL:
        own = own.withColumn("acl_id", _json("$.id"))
    elif entity is E.FEATURE:
        own = own.withColumn("feature", F.col("resource_name"))
    own = own.select(*cols)
    if not entity.routed:
        return own
    keys = own.select("cluster_id", *entity.key_names).distinct()
    topics = events.filter(F.col("record_type").isin(*E.TOPIC_RECORDS)).select("cluster_id", "topic_id", *EVENT_COLUMNS) \
        .join(names, ["cluster_id", "topic_id"])
    if entity is E.CONFIG:  # a topic's removal deletes ConfigResource(TOPIC, name): route by name
        topic_keys = keys.filter(F.col("resource_type_id") == 2).withColumnRenamed("resource_name", "topic_name")
        routed = topics.join(topic_keys, ["cluster_id", "topic_name"]).withColumn("resource_name", F.col("topic_name"))
        return own.unionByName(routed.select(*cols))
    routed = topics.drop("topic_name").join(keys, ["cluster_id", "topic_id"]).select(*cols)
    clear = events.filter(F.col("record_type") == E.CLEAR_ELR).select("cluster_id", *EVENT_COLUMNS) \
        .withColumn("target", F.coalesce(_json("$.topicName"), F.lit("")))
    cleared = clear.join(keys.join(names, ["cluster_id", "topic_id"]), "cluster_id") \
        .filter((F.col("target") == "") | (F.col("target") == F.col("topic_name"))).select(*cols)
    return own.unionByName(routed).unionByName(cleared)
