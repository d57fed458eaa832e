"""Tables written by the Python tasks themselves, into the run's staging folder.

The two big tables (a row per batch of every copy, a row per record) are built as Arrow columns
in the tasks that decode the files; handing them to the JVM only to be turned into rows and back
into columns costs more than the whole decode on a small machine. So the task writes them with
pyarrow, under Spark's table layout (``<table>/cluster_id=<id>/part-<file>-<run_id>.parquet``), to a
temporary name renamed into place: a retried or speculative task replaces its file whole.

What only a later pass reads back (``staged``) is Arrow IPC, lz4-compressed: half of Parquet's
cost to write and a third of its cost to read, for about seven times the bytes.

Every file a task closes is reported to the driver (``recording``): the driver checks each one is
there before a later pass reads it or the run is published, and readers read the parts reported,
never whatever a folder holds (a folder the reader cannot see would read as empty).

In an object store (no rename) the root is ``<output>/_staging-<run_id>`` (``staging_root``): staged
tables go under it, and a published table's Parquet parts go straight into the table's folder of the
output, named with the run id so that no part of an earlier run's table is replaced; the driver then
adds exactly the parts reported to each table in one Delta commit (``output.DeltaOutput``). An
object is visible whole once written, so no temporary name either.
"""

import re
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from kraftlog.files.storage import Remote, filesystem, resolve

#: Characters Spark escapes in partition folder names (``ExternalCatalogUtils.escapePathName``).
_ESCAPED = set(chr(c) for c in range(1, 32)) | set('"#%\'*/:=?\\\x7f{[]^')


def partition_value(value: str) -> str:
    """``cluster_id=<value>`` as Spark writes and reads it back."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def encodings(schema: pa.Schema) -> dict:
    """Parquet encodings by column type: offsets, positions and times (64-bit, mostly rising) as
    deltas; other columns in dictionaries. Half the write time of dictionaries everywhere (where
    every offset is distinct, building one is wasted), and a fifth of the bytes."""
    deltas = [f.name for f in schema if pa.types.is_int64(f.type) or pa.types.is_timestamp(f.type)]
    return {"use_dictionary": [f.name for f in schema if f.name not in deltas],
            "column_encoding": dict.fromkeys(deltas, "DELTA_BINARY_PACKED")}


#: Rows per Parquet row group: a task's many small batches in a few groups, which read back faster.
ROW_GROUP = 1 << 17


#: A published part's name (``Sink``), of the run whose id it carries.
_PUBLISHED = re.compile(r"part-.+-(?P<run_id>[0-9a-f-]{36})\.parquet", re.DOTALL)


def run_of(name: str) -> str | None:
    """The run id a published part's file name carries (``Sink``), or None."""
    return m["run_id"] if (m := _PUBLISHED.fullmatch(name)) else None


#: The run's staging prefix inside an object-store output (hidden from Delta and Hive readers by its ``_``).
STAGING = "_staging-"
_STAGING_ROOT = re.compile(STAGING + r"(?P<run_id>[0-9a-f-]{36})")
#: A local output's staging folder beside it (``guard.staging_name``).
_LOCAL_STAGING_ROOT = re.compile(r"\..+\.staging-(?P<run_id>[0-9a-f-]{36})", re.DOTALL)


def staging_root(output: str, run_id: str) -> str:
    """Where the tasks of run ``run_id`` write, for an object-store ``output`` (see the module)."""
    return f"{output.rstrip('/')}/{STAGING}{run_id}"


def _places(root: str, staged: bool) -> tuple:
    """The filesystem, the base a part's reported path is relative to, and the run id its name
    carries: a published part's name carries it, so that an appending run's parts never take the
    name of an earlier run's (``""`` for a staged part, or a root that is no run's staging)."""
    fs, base = filesystem(root)
    where = resolve(root)
    remote = isinstance(where, Remote)
    m = (_STAGING_ROOT if remote else _LOCAL_STAGING_ROOT).fullmatch(where.name)
    if m is None or staged:
        return fs, base, ""
    return fs, base.rsplit("/", 1)[0] if remote else base, m["run_id"]


class Sink:
    """Streams Arrow batches of one schema into one file of a table: Parquet, or Arrow IPC if ``staged``."""

    def __init__(self, root: str, table: str, schema: pa.Schema, part: str, value: object = None,
                 staged: bool = False, column: str = "cluster_id") -> None:
        fs, base, run_id = _places(root, staged)
        folder = table + (f"/{column}={partition_value(str(value))}" if value is not None else "")
        fs.create_dir(f"{base}/{folder}", recursive=True)
        self.relative = f"{folder}/part-{part}{'-' + run_id if run_id else ''}.{STAGED if staged else 'parquet'}"
        self.fs, self.path = fs, f"{base}/{self.relative}"
        self.table, self.part, self.value, self.staged = table, part, value, staged
        remote = isinstance(resolve(root), Remote)
        self.tmp = self.path if remote else f"{base}/{folder}/.part-{part}.{uuid.uuid4().hex}.tmp"
        self.schema = schema
        self.rows = 0
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0
        if staged:
            self.stream = fs.open_output_stream(self.tmp)
            self.writer = ipc.new_file(self.stream, schema, options=ipc.IpcWriteOptions(compression="lz4"))
        else:
            # published: small, and with the statistics that let a query skip row groups by offset,
            # time or id (min and max of a text or list column prune little and cost a sixth to a
            # third of the write)
            self.stream = None
            stats = [f.name for f in schema if pa.types.is_integer(f.type) or pa.types.is_timestamp(f.type)]
            self.writer = pq.ParquetWriter(self.tmp, schema, filesystem=fs, compression="zstd",
                                           write_statistics=stats or False, **encodings(schema))

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self.pending.append(batch)
            self.pending_rows += batch.num_rows
            self.rows += batch.num_rows
            if self.pending_rows >= ROW_GROUP:
                self._flush()

    def _flush(self) -> None:
        if self.pending:
            if self.stream is None:
                self.writer.write_table(pa.Table.from_batches(self.pending, self.schema), row_group_size=ROW_GROUP)
            else:  # one batch: a batch's buffers are compressed and read back one by one
                self.writer.write_batch(pa.concat_batches(self.pending) if len(self.pending) > 1 else self.pending[0])
            self.pending, self.pending_rows = [], 0

    def close(self) -> int:
        self._flush()
        self.writer.close()
        if self.stream is not None:
            self.stream.close()
        if self.tmp != self.path:
            self.fs.move(self.tmp, self.path)
        if _written is not None:
            _written.append({"table": self.table, "part": self.part, "value": self.value, "path": self.relative,
                             "rows": self.rows, "bytes": self.fs.get_file_info(self.path).size, "host": HOST,
                             "staged": self.staged})
        return self.rows


#: Named in the parts a task reports, and in the error when one cannot be read.
HOST = socket.gethostname()
_written: list[dict] | None = None


@contextmanager
def recording() -> Iterator[list[dict]]:
    """The parts closed inside the block (table, part, partition value, path under the root, rows,
    bytes, host): what a task reports to the driver. A Python worker runs one task at a time."""
    global _written
    outer, _written = _written, []
    try:
        yield _written
    finally:
        _written = outer


#: File suffix of a staged table's parts.
STAGED = "arrow"


def read_staged(root: str, path: str) -> Iterator[pa.RecordBatch]:
    """The batches of one part of a staged table (``<table>/part-<x>``, no suffix), one at a time (a
    part is as big as the file it was decoded from); a missing one is an error."""
    fs, base = filesystem(root)
    with fs.open_input_file(f"{base}/{path}.{STAGED}") as source:
        reader = ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)


class NotVisible(RuntimeError):
    """A part a task reported that the driver or another task cannot read: the run fails."""


def not_visible(part: dict, task: int, reader: str) -> str:
    """The one line that fails a run when a reported part cannot be read where it must be."""
    return (f"part written by task {task} on host {part['host']} at {part['path']} is not visible to {reader}: "
            "executors and driver do not share this output's storage; use a shared filesystem for --output")


def staged_batches(root: str, parts: list[dict]) -> Iterator[pa.RecordBatch]:
    """The batches of exactly the staged parts reported (``recording``'s entries, each with the
    ``task`` that wrote it), one at a time; a part this task cannot read fails it, naming the part's
    writer and path."""
    for p in sorted(parts, key=lambda p: p["path"]):
        try:
            yield from read_staged(root, p["path"].removesuffix(f".{STAGED}"))
        except FileNotFoundError:
            raise FileNotFoundError(not_visible({**p, "path": f"{filesystem(root)[1]}/{p['path']}"}, p["task"],
                                                f"the task on host {HOST}")) from None


def read_staged_parts(root: str, parts: list[dict], schema: pa.Schema,
                      keep: Callable[[pa.RecordBatch], pa.RecordBatch] = lambda rows: rows) -> pa.Table:
    """``staged_batches`` as one table of ``schema``, with the rows ``keep`` keeps of each batch (so
    that what is left out is never held all at once)."""
    return pa.Table.from_batches([keep(b) for b in staged_batches(root, parts)], schema)


class Parts:
    """One Parquet file per partition (``column`` = value) of a table, for a task whose rows come
    from many input files (a fleet's snapshots are thousands of small files) or go to many buckets."""

    def __init__(self, root: str, table: str, schema: pa.Schema, part: str, staged: bool = False,
                 column: str = "cluster_id", pending_bytes: int | None = None) -> None:
        self.root, self.table, self.schema, self.part = root, table, schema, part
        self.staged, self.column = staged, column
        self.sinks: dict[object, Sink] = {}
        self.most, self.pending = pending_bytes, 0
        self.held: dict[int, pa.Buffer] = {}  # a buffer of each batch the pending rows are slices of, by address

    def of(self, value: object) -> Sink:
        if value not in self.sinks:
            self.sinks[value] = Sink(self.root, self.table, self.schema, self.part, value, self.staged, self.column)
        return self.sinks[value]

    def write(self, value: object, batch: pa.RecordBatch) -> None:
        """``batch`` into ``value``'s file; every file's rows written out once they hold more than
        ``pending_bytes`` together. A task writing to many buckets would hold each one's rows until it
        has a row group's worth, and a slice holds the whole batch it was cut from: what counts is
        the buffers of each distinct batch the pending rows were cut from, once (the slices of one
        batch share its first column's buffer), not each slice's ``nbytes`` (which also takes 50 µs,
        a tenth of the records pass when every routed batch is cut into a slice per bucket)."""
        self.of(value).write(batch)
        if self.most is None or not batch.num_rows:
            return
        buffers = [b for b in batch.column(0).buffers() if b is not None]
        if buffers and buffers[0].address in self.held:
            return
        if buffers:  # kept, so that its address names no other batch until the rows are written
            self.held[buffers[0].address] = buffers[0]
        self.pending += batch.get_total_buffer_size()
        if self.pending > self.most:
            for s in self.sinks.values():
                s._flush()
            self.pending = 0
            self.held.clear()

    def close(self) -> int:
        return sum(s.close() for s in self.sinks.values())
