"""Where a run writes: a staging folder beside the output, put in place only when every table and
the manifest are written and every file the tasks reported is there, so that a run never publishes
an output that looks whole and is not.

The output is a local folder (a shared mount on a cluster): staging is its sibling, and publishing
swaps the two in one step (Linux ``renameat2(RENAME_EXCHANGE)``; where a filesystem lacks it, the
previous output is moved aside and removed only once the new one is in place). Targets where no
rename is atomic are refused before any work: a mount point (it cannot be renamed; Hadoop's
fallback copied and deleted it) and object stores (no rename at all).
"""

import ctypes
import errno
import json
import os
import shutil
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from kraftlog.files.storage import is_remote, local
from kraftlog.spark.guard import MANIFEST, UnsafeOutput, previous_name, staging_name
from kraftlog.spark.sink import NotVisible, Parts, not_visible, recording

#: Left out of every table folder: Hadoop's ``_SUCCESS`` and ``.crc`` files, ``_temporary`` folders
#: and a killed task's ``.part-*.tmp`` break other readers' scans of the folder (polars fails on them).
_HIDDEN = ("_", ".")


def _exchange(a: str, b: str) -> bool:
    """Swap two paths in one step; False where the filesystem or kernel cannot."""
    libc = ctypes.CDLL(None, use_errno=True)
    rename = getattr(libc, "renameat2", None)
    if rename is None:
        return False
    at_cwd, exchange = -100, 2  # AT_FDCWD, RENAME_EXCHANGE (linux/fcntl.h, linux/fs.h)
    if rename(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, f"cannot swap {a} and {b}: {os.strerror(code)}")


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


class Output:
    def __init__(self, spark: SparkSession, target: str, run_id: str) -> None:
        if is_remote(target):
            raise UnsafeOutput(f"--output {target}: object storage has no atomic rename, so a run could not "
                               "replace the previous output safely; give a local or shared-filesystem path")
        self.target = os.path.abspath(local(target))  # a path is a path: ``out#1`` is a folder of that name
        if os.path.ismount(self.target):
            raise UnsafeOutput(f"--output {target} is a mount point, which cannot be replaced in one rename; "
                               "give a folder inside it")
        self.spark, self.run_id = spark, run_id
        self.schemas: dict[str, StructType] = {}
        self.counts: dict[str, int] = {}
        self.parts: dict[str, list[dict]] = defaultdict(list)  # table -> the parts tasks reported
        self.fs = pafs.LocalFileSystem()
        parent, name = os.path.split(self.target)
        self.staging = os.path.join(parent, staging_name(name, run_id))

    @property
    def root(self) -> str:
        """The staging folder, where the passes' tasks write their tables."""
        return self.staging

    def path(self, table: str) -> str:
        """A table's folder in staging, as a URI for Spark (a bare path would be the cluster's default filesystem)."""
        return f"file:{self.staging}/{table}"

    def reported(self, notes: list[tuple[int, dict]]) -> None:
        """Take the ``part`` notes of a pass: the files its tasks wrote."""
        for _, part in notes:
            self.parts[part["table"]].append(part)

    def check(self, table: str) -> list[dict]:
        """The parts reported for ``table``, each checked to be where the driver sees it, as big as
        written; one that is not fails the run, naming the task, its host and the path."""
        parts = self.parts.get(table, [])
        for part, info in zip(parts, self.fs.get_file_info([f"{self.staging}/{p['path']}" for p in parts]),
                              strict=True):
            if info.type != pafs.FileType.File:
                raise NotVisible(not_visible({**part, "path": info.path}, part["task"], "the driver"))
            if info.size != part["bytes"]:
                raise NotVisible(f"part written by task {part['task']} on host {part['host']} at {info.path} has "
                                 f"{info.size} bytes where the task wrote {part['bytes']}: it changed after it was "
                                 "written")
        return parts

    def staged(self, table: str, schema: StructType, rows: int) -> None:
        """A table the passes wrote themselves, of ``rows`` rows by the tasks' notes: its parts
        checked (``check``) and their rows matched against the notes (none: not even a folder yet)."""
        parts = self.check(table)
        written = sum(p["rows"] for p in parts)
        if written != rows:
            raise NotVisible(f"table {table}: the tasks' notes count {rows} rows, the parts they reported hold "
                             f"{written}: a task's report is lost")
        if not parts:
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
        folder = f"{self.staging}/{table}"
        self.fs.create_dir(folder, recursive=True)
        pq.write_table(to_arrow_schema(schema, timezone="UTC").empty_table(), f"{folder}/part-00000-empty.parquet",
                       filesystem=self.fs)

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
        with recording() as parts:
            sinks = Parts(self.root, table, written, "driver")
            for cluster, part in by_cluster.items():
                columns = zip(*part, strict=True)
                sinks.of(cluster).write(pa.RecordBatch.from_arrays(
                    [pa.array(c, f.type) for c, f in zip(columns, written, strict=True)], schema=written))
            sinks.close()
        self.reported([(0, {**p, "task": "driver"}) for p in parts])
        self.staged(table, from_arrow_schema(written.append(arrow.field(at))), len(rows))

    def write(self, table: str, df: DataFrame) -> DataFrame:
        """Write ``table`` (with the run id, by cluster) into staging; returns it read back from there.
        The rows Spark counted while writing must be the rows the driver sees in the folder."""
        df = df.withColumn("run_id", F.lit(self.run_id))
        rows = Observation(table)  # counted while written, not by another pass
        df.observe(rows, F.count(F.lit(1)).alias("rows")).write.mode("overwrite").partitionBy("cluster_id") \
            .parquet(self.path(table))
        self.counts[table] = rows.get["rows"]
        self._tidy(table)
        files = [i.path for i in self.fs.get_file_info(pafs.FileSelector(f"{self.staging}/{table}", recursive=True,
                                                                         allow_not_found=True))
                 if i.type == pafs.FileType.File]
        seen = sum(pq.ParquetFile(f, filesystem=self.fs).metadata.num_rows for f in files)
        if seen != self.counts[table]:
            raise NotVisible(f"Spark wrote {self.counts[table]} rows of {table}, the driver sees {seen} at "
                             f"{self.staging}/{table}: executors and driver do not share this output's storage; "
                             "use a shared filesystem for --output")
        if not self.counts[table]:
            self._schema_only(table, df.schema)
        self.schemas[table] = df.schema
        return self.frame(table)

    def _tidy(self, table: str) -> None:
        """Remove what Hadoop or a killed task leaves in a table's folder besides its Parquet files."""
        for info in self.fs.get_file_info(pafs.FileSelector(f"{self.staging}/{table}", recursive=True,
                                                            allow_not_found=True)):
            if info.base_name.startswith(_HIDDEN) and os.path.lexists(info.path):
                _remove(info.path)

    def place(self, path: Path) -> Path:
        """Where a file the driver writes must go to stand at ``path`` once the run is published: one
        inside the output folder goes into staging, so that publishing carries it instead of replacing it."""
        where = Path(os.path.abspath(path))
        return Path(self.staging) / where.relative_to(self.target) if where.is_relative_to(self.target) else path

    def write_manifest(self, manifest: dict) -> None:
        with open(os.path.join(self.staging, MANIFEST), "w") as f:
            json.dump(manifest, f, indent=2, default=str)

    def drop(self, table: str) -> None:
        self.schemas.pop(table, None)
        self.counts.pop(table, None)
        _remove(f"{self.staging}/{table}")

    def publish(self) -> str:
        """Check every table's reported parts once more and put staging in place of the output; the
        previous output is removed only once the new one stands where it stood."""
        for table in self.counts:
            self.check(table)
            self._tidy(table)
        if not os.path.lexists(self.target):
            os.rename(self.staging, self.target)
        elif _exchange(self.staging, self.target):
            _remove(self.staging)  # now the previous output
        else:
            previous = os.path.join(os.path.dirname(self.target), previous_name(os.path.basename(self.target), self.run_id))
            os.rename(self.target, previous)
            try:
                os.rename(self.staging, self.target)
            except OSError:
                os.rename(previous, self.target)
                raise
            _remove(previous)
        return self.target

    def abandon(self) -> None:
        _remove(self.staging)

