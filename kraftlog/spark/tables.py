"""The physical tables, straight from the decode stage: files, batches, problems, and the log's
records (one per cluster and offset) with their transaction and topic names filled in."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from kraftlog.spark.copies import FileSummary
from kraftlog.spark.decode import BATCH, RECORD, REGION
from kraftlog.spark.discover import Inventory
from kraftlog.wire.batch import COMPRESSION_MASK, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT
from kraftlog.wire.codecs import CODEC_NAMES

_WHERE = ("cluster_id", "node_id", "log_dir", "file")
_SUMMARY = StructType([
    StructField("file_id", IntegerType(), False), StructField("batches", LongType(), True),
    StructField("records", LongType(), True), StructField("first_offset", LongType(), True),
    StructField("last_offset", LongType(), True), StructField("first_timestamp", LongType(), True),
    StructField("last_timestamp", LongType(), True), StructField("last_epoch", IntegerType(), True),
    StructField("invalid_batches", LongType(), True), StructField("skipped_bytes", LongType(), True),
    StructField("snapshot_timestamp", LongType(), True), StructField("seeds_replay", StringType(), True),
])
PROBLEMS_SCHEMA = StructType([
    StructField("cluster_id", StringType(), False), StructField("node_id", IntegerType(), True),
    StructField("log_dir", StringType(), True), StructField("file", StringType(), True),
    StructField("kind", StringType(), False), StructField("position", LongType(), True),
    StructField("length", LongType(), True), StructField("offset", LongType(), True),
    StructField("detail", StringType(), True),
])


def _time(ms: str) -> F.Column:
    return F.when(F.col(ms) > 0, F.timestamp_millis(F.col(ms)))


def files_table(spark: SparkSession, files: DataFrame, summary: dict[int, FileSummary],
                seeds: dict[int, str]) -> DataFrame:
    """Every file found, with what decoding it found; ``seeds_replay`` says when a snapshot starts
    its cluster's timelines."""
    rows = [(s.file_id, s.batches, s.records, s.first_offset, s.last_offset, s.first_timestamp, s.last_timestamp,
             s.last_epoch, s.invalid_batches, s.skipped_bytes, s.snapshot_timestamp, seeds.get(s.file_id))
            for s in summary.values()]
    return files.drop("copy_id").join(spark.createDataFrame(rows, _SUMMARY), "file_id", "left") \
        .withColumn("first_time", _time("first_timestamp")).withColumn("last_time", _time("last_timestamp")) \
        .drop("file_id")


def _located(decoded: DataFrame, files: DataFrame) -> DataFrame:
    return decoded.join(F.broadcast(files.select("file_id", *_WHERE, F.col("kind").alias("file_kind"))), "file_id")


def batches_table(decoded: DataFrame, files: DataFrame) -> DataFrame:
    """Every batch of every file and copy, as it lies on disk."""
    b = _located(decoded.filter(F.col("first_in_batch") | (F.col("row_kind") == BATCH)), files)
    codec = F.create_map(*(x for k, v in CODEC_NAMES.items() for x in (F.lit(k), F.lit(v))))
    return b.select(
        *_WHERE, "file_kind", "position", "base_offset", "last_offset", "batch_length",
        F.col("epoch").alias("leader_epoch"), "magic", "crc", "crc_valid", "attributes",
        F.coalesce(codec[F.col("attributes").bitwiseAND(COMPRESSION_MASK)], F.lit("unknown")).alias("compression"),
        F.when(F.col("attributes").bitwiseAND(TIMESTAMP_TYPE_BIT) != 0, "LogAppendTime").otherwise("CreateTime")
        .alias("timestamp_type"),
        (F.col("attributes").bitwiseAND(TRANSACTIONAL_BIT) != 0).alias("is_transactional"), "is_control",
        "base_timestamp", "max_timestamp", _time("max_timestamp").alias("max_time"), "producer_id",
        "producer_epoch", "base_sequence", "records_count", F.col("batch_error").alias("error"))


def problems_table(spark: SparkSession, decoded: DataFrame, files: DataFrame, inv: Inventory,
                   unreplayable: list[tuple[str, int, int]]) -> DataFrame:
    """What could not be read or replayed: skipped bytes, invalid batches, batch and record decoding
    errors, log-dir problems, and log offsets no snapshot or earlier log makes replayable."""
    d = _located(decoded, files)
    regions = d.filter(F.col("row_kind") == REGION).select(
        *_WHERE, F.concat(F.lit("skipped-"), "region_reason").alias("kind"), "position",
        F.col("region_length").alias("length"), F.lit(None).cast("long").alias("offset"),
        F.col("region_detail").alias("detail"))
    heads = d.filter(F.col("first_in_batch") | (F.col("row_kind") == BATCH))
    invalid = heads.filter(~F.col("crc_valid")).select(
        *_WHERE, F.lit("invalid-batch").alias("kind"), "position", (F.col("batch_length") + 12).alias("length"),
        F.col("base_offset").alias("offset"), F.lit("the batch fails its CRC").alias("detail"))
    broken = heads.filter(F.col("batch_error").isNotNull()).select(
        *_WHERE, F.lit("batch-error").alias("kind"), "position", (F.col("batch_length") + 12).alias("length"),
        F.col("base_offset").alias("offset"), F.col("batch_error").alias("detail"))
    undecodable = d.filter((F.col("row_kind") == RECORD) & F.col("error").isNotNull()).select(
        *_WHERE, F.lit("undecodable-record").alias("kind"), "position", F.lit(None).cast("long").alias("length"),
        "offset", F.col("error").alias("detail"))
    copies = {c.copy_id: c for c in inv.copies}
    other = [(copies[i].cluster_id, copies[i].node_id, copies[i].log_dir, None, "log-dir", None, None, None, m)
             for i, m in inv.problems]
    other += [(c, None, None, None, "unreplayable", None, None, lo,
               f"offsets {lo}-{hi} precede every snapshot the log continues from: kept in records, not replayed")
              for c, lo, hi in unreplayable]
    return regions.unionByName(invalid).unionByName(broken).unionByName(undecodable) \
        .unionByName(spark.createDataFrame(other, PROBLEMS_SCHEMA))


def located_records(chosen: DataFrame, files: DataFrame, names: DataFrame) -> DataFrame:
    """Chosen record rows with their cluster, node and file, and the topic name of topic-id records."""
    n = F.broadcast(names.withColumnRenamed("topic_name", "known_name"))
    return _located(chosen, files).join(n, ["cluster_id", "topic_id"], "left") \
        .withColumn("topic_name", F.coalesce("topic_name", "known_name")).drop("known_name")


def records_table(records: DataFrame, redact: bool = True) -> DataFrame:
    """The published columns of the log's records (secrets redacted unless ``redact`` is False)."""
    if not redact:
        records = records.withColumn("payload", F.coalesce("data_json", "payload"))
    return records.select(
        *_WHERE, "offset", F.col("position").alias("batch_position"), F.col("base_offset").alias("batch_base_offset"),
        "timestamp", _time("timestamp").alias("time"), F.col("epoch").alias("leader_epoch"), "is_control",
        "record_type", "version", "topic_id", "topic_name", "partition_id", "broker_id", "resource_type",
        "resource_name", "payload", "unknown_tags", "error", "crc_valid", "txn_begin_offset", "txn_state")


def topic_names(decoded: DataFrame, files: DataFrame) -> DataFrame:
    """(cluster_id, topic_id, topic_name) from every TopicRecord of any file or copy (ids are unique)."""
    return _located(decoded.filter(F.col("record_type") == "TOPIC_RECORD"), files) \
        .select("cluster_id", "topic_id", "topic_name").distinct()
