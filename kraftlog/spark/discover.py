"""Which files the job reads, found the way ``kraftlog inspect`` finds them (``find_nodes``).

Discovery runs on the driver, over local paths or URIs (``kraftlog.files.storage``): the tables name
each file as the driver found it (an absolute local path, or the URI below the one the user gave),
and a task reads it by that name. ``meta.properties`` names each copy's cluster and node; what each
file was when listed (``Inventory.seen``: size, modification time, inode) is what a task checks it
against before reading it.
"""

import hashlib
from dataclasses import dataclass, field
from typing import NamedTuple

from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from kraftlog.files import storage
from kraftlog.files.logdir import NodeDir, find_nodes
from kraftlog.files.storage import Remote, Stat, Where
from kraftlog.spark.sink import partition_value

READABLE = ("segment", "snapshot", "bootstrap")


class FileEntry(NamedTuple):
    file_id: int
    copy_id: int
    cluster_id: str
    node_id: int | None
    log_dir: str
    file: str
    kind: str  # segment | snapshot | bootstrap | skipped | unreadable (skip_reason says why)
    name_offset: int | None  # segment base offset, snapshot end offset (from the file name)
    name_epoch: int | None  # snapshot epoch
    bytes: int
    skip_reason: str | None


FILES_SCHEMA = StructType([
    StructField("file_id", IntegerType(), False),
    StructField("copy_id", IntegerType(), False),
    StructField("cluster_id", StringType(), False),
    StructField("node_id", IntegerType(), True),
    StructField("log_dir", StringType(), False),
    StructField("file", StringType(), False),
    StructField("kind", StringType(), False),
    StructField("name_offset", LongType(), True),
    StructField("name_epoch", IntegerType(), True),
    StructField("bytes", LongType(), False),
    StructField("skip_reason", StringType(), True),
])


@dataclass(frozen=True, slots=True)
class Copy:
    """One node's copy of one cluster's metadata log directory."""

    copy_id: int
    cluster_id: str
    node_id: int | None
    log_dir: str
    metadata_dir: str | None = None  # its __cluster_metadata-N folder, if it has one


@dataclass(slots=True)
class Inventory:
    copies: list[Copy] = field(default_factory=list)
    files: list[FileEntry] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (copy_id, message)
    seen: dict[int, Stat] = field(default_factory=dict)  # file_id -> what it was when listed

    @property
    def readable(self) -> list[FileEntry]:
        return [f for f in self.files if f.kind in READABLE]


def where(given: str) -> Where:
    """An input as the user typed it or Spark reports it: a local ``Path`` made absolute
    (``file:/a%20b`` -> ``/a b``), or a ``Remote`` for a URI (``s3://``, ``gs://``, ...)."""
    found = storage.resolve(given)
    return found if isinstance(found, Remote) else found.absolute()


def local_path(path: str) -> str:
    """An input's name in the tables and the manifest: an absolute local path, or its URI."""
    return str(where(path))


def cannot_open(path: Where) -> str | None:
    """Why the driver cannot open a local ``path`` (permission denied, an I/O error), or None: such a
    file is a ``problems`` row of kind ``unreadable``, not a failed task. A file of a store is not
    opened here (a request per file): a task that cannot read it says so, as the same kind of row."""
    if isinstance(path, Remote):
        return None
    try:
        with open(path, "rb"):
            return None
    except OSError as e:
        return e.strerror or str(e)


#: Bytes of a ``cluster_id=<value>`` folder name's escaped value, at most: file systems refuse names
#: over 255 bytes (ENAMETOOLONG), and every table has a folder per cluster.
MAX_PARTITION_BYTES = 200


def cluster_of(node: NodeDir) -> str:
    """The cluster id; a copy without ``meta.properties`` is a cluster of its own (named by its log dir).
    An id whose folder name would be too long (a long log dir, an edited ``meta.properties``) is cut
    and made unique with a hash of the whole (``bounded``), and the copy says so in a problem."""
    cluster = node.cluster_id or f"unknown:{node.log_dir.absolute()}"
    short = bounded(cluster)
    if short != cluster:
        node.problems.append(f"cluster id {cluster[:300]!r}{'...' if len(cluster) > 300 else ''} is too long "
                             f"for a folder name: its rows carry {short!r}")
    return short


def bounded(cluster: str) -> str:
    """``cluster`` itself when its escaped folder value fits ``MAX_PARTITION_BYTES``; else its longest
    prefix that fits with ``~`` and 16 hex digits of its SHA-256 after it (distinct ids stay distinct)."""
    if len(partition_value(cluster).encode()) <= MAX_PARTITION_BYTES:
        return cluster
    tail = "~" + hashlib.sha256(cluster.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    room, prefix = MAX_PARTITION_BYTES - len(tail), ""
    for ch in cluster:
        if len(partition_value(prefix + ch).encode("utf-8", "surrogatepass")) > room:
            break
        prefix += ch
    return prefix + tail


class InputError(ValueError):
    """An input that is no folder or holds no KRaft log dir: a mistyped path must not pass for an
    empty cluster."""


def discover(inputs: list[str]) -> Inventory:
    """Every node copy under the inputs (each counted once), its readable and skipped files."""
    inv = Inventory()
    seen: set[str] = set()
    for given in inputs:
        unsearched: list[OSError] = []
        try:
            nodes = find_nodes(where(given), unsearched)
        except FileNotFoundError:
            there = storage.stat(where(given)).kind != "missing"
            raise InputError(f"--input {given}: {'not a directory' if there else 'no such directory'}") from None
        except storage.StorageError as e:
            raise InputError(f"--input {given}: {e}") from None
        if unsearched:  # part of the input unsearched: its tables would pass for the whole of it
            e = unsearched[0]
            raise InputError(f"--input {given}: {e.filename}: {e.strerror}" if e.filename else f"--input {given}: {e}")
        if not nodes:
            raise InputError(f"--input {given}: no KRaft log dir below it (no __cluster_metadata-0 folder, "
                             "meta.properties or bootstrap.checkpoint)")
        for node in nodes:
            log_dir = str(node.log_dir.absolute())
            if log_dir in seen:
                continue
            seen.add(log_dir)
            copy = Copy(len(inv.copies), cluster_of(node), node.node_id, log_dir,
                        str(node.metadata_dir.absolute()) if node.metadata_dir else None)
            inv.copies.append(copy)
            inv.problems.extend((copy.copy_id, p) for p in node.problems)

            def add(path: Where, kind: str, offset: int | None, epoch: int | None, why: str | None,
                    copy: Copy = copy, node: NodeDir = node) -> None:
                found = node.stats.get(str(path))  # from the listing: no request per file of a store
                if found is None:
                    try:
                        found = storage.stat(path)
                    except storage.StorageError:  # a task reading it says why
                        found = storage.MISSING
                inv.seen[len(inv.files)] = found
                inv.files.append(FileEntry(len(inv.files), copy.copy_id, copy.cluster_id, copy.node_id,
                                           copy.log_dir, str(path.absolute()), kind, offset, epoch,
                                           found.size if found.kind == "file" else 0, why))

            unreadable = dict(node.unreadable)
            for lf in [*([node.bootstrap] if node.bootstrap else []), *node.snapshots, *node.segments]:
                why = cannot_open(lf.path)
                add(lf.path, lf.kind if why is None else "unreadable", lf.offset, lf.epoch, why)
            for path, why in node.skipped:
                add(path, "skipped" if path not in unreadable else "unreadable", None, None, unreadable.pop(path, why))
            for path, why in unreadable.items():
                add(path, "unreadable", None, None, why)
    return inv
