"""Where a run writes: a staging folder beside the output, moved into place only when every table
and the manifest are written, so a crashed run never leaves an output that looks whole.

Paths go through Hadoop's FileSystem, so the output can be local or any store Spark writes to.
"""

import json
import os
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from kraftlog.files.paths import is_remote, local
from kraftlog.spark.guard import MANIFEST, previous_name, staging_name
from kraftlog.spark.sink import Parts, filesystem


class Output:
    def __init__(self, spark: SparkSession, target: str, run_id: str) -> None:
        if not is_remote(target):
            target = os.path.abspath(local(target))  # Hadoop's Path would take ``out#1`` as ``out`` and a fragment
        self.spark, self.run_id = spark, run_id
        self.schemas: dict[str, StructType] = {}
        self.counts: dict[str, int] = {}
        jvm = spark.sparkContext._jvm
        self._path = jvm.org.apache.hadoop.fs.Path
        self.target = self._path(target)
        self.fs = self.target.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        parent, name = self.target.getParent(), self.target.getName()
        self.staging = self._path(parent, staging_name(name, run_id))
        self._previous = self._path(parent, previous_name(name, run_id))

    @property
    def root(self) -> str:
        """The staging folder's URI, where the passes' tasks write their tables."""
        return str(self.staging)

    def path(self, table: str) -> str:
        return str(self._path(self.staging, table))

    def staged(self, table: str, schema: StructType, rows: int) -> None:
        """A table the passes wrote themselves, of ``rows`` rows (none: not even a folder yet)."""
        if not self.fs.exists(self._path(self.staging, table)):
            self._schema_only(table, schema)
        self.schemas[table], self.counts[table] = schema, rows

    def frame(self, table: str) -> DataFrame:
        """A table written into staging, read back (a query is planned only when one is asked for)."""
        return self.spark.read.schema(self.schemas[table]).parquet(self.path(table))

    def empty(self, table: str, schema: StructType) -> None:
        """A table known to have no rows: one Parquet file of its schema and the run id."""
        self._schema_only(table, StructType([*schema.fields, StructField("run_id", StringType(), False)]))
        self.schemas[table], self.counts[table] = schema, 0

    def _schema_only(self, table: str, schema: StructType) -> None:
        """An empty table as one Parquet file of its schema: a folder without a Parquet file is one
        ``spark.read.parquet`` refuses (there is nothing to infer the schema from). Written by pyarrow:
        a Spark job for no rows costs a quarter of a second."""
        fs, folder = filesystem(self.path(table))
        fs.create_dir(folder, recursive=True)
        pq.write_table(to_arrow_schema(schema, timezone="UTC").empty_table(), f"{folder}/part-00000-empty.parquet",
                       filesystem=fs)

    def rows(self, table: str, rows: list[tuple], schema: StructType) -> None:
        """A small table the driver holds (rows of ``schema``, ``cluster_id`` among its columns),
        written by pyarrow, by cluster: a Spark job for a few thousand rows takes seconds on a session
        that has run no SQL yet."""
        arrow = to_arrow_schema(schema, timezone="UTC")
        at = arrow.get_field_index("cluster_id")
        written = arrow.remove(at).append(pa.field("run_id", pa.string()))
        by_cluster = defaultdict(list)
        for r in rows:
            by_cluster[r[at]].append(r[:at] + r[at + 1 :] + (self.run_id,))
        parts = Parts(self.root, table, written, "driver")
        for cluster, part in by_cluster.items():
            columns = zip(*part, strict=True)
            parts.of(cluster).write(pa.RecordBatch.from_arrays(
                [pa.array(c, f.type) for c, f in zip(columns, written, strict=True)], schema=written))
        parts.close()
        self.staged(table, from_arrow_schema(written.append(arrow.field(at))), len(rows))

    def write(self, table: str, df: DataFrame) -> DataFrame:
        """Write ``table`` (with the run id, by cluster) into staging; returns it read back from there."""
        df = df.withColumn("run_id", F.lit(self.run_id))
        rows = Observation(table)  # counted while written, not by another pass
        df.observe(rows, F.count(F.lit(1)).alias("rows")).write.mode("overwrite").partitionBy("cluster_id") \
            .parquet(self.path(table))
        self.counts[table] = rows.get["rows"]
        if not self.counts[table]:
            self._schema_only(table, df.schema)
        self.schemas[table] = df.schema
        return self.frame(table)

    def place(self, path: Path) -> Path:
        """Where a file the driver writes must go to stand at ``path`` once the run is published: one
        inside the output folder goes into staging, so that publishing carries it instead of replacing it."""
        target = str(self.target)
        if is_remote(target) or not path.is_relative_to(root := Path(local(target))):
            return path
        return Path(local(str(self.staging))) / path.relative_to(root)

    def write_manifest(self, manifest: dict) -> None:
        stream = self.fs.create(self._path(self.staging, MANIFEST), True)
        try:
            stream.write(bytearray(json.dumps(manifest, indent=2, default=str).encode()))
        finally:
            stream.close()

    def drop(self, table: str) -> None:
        self.schemas.pop(table, None)
        self.counts.pop(table, None)
        self.fs.delete(self._path(self.staging, table), True)

    def publish(self) -> str:
        """Move staging into place; an existing output is replaced only after that succeeds."""
        if self.fs.exists(self.target) and not self.fs.rename(self.target, self._previous):
            raise OSError(f"cannot move the previous output {self.target} aside")
        if not self.fs.rename(self.staging, self.target):
            if self.fs.exists(self._previous):
                self.fs.rename(self._previous, self.target)
            raise OSError(f"cannot move {self.staging} to {self.target}")
        self.fs.delete(self._previous, True)
        return str(self.target)

    def abandon(self) -> None:
        self.fs.delete(self.staging, True)
