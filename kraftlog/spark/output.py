"""Where a run writes: a staging folder beside the output, put in place only when every table and
the manifest are written and every file the tasks reported is there, so that a run never publishes
an output that looks whole and is not.

A local output (a shared mount on a cluster) is a folder of Parquet tables: staging is its sibling,
and publishing swaps the two in one step (Linux ``renameat2(RENAME_EXCHANGE)``; where a filesystem
lacks it, the previous output is moved aside and removed only once the new one is in place). A mount
point is refused before any work (it cannot be renamed; Hadoop's fallback copied and deleted it).

An object store has no rename: there every table is a Delta Lake table (``DeltaOutput``), committed
by the driver in one transaction per table, and the manifest is written last.

A run that appends (``append``) publishes the same way: a local output's new tables hold the earlier
output's files as hard links beside the run's own (no byte copied, no earlier file changed), and a Delta
table gets an append commit. Either only if every table's columns are the ones the earlier runs wrote.
"""

import contextlib
import ctypes
import errno
import json
import os
import re
import shutil
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from kraftlog.files.storage import filesystem, is_remote, local
from kraftlog.spark.guard import MANIFEST, UnsafeOutput, previous_name, staging_name
from kraftlog.spark.session import arrow_schema, arrow_table
from kraftlog.spark.sink import NotVisible, Parts, not_visible, recording, staging_root

#: Left out of every table folder: Hadoop's ``_SUCCESS`` and ``.crc`` files, ``_temporary`` folders
#: and a killed task's ``.part-*.tmp`` break other readers' scans of the folder (polars fails on them).
_HIDDEN = ("_", ".")
#: The one file of a table without rows (``Output._schema_only``).
_EMPTY = "part-00000-empty-{run_id}.parquet"


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


def open_output(spark: SparkSession, target: str, run_id: str, append: bool = False) -> "Output":
    """Where run ``run_id`` writes: Parquet folders swapped in place, or Delta tables in an object store;
    with ``append``, its tables hold the earlier output's rows too."""
    kind = DeltaOutput if is_remote(target) else Output
    return kind(spark, target, run_id, append)


def columns(schema: pa.Schema) -> list[tuple[str, str]]:
    """A table's columns as an appending run compares them: names and types, without the partition
    column (a folder name in a Parquet table) and without nullability (Spark and pyarrow mark it
    differently in the files of one table)."""
    return [(f.name, str(f.type).replace(" not null", "")) for f in schema if f.name != "cluster_id"]


def _first_difference(was: list[tuple[str, str]], now: list[tuple[str, str]]) -> str:
    old, new = dict(was), dict(now)
    if missing := [n for n in new if n not in old]:
        return f"no column {missing[0]!r}, which this version writes"
    if extra := [n for n in old if n not in new]:
        return f"column {extra[0]!r}, which this version does not write"
    if changed := [n for n in new if old[n] != new[n]]:
        return f"column {changed[0]!r} of type {old[changed[0]]} where this version writes {new[changed[0]]}"
    return "its columns in another order than this version's"


class Output:
    def __init__(self, spark: SparkSession, target: str, run_id: str, append: bool = False) -> None:
        if is_remote(target):
            raise UnsafeOutput(f"--output {target}: an object store has no rename to swap a folder in place; "
                               "its tables are Delta tables (open_output)")
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
        self.earlier = self._earlier() if append else None

    def _earlier(self) -> dict | None:
        """The manifest of the output this run appends to; None where there is none yet (``guard``
        refused a folder that holds anything else)."""
        try:
            with open(os.path.join(self.target, MANIFEST)) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def check_appendable(self, tables: Iterable[str]) -> None:
        """Refuse (``UnsafeOutput``) an append onto an output that holds other tables than ``tables``,
        the ones this version writes: before any work. Their columns are compared before publishing
        (``_check_columns``), once this run's tables are written."""
        if self.earlier is None:
            return
        held, ours = set(self.earlier["counts"]), set(tables)
        if held != ours:
            which = sorted(held - ours)
            which = f"table {which[0]!r}, which this version does not write" if which else \
                f"no table {sorted(ours - held)[0]!r}, which this version writes"
            raise self._refusal(which)

    def _refusal(self, why: str) -> UnsafeOutput:
        version = self.earlier["versions"]["kraftlog"]
        return UnsafeOutput(f"--output {self.target}: cannot append: it holds {why} (written by kraftlog {version}); "
                            "append to an output of this version, or replace it (--mode replace)")

    def _check_columns(self, table: str, was: pa.Schema, now: pa.Schema) -> None:
        if columns(was) != columns(now):
            raise self._refusal(f"in table {table} {_first_difference(columns(was), columns(now))}")

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
        for part, info in zip(parts, self.fs.get_file_info([f"{self._base(p)}/{p['path']}" for p in parts]),
                              strict=True):
            if info.type != pafs.FileType.File:
                raise NotVisible(not_visible({**part, "path": info.path}, part["task"], "the driver"))
            if info.size != part["bytes"]:
                raise NotVisible(f"part written by task {part['task']} on host {part['host']} at {info.path} has "
                                 f"{info.size} bytes where the task wrote {part['bytes']}: it changed after it was "
                                 "written")
        return parts

    def _base(self, part: dict) -> str:
        """The folder a reported part's path is relative to."""
        return self.staging

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
        pq.write_table(arrow_schema(schema).empty_table(), f"{folder}/{_EMPTY.format(run_id=self.run_id)}",
                       filesystem=self.fs)

    def rows(self, table: str, rows: list[tuple], schema: StructType) -> None:
        """A small table the driver holds (rows of ``schema``, ``cluster_id`` among its columns),
        written by pyarrow, by cluster: a Spark job for a few thousand rows takes seconds on a session
        that has run no SQL yet."""
        arrow = arrow_schema(schema)
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
        previous output is removed only once the new one stands where it stood. An appending run's
        staging gets the earlier output's files first (``_carry``)."""
        for table in self.counts:
            self.check(table)
            self._tidy(table)
        if self.earlier is not None:
            self._carry()
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

    def _carry(self) -> None:
        """Hard-link the files of the earlier output's tables into staging, where this run's own
        files carry its run id in their names (``sink``), once every table's columns are the earlier
        ones: the earlier files are never copied or changed, and until the swap they stand where they
        stood. A table's schema-only file (``_schema_only``, the one file beside its partition
        folders) stays only where no run wrote rows: Spark refuses a folder holding both."""
        earlier = {t: _files(f"{self.target}/{t}") for t in self.counts}
        for table, files in earlier.items():
            if files:
                self._check_columns(table, pq.read_schema(files[0]),
                                    pq.read_schema(_files(f"{self.staging}/{table}")[0]))
        for table, files in earlier.items():
            parted = [f for f in files if os.path.dirname(f) != f"{self.target}/{table}"]
            for f in parted:
                to = os.path.join(self.staging, os.path.relpath(f, self.target))
                os.makedirs(os.path.dirname(to), exist_ok=True)
                os.link(f, to)
            if parted and not self.counts[table]:
                _remove(f"{self.staging}/{table}/{_EMPTY.format(run_id=self.run_id)}")


def _files(folder: str) -> list[str]:
    """The files of a local table's folder, sorted, without the hidden ones (``_HIDDEN``)."""
    found = []
    for at, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(_HIDDEN))
        found += [os.path.join(at, f) for f in sorted(files) if not f.startswith(_HIDDEN)]
    return found


def storage_options(uri: str) -> dict[str, str]:
    """delta-rs's settings for the store of ``uri``, from the environment the storage layer reads
    (``storage._s3``): the endpoint of an S3-compatible store, plain HTTP where it says ``http://``
    (a local test store), the region. Credentials delta-rs takes itself from the AWS environment,
    config files or instance profile; the other stores' settings from their own environment."""
    if urlsplit(uri).scheme not in ("s3", "s3a"):
        return {}
    options = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.startswith("http://"):
            options["AWS_ALLOW_HTTP"] = "true"
    if region := os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"):
        options["AWS_REGION"] = region
    return options


def delta_uri(uri: str) -> str:
    """``uri`` as delta-rs names it: Hadoop's ``s3a`` is plain S3 to delta-rs."""
    return re.sub(r"^s3a://", "s3://", uri)


class DeltaOutput(Output):
    """An output in an object store: each table a Delta Lake table at ``<output>/<table>``, partitioned
    by ``cluster_id``. Tasks write the parts of published tables into the table's folder under names
    carrying the run id, and staged tables under ``<output>/_staging-<run_id>`` (see ``sink``); the
    driver checks every reported part (``check``), then commits each table in one Delta transaction
    that adds exactly those parts and removes the previous run's (overwrite; an appending run's
    commit removes nothing), and writes ``_manifest.json`` last, naming the Delta version of every
    table it published.

    What is atomic: each table's commit (a reader sees the previous run's table or this one's, never a
    mix), and the manifest (one object). A run that fails or is killed before its first commit leaves
    every table as it was; one killed between commits leaves some tables at the new version, which the
    previous manifest's versions still name the old way (``DeltaTable(uri, version=...)``), and which
    the next appending run takes back to those versions in its own commit (``_undo``). delta-rs
    commits with S3's conditional put (``If-None-Match``): two writers of one table never overwrite
    each other's commit, but kraftlog holds no lock on an object store, so two runs onto one output
    may interleave their tables; run one at a time."""

    def __init__(self, spark: SparkSession, target: str, run_id: str, append: bool = False) -> None:
        self.spark, self.run_id, self.target = spark, run_id, target.rstrip("/")
        self.schemas: dict[str, StructType] = {}
        self.counts: dict[str, int] = {}
        self.parts: dict[str, list[dict]] = defaultdict(list)
        self.fs, self.base = filesystem(self.target)
        self.staging = staging_root(self.target, run_id)
        self.staging_base = filesystem(self.staging)[1]
        self.manifest: dict | None = None
        self.tables = delta_uri(self.target)
        self.options = storage_options(self.target)
        self.earlier = self._earlier() if append else None

    def _earlier(self) -> dict | None:
        try:
            with self.fs.open_input_stream(f"{self.base}/{MANIFEST}") as f:
                return json.loads(f.read())
        except FileNotFoundError:
            return None

    def _base(self, part: dict) -> str:
        return self.staging_base if part.get("staged") else self.base

    def _schema_only(self, table: str, schema: StructType) -> None:
        """Nothing to write: a Delta table of no files still has its schema, in its log."""

    def empty(self, table: str, schema: StructType) -> None:
        self.schemas[table] = StructType([*schema.fields, StructField("run_id", StringType(), False)])
        self.counts[table] = 0

    def frame(self, table: str) -> DataFrame:
        """A table's reported parts, read by Spark tasks through the storage layer (Spark's own
        readers reach no object store without Hadoop's connectors)."""
        schema = self.schemas[table]
        arrow = arrow_schema(schema)
        target = self.target
        parts = [(f"{self._base(p)}/{p['path']}", p["value"]) for p in self.parts.get(table, [])]

        def read(batches):
            fs = filesystem(target)[0]
            for batch in batches:
                for i in batch.column(0).to_pylist():
                    path, value = parts[i]
                    t = pq.read_table(path, filesystem=fs)
                    t = t.append_column("cluster_id", pa.array([value] * t.num_rows, pa.string()))
                    yield from t.select(arrow.names).cast(arrow).to_batches()

        return self.spark.range(len(parts), numPartitions=max(1, min(len(parts), 64))).mapInArrow(read, schema)

    def write(self, table: str, df: DataFrame) -> DataFrame:
        """Write ``table`` (with the run id, by cluster) from Spark's tasks through the storage layer,
        each task reporting its parts; returns it read back."""
        df = df.withColumn("run_id", F.lit(self.run_id))
        arrow = arrow_schema(df.schema)
        at = arrow.get_field_index("cluster_id")
        written, root = arrow.remove(at), self.root

        def write(batches):
            import pyarrow.compute as pc
            from pyspark import TaskContext

            task = TaskContext.get().partitionId()
            with recording() as parts:
                sinks = Parts(root, table, written, f"t{task}")
                for batch in batches:
                    t = pa.Table.from_batches([batch]).cast(arrow)
                    for value in pc.unique(t.column(at)).to_pylist():
                        rows = t.filter(pc.equal(t.column(at), value)).remove_column(at)
                        for b in rows.to_batches():
                            sinks.of(value).write(b)
                sinks.close()
            yield pa.RecordBatch.from_pydict({"part": [json.dumps({**p, "task": task}) for p in parts]},
                                             schema=pa.schema([("part", pa.string())]))

        parts = [json.loads(p) for p in arrow_table(df.mapInArrow(write, "part string")).column("part").to_pylist()]
        self.reported([(0, p) for p in parts])
        self.staged(table, from_arrow_schema(written.append(arrow.field(at))), sum(p["rows"] for p in parts))
        return self.frame(table)

    def _tidy(self, table: str) -> None:
        """Nothing to tidy: a Delta table holds what its log names, whatever else its folder holds."""

    def place(self, path: Path) -> Path:
        return path

    def write_manifest(self, manifest: dict) -> None:
        """Kept until every table is committed: the manifest is written last (``publish``)."""
        self.manifest = manifest

    def drop(self, table: str) -> None:
        self.schemas.pop(table, None)
        self.counts.pop(table, None)
        if self._exists(f"{self.staging_base}/{table}"):
            self.fs.delete_dir(f"{self.staging_base}/{table}")

    def _exists(self, path: str) -> bool:
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def publish(self) -> str:
        """Check every table's reported parts, commit each table, then write the manifest (with the
        Delta version of each table) and remove the staging prefix."""
        for table in self.counts:
            self.check(table)
        if self.earlier is not None:  # every table checked before the first commit
            for table in self.counts:
                was, named = self._table(table), self.earlier.get("delta_versions", {}).get(table)
                if was is None or named is None or was.version() < named:
                    raise self._refusal(f"table {table} at Delta version "
                                        f"{None if was is None else was.version()} where its manifest names {named}")
                self._check_columns(table, _arrow(was.schema()), _arrow(self._delta_schema(table)))
        versions = {table: self._commit(table) for table in self.counts}
        manifest = self.manifest if self.manifest is not None else {}
        manifest["delta_versions"] = versions
        if manifest.get("runs"):
            manifest["runs"][-1]["delta_versions"] = versions
        with self.fs.open_output_stream(f"{self.base}/{MANIFEST}") as f:
            f.write(json.dumps(manifest, indent=2, default=str).encode())
        self._remove_staging()
        return self.target

    def _table(self, table: str):
        """``table``'s Delta table, or None where there is none yet."""
        from deltalake import DeltaTable

        uri = f"{self.tables}/{table}"
        return DeltaTable(uri, storage_options=self.options) \
            if DeltaTable.is_deltatable(uri, storage_options=self.options) else None

    def _delta_schema(self, table: str):
        from deltalake import Schema

        return Schema.from_arrow(arrow_schema(self.schemas[table]))

    def _undo(self, table: str, now: int) -> list:
        """The actions that take ``table`` from its latest version back to the one the earlier
        manifest names: commits after it are a run's killed between its commits (or another
        writer's), whose rows no manifest lists; none if it is the latest."""
        from deltalake import DeltaTable
        from deltalake.transaction import AddAction, RemoveAction

        uri, named = f"{self.tables}/{table}", self.earlier["delta_versions"][table]
        latest = DeltaTable(uri, storage_options=self.options)
        if latest.version() == named:
            return []
        files = [{r["path"]: r for r in pa.table(t.get_add_actions(flatten=True)).to_pylist()}
                 for t in (latest, DeltaTable(uri, version=named, storage_options=self.options))]
        stray, kept = files
        return [RemoveAction(p, True, now, r["size_bytes"], {"cluster_id": r["partition.cluster_id"]})
                for p, r in stray.items() if p not in kept] + \
            [AddAction(p, r["size_bytes"], {"cluster_id": r["partition.cluster_id"]}, now, True,
                       json.dumps({"numRecords": r["num_records"]})) for p, r in kept.items() if p not in stray]

    def _commit(self, table: str) -> int:
        """One Delta transaction adding exactly the reported parts of ``table`` and removing the
        files of its previous version; where the run appends, removing nothing but what commits
        after the earlier manifest's version changed (``_undo``). The table's new version."""
        from deltalake import DeltaTable
        from deltalake.transaction import AddAction, CommitProperties, create_table_with_add_actions

        uri = f"{self.tables}/{table}"
        schema = self._delta_schema(table)
        now = int(time.time() * 1000)
        adds = [AddAction(p["path"].split("/", 1)[1], p["bytes"], {"cluster_id": p["value"]}, now, True,
                          json.dumps({"numRecords": p["rows"]})) for p in self.parts.get(table, [])]
        props = CommitProperties(custom_metadata={"kraftlog.run_id": self.run_id})
        if self.earlier is not None:  # the table's own schema: the columns are its (``publish``), maybe in another order
            existing = self._table(table)
            existing.create_write_transaction(adds + self._undo(table, now), mode="append", schema=existing.schema(),
                                              partition_by=["cluster_id"], commit_properties=props)
        elif (existing := self._table(table)) is not None:
            existing.create_write_transaction(adds, mode="overwrite", schema=schema, partition_by=["cluster_id"],
                                              commit_properties=props)
        else:
            create_table_with_add_actions(uri, schema, adds, mode="error", partition_by=["cluster_id"],
                                          storage_options=self.options, commit_properties=props)
        return DeltaTable(uri, storage_options=self.options).version()

    def _remove_staging(self) -> None:
        if self._exists(self.staging_base):
            self.fs.delete_dir(self.staging_base)

    def abandon(self) -> None:
        """Remove the staging prefix and the parts this run wrote into the tables' folders (no
        Delta version names them)."""
        for parts in self.parts.values():
            for p in parts:
                if not p.get("staged"):
                    with contextlib.suppress(OSError):
                        self.fs.delete_file(f"{self.base}/{p['path']}")
        with contextlib.suppress(OSError):
            self._remove_staging()


def _arrow(schema) -> pa.Schema:
    """A Delta schema as pyarrow's (delta-rs gives arro3's, which pyarrow reads through the Arrow C interface)."""
    return pa.schema(schema.to_arrow())
