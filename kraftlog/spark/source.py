"""The job's ``batches``, ``records`` and ``problems`` tables as a Spark Python data source (pyspark 4),
for a notebook or any Spark program: ``register(spark)``, then
``spark.read.format("kraftlog").option("table", "records").load("s3://bucket/fleet")``.

The rows are the job's for the same input, made by the job's own code (``discover``, ``decode``,
``copies``), with ``run_id`` a fresh id per read (no run wrote them). The driver discovers the files
through the storage layer; each read task reads a group of files through it as well (the job's
``weights.deal``, by bytes), so executors need no disk in common with the driver.

``batches``: every batch of every copy, one task per group of files. ``records``: one row per offset
of each cluster's log, from the copy chosen there; which copy supplies each offset, the transaction
each record belongs to and topic names depend on every file, so the driver first reads every file
once as the job's first pass does (in one process: ``records`` is for a notebook's input, the job
for a fleet's), then tasks decode the offsets each file supplies. ``problems``: what the job's table
lists (skipped regions, invalid batches, undecodable records, unreadable files, unreplayable
offsets), from that same first read; a damaged region is a row there and no row of ``batches`` or
``records``, as in the job.
"""

import dataclasses
import json
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from typing import NoReturn

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pyspark
from pyspark.sql import SparkSession

try:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError:  # Python data sources came with Spark 4.0
    raise ImportError(f"the kraftlog data source needs pyspark 4.0 or newer, not {pyspark.__version__}: "
                      "run the job (kraftlog-spark) instead") from None
from pyspark.sql.types import StringType, StructField, StructType

from kraftlog.files.reader import DEFAULT_MAX_BATCH_BYTES, Limits
from kraftlog.files.storage import StorageError
from kraftlog.files.walk import walk
from kraftlog.spark import copies, passes, tables
from kraftlog.spark.decode import (
    BATCHES,
    BLOCK_OFFSETS,
    RECORDS,
    FileMeta,
    Note,
    _batch_rows,
    _unreadable,
    decode_file,
    finish_records,
    read_file,
    seed_file,
)
from kraftlog.spark.discover import Inventory, discover
from kraftlog.spark.guard import new_run_id
from kraftlog.spark.job import _with_cluster, choose, context, supplied_notes
from kraftlog.spark.session import arrow_schema
from kraftlog.spark.sink import Parts
from kraftlog.spark.weights import deal
from kraftlog.wire.codecs import DEFAULT_MAX_DECOMPRESSED

NAME = "kraftlog"


def _run_table(schema: StructType) -> StructType:
    """A table the job's driver writes, with its columns as ``Output.rows`` lays them out: ``run_id``
    after the others, ``cluster_id`` (the partition folder) last."""
    at = schema.fieldNames().index("cluster_id")
    rest = schema.fields[:at] + schema.fields[at + 1 :]
    return StructType([*rest, StructField("run_id", StringType()), schema.fields[at]])


TABLES = {"batches": _with_cluster(BATCHES), "records": _with_cluster(RECORDS),
          "problems": _run_table(tables.PROBLEMS_SCHEMA)}


class SourceError(ValueError):
    """An option or input the source cannot read: the one line the user sees."""


def _flag(options: dict, name: str, default: bool) -> bool:
    text = options.get(name, str(default)).strip().lower()
    if text not in ("true", "false"):
        raise SourceError(f"kraftlog source: option {name} is {text!r}, not true or false")
    return text == "true"


def _number(options: dict, name: str, default: int) -> int:
    text = options.get(name, str(default))
    try:
        return int(text)
    except ValueError:
        raise SourceError(f"kraftlog source: option {name} is {text!r}, not a number of bytes") from None


class KraftlogSource(DataSource):
    """``spark.read.format("kraftlog")``. Options: ``table`` (``batches``, ``records`` (the default)
    or ``problems``), ``redact`` (true: secrets hidden as the job hides them), ``maxBatchBytes`` and
    ``maxDecompressed`` (the job's ``--max-batch-bytes``, ``--max-decompressed``). The path is a local
    folder or a URI the job's ``--input`` takes."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def _input(self) -> str:
        path = self.options.get("path")
        if not path:
            raise SourceError('kraftlog source: no input; load("<log dir, folder of copies, or URI>")')
        return path

    def _table(self) -> str:
        table = self.options.get("table", "records").strip().lower()
        if table not in TABLES:
            raise SourceError(f"kraftlog source: option table is {table!r}, not one of {', '.join(TABLES)}")
        return table

    def schema(self) -> StructType:
        """The job's table; the input is discovered here too, so that ``load`` of a path that is not
        there, or holds no KRaft log dir, fails at once with the job's message."""
        table = self._table()
        _discover(self._input())
        return TABLES[table]

    def reader(self, schema: StructType) -> "Reader":
        limits = Limits(_number(self.options, "maxBatchBytes", DEFAULT_MAX_BATCH_BYTES),
                        _number(self.options, "maxDecompressed", DEFAULT_MAX_DECOMPRESSED))
        return Reader(self._input(), self._table(), schema, limits, _flag(self.options, "redact", True))


def _discover(path: str) -> Inventory:
    try:
        return discover([path])
    except ValueError as e:  # InputError, or a URI of no store kraftlog reads (StorageError)
        raise SourceError(str(e).replace("--input ", "kraftlog source: ", 1)) from None
    except OSError as e:
        raise SourceError(f"kraftlog source: {path}: {e}") from None


@dataclasses.dataclass
class Files(InputPartition):
    """One read task: the files it reads (``FileMeta``) and, for ``records``, what each supplies."""

    files: list
    want: dict = dataclasses.field(default_factory=dict)  # file_id -> offset intervals it supplies
    context: dict = dataclasses.field(default_factory=dict)  # cluster -> (txns, replayed ranges); names


@dataclasses.dataclass
class Rows(InputPartition):
    """Rows the driver made (``problems``)."""

    rows: list


class _Collected:
    """A ``Parts`` that keeps the batches a decode function writes, instead of writing files."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, pa.RecordBatch]] = []
        self._value = None

    def of(self, value: object) -> "_Collected":
        self._value = value
        return self

    def write(self, rb: pa.RecordBatch) -> None:
        if rb.num_rows:
            self.batches.append((self._value, rb))

    def take(self) -> list[tuple[str, pa.RecordBatch]]:
        out, self.batches = self.batches, []
        return out

    def close(self) -> int:
        return 0


class _Dropped(_Collected):
    """A ``Parts`` for what the source does not return (the timelines' events)."""

    def write(self, bucket: int, rb: pa.RecordBatch) -> None:
        pass


class Reader(DataSourceReader):
    def __init__(self, path: str, table: str, schema: StructType, limits: Limits, redact: bool) -> None:
        self.path, self.table, self.limits, self.redact = path, table, limits, redact
        self.arrow = arrow_schema(schema)
        self.run_id = new_run_id()  # a UUIDv7, as a run's

    def partitions(self) -> list[InputPartition]:
        inv = _discover(self.path)
        meta = passes._meta(inv)
        if self.table == "batches":
            sizes = passes._sizes(inv)
            return [Files([meta[i] for i in g]) for g in deal(sizes, passes.tasks(sum(sizes.values())))]
        planned = _plan(inv, self.limits, self.redact, self.run_id)
        if self.table == "problems":
            at = tables.PROBLEMS_SCHEMA.fieldNames().index("cluster_id")
            return [Rows([(*r[:at], *r[at + 1 :], self.run_id, r[at]) for r in planned.problems])]
        sizes = passes._sizes(inv, planned.want)
        return [Files([meta[i] for i in g], {i: planned.want[i] for i in g}, planned.context)
                for g in deal(sizes, passes.tasks(sum(sizes.values())))]

    def read(self, partition: InputPartition):
        if isinstance(partition, Rows):
            columns = list(zip(*partition.rows, strict=True)) if partition.rows else [()] * len(self.arrow)
            yield pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(columns, self.arrow, strict=True)],
                                             schema=self.arrow)
            return
        for m in partition.files:
            if self.table == "batches":
                yield from (self._shaped(rb, m.cluster_id) for rb in self._batches(m))
            else:
                yield from (self._shaped(rb, cluster) for cluster, rb in self._records(m, partition))

    def _batches(self, m: FileMeta) -> Iterator[pa.RecordBatch]:
        """A file's ``batches`` rows as ``read_file`` makes them, walk by walk (a task holds one
        window of a file, not all its rows)."""
        try:
            for w in walk(passes._read(m), self.limits, want=[]):
                yield _batch_rows(m, w, self.run_id)
        except StorageError as e:
            _fail(m, _unreadable(m, e))

    def _records(self, m: FileMeta, partition: Files) -> list[tuple[str, pa.RecordBatch]]:
        """A file's ``records`` rows, by the job's functions (its decode staged in a folder of the task's own)."""
        out = _Collected()
        root = tempfile.mkdtemp(prefix="kraftlog-source-")
        try:
            want = partition.want[m.file_id]
            txns, ranges = partition.context["clusters"].get(m.cluster_id, ([], []))
            for note in decode_file(m, passes._read(m), want, root, self.limits, self.redact):
                if note[1] == "unreadable":
                    _fail(m, note)
            finish_records(m, root, self.run_id, want, partition.context["names"], txns, ranges, self.redact,
                           [], 1, out, _Dropped())
        finally:
            shutil.rmtree(root, ignore_errors=True)
        return out.take()

    def _shaped(self, rb: pa.RecordBatch, cluster: str) -> pa.RecordBatch:
        """The job's columns then ``cluster_id`` (its partition folder), as Spark's schema has them."""
        rb = rb.append_column("cluster_id", pa.repeat(pa.scalar(cluster, pa.string()), rb.num_rows))
        return rb.cast(self.arrow)


def _fail(m: FileMeta, note: Note) -> NoReturn:
    """A file a read task cannot read to its end (gone, changed, unreadable since it was listed)
    fails the read with the job's line for it: the job makes it a ``problems`` row, and a
    DataFrame of ``batches`` or ``records`` has no place for one (fewer rows would pass for all)."""
    raise SourceError(f"kraftlog source: {m.file}: {json.loads(note[2])['detail']}")


@dataclasses.dataclass
class Planned:
    want: dict[int, list[tuple[int, int]]]
    context: dict  # {"clusters": cluster -> (txns, replayed ranges), "names": topic id -> name}
    problems: list[tuple]


def _plan(inv: Inventory, limits: Limits, redact: bool, run_id: str) -> Planned:
    """What the job decides before it writes ``records`` (see ``job._run``, stages read to records),
    made on the driver by the same functions, its passes run here one file after another."""
    root = tempfile.mkdtemp(prefix="kraftlog-source-")
    try:
        meta = passes._meta(inv)
        first = copies.likely_first(inv)
        eager = {f.file_id for f in inv.readable if f.copy_id in first}
        batches = Parts(root, "batches", BATCHES, "plan")
        notes = passes.by_kind([(i, k, b) for f in inv.readable for i, k, b in read_file(
            meta[f.file_id], passes._read(meta[f.file_id]), batches, root, run_id, limits, f.file_id in eager,
            redact)])
        batches.close()
        summary = copies.summaries(notes["file"])
        rank = copies.ranks(inv, summary)
        mismatched = copies.block_mismatches(inv, notes["block"])
        cut = _cuts(root, inv, rank, mismatched) if mismatched else {}
        want, _, plans = choose(inv, summary, rank, cut)
        supplied_notes(notes, passes.by_kind([(i, k, b) for f, w in want.items() if f not in eager for i, k, b in
                                              decode_file(meta[f], passes._read(meta[f]), w, root, limits, redact)]),
                       want)
        seeded = passes.by_kind([(i, k, b) for p in plans.values() for s in p.seeds for i, k, b in seed_file(
            meta[s.file_id], passes._read(meta[s.file_id]), s.end_offset - 1, s.timestamp, root, 1, limits, redact)])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    txns, names = context(inv, notes, seeded)
    clusters = {c: (txns.get(c, []), p.ranges) for c, p in plans.items()}
    unreplayable = [(c, lo, hi) for c, p in plans.items() for lo, hi in p.unreplayable]
    found = {kind: notes[kind] + seeded[kind] for kind in tables.PROBLEM_NOTES}
    return Planned(want, {"clusters": clusters, "names": names}, tables.problem_rows(inv, found, unreplayable))


def _cuts(root: str, inv: Inventory, rank: dict[int, int], mismatched: list[tuple[str, int]]) -> dict[int, int]:
    """``copies.cuts(copies.divergence(...))`` of the batches the driver read into ``root``, without a
    Spark query (the driver's planning has no session): per copy, the first offset of a mismatched
    block where its batch (leader epoch, CRC, offsets) is not the one of the copy ranked first there.
    ``tests/test_spark_source.py`` checks both give the same cuts."""
    blocks = set(mismatched)
    copy_of = {c.log_dir: c for c in inv.copies}
    rows = pq.read_table(f"{root}/batches", columns=["log_dir", "file", "file_kind", "base_offset", "last_offset",
                                                      "leader_epoch", "crc"], partitioning=None)
    held: dict[tuple[str, int], list[tuple]] = defaultdict(list)
    for r in rows.filter(pc.equal(rows.column("file_kind"), "segment")).to_pylist():
        c, base, last = copy_of[r["log_dir"]], r["base_offset"], r["last_offset"]
        if (c.cluster_id, base // BLOCK_OFFSETS) in blocks:
            for offset in range(base, last + 1):
                held[(c.cluster_id, offset)].append((rank[c.copy_id], r["file"], r["leader_epoch"], r["crc"], base,
                                                     last, c.copy_id))
    cut: dict[int, int] = {}
    for (_, offset), found in held.items():
        found.sort()  # as divergence's sort_array: rank first, which is one copy's
        for row in found[1:]:
            if row[2:6] != found[0][2:6]:
                cut[row[6]] = min(cut.get(row[6], offset), offset)
    return cut


def register(spark: SparkSession) -> None:
    """``spark.read.format("kraftlog")`` in this session (``spark.dataSource.register(KraftlogSource)``)."""
    spark.dataSource.register(KraftlogSource)
