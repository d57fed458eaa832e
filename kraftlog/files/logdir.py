"""What a copied log directory holds, per node: files, offsets covered, gaps, snapshots, and
whether the metadata state can be rebuilt from it.

Accepts a log-dir root (``meta.properties`` + ``__cluster_metadata-0/``), a ``__cluster_metadata-0``
folder itself, or any folder holding several nodes' log dirs.
"""

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kraftlog.files import storage
from kraftlog.files.paths import BOOTSTRAP, MAX_DEPTH, METADATA_DIR_RE, LogFile, TooDeep, classify
from kraftlog.files.reader import Limits, NotClean, Region, read_log_file
from kraftlog.files.storage import Remote, Where
from kraftlog.files.walk import clean_header_columns
from kraftlog.wire.batch import LOG_OVERHEAD, Batch, BatchHeader

#: Files Kafka leaves in a partition directory that hold no records to replay.
SKIPPED_SUFFIXES = {
    ".deleted": "marked for deletion by Kafka (file.delete.delay.ms)",
    ".part": "snapshot still being written; Kafka deletes it at startup",
    ".swap": "temporary file of a segment replacement",
    ".cleaned": "temporary file of log cleaning",
    ".index": "offset index (rebuildable)",
    ".timeindex": "time index (rebuildable)",
    ".snapshot": "producer-state snapshot, not a Raft snapshot",
    ".txnindex": "aborted-transaction index",
}
_KNOWN_TEXT = ("quorum-state", "leader-epoch-checkpoint", "partition.metadata")


@dataclass(slots=True)
class MetaProperties:
    """``meta.properties``: version 1 is KRaft (``node.id``), version 0 the legacy ``broker.id``."""

    version: int | None
    cluster_id: str | None
    node_id: int | None
    directory_id: str | None
    properties: dict[str, str]


@dataclass(slots=True)
class FileScan:
    """Offsets and health of one segment or snapshot, from its batch headers."""

    file: LogFile
    bytes: int = 0  # == batch_bytes + skipped_bytes
    batch_bytes: int = 0
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    epochs: tuple[int, int] | None = None
    invalid_batches: int = 0
    skipped_bytes: int = 0
    regions: list[Region] = field(default_factory=list)
    discontinuities: list[tuple[int, int]] = field(default_factory=list)  # (expected, found)
    unreadable: str | None = None  # why the file could not be opened or read to its end

    @property
    def clean(self) -> bool:
        return (not self.invalid_batches and not self.skipped_bytes and not self.discontinuities
                and self.unreadable is None)


@dataclass(slots=True)
class NodeDir:
    """One node's copy: its log dir and its ``__cluster_metadata-N`` folder."""

    log_dir: Where  # a local Path, or a Remote (see ``storage``)
    metadata_dir: Where | None
    meta: MetaProperties | None = None
    bootstrap: LogFile | None = None
    segments: list[LogFile] = field(default_factory=list)
    snapshots: list[LogFile] = field(default_factory=list)
    quorum_state: dict | None = None
    leader_epochs: list[tuple[int, int]] = field(default_factory=list)
    partition_metadata: dict[str, str] | None = None
    skipped: list[tuple[Where, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unreadable: list[tuple[Where, str]] = field(default_factory=list)  # files that could not be read, and why
    stats: dict[str, storage.Stat] = field(default_factory=dict)  # str(path) -> what listing it said

    @property
    def cluster_id(self) -> str | None:
        return self.meta.cluster_id if self.meta else None

    @property
    def node_id(self) -> int | None:
        return self.meta.node_id if self.meta else None

    @property
    def name(self) -> str:
        who = f"node {self.node_id}" if self.node_id is not None else "node ?"
        return f"{who} [{self.log_dir.name}]"


def _properties(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep >= 0:
            out[line[:sep].strip()] = line[sep + 1 :].strip()
    return out


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _text(path: Where) -> str:
    """A small text file's contents (``storage.read_small`` bounds it; undecodable bytes replaced)."""
    return storage.read_small(path).decode(errors="replace")


def read_meta_properties(path: str | os.PathLike | Where) -> MetaProperties:
    props = _properties(_text(storage.resolve(path)))
    return MetaProperties(
        _int(props.get("version")),
        props.get("cluster.id"),
        _int(props.get("node.id", props.get("broker.id"))),
        props.get("directory.id"),
        props,
    )


#: ``epoch startOffset``: ASCII digits that fit a long (``str.isdigit`` also takes "²", which int() refuses).
_EPOCH_LINE = re.compile(r"\s*(-?[0-9]{1,19})\s+(-?[0-9]{1,19})\s*")


def read_leader_epoch_checkpoint(path: str | os.PathLike | Where) -> list[tuple[int, int]]:
    """Lines: version, count, then ``epoch startOffset`` pairs; other lines are left out."""
    lines = _text(storage.resolve(path)).split("\n")
    return [(int(m[1]), int(m[2])) for line in lines[2:] if (m := _EPOCH_LINE.fullmatch(line))]


def _metadata_dirs(root: Where, report) -> Iterator[Where]:
    """``__cluster_metadata-N`` folders below ``root`` in name order, walked as ``paths.walk_tree``
    walks (iteratively, not into symlinked folders nor below a metadata folder, not deeper than
    ``MAX_DEPTH``), through the storage layer so that a store is walked too; what is not walked
    (``TooDeep``, a folder that cannot be listed) goes to ``report``."""
    if METADATA_DIR_RE.match(root.name):
        yield root
        return
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = storage.listdir(folder)
        except storage.StorageError as e:
            report(e)
            continue
        below = []
        for p, s, link in entries:
            if s.kind != "dir":
                continue
            if METADATA_DIR_RE.match(p.name):
                yield p
            elif link:
                continue
            elif depth >= MAX_DEPTH:
                report(TooDeep(str(p), MAX_DEPTH))
            else:
                below.append(p)
        stack.extend((p, depth + 1) for p in reversed(below))


def find_nodes(path: str | os.PathLike | Remote, unreadable: list[OSError] | None = None) -> list[NodeDir]:
    """Every node copy below ``path`` (a local path, or a ``Remote`` from ``storage.resolve``); a log
    dir without a metadata folder still counts if it holds ``meta.properties`` or
    ``bootstrap.checkpoint``. Folders not searched (too deep, or that cannot be listed) are
    appended to ``unreadable``."""
    root = path if isinstance(path, Remote) else Path(path)
    if storage.stat(root).kind != "dir":
        raise FileNotFoundError(f"not a directory: {root}")
    report = unreadable.append if unreadable is not None else (lambda e: None)
    nodes = [load_node(d.parent, d) for d in _metadata_dirs(root, report)]
    if not nodes and any(storage.stat(root / n).kind != "missing" for n in ("meta.properties", BOOTSTRAP)):
        nodes.append(load_node(root, None))
    return nodes


def load_node(log_dir: Where, metadata_dir: Where | None) -> NodeDir:
    """One copy's files; a file that cannot be read is a problem of the node (one line naming it and
    why), never an exception."""
    node = NodeDir(log_dir, metadata_dir)

    def read(path: Where, parse):
        try:
            return parse(path)
        except OSError as e:  # StorageError says "<path>: why"; the path is in the entry already
            node.unreadable.append((path, str(e).removeprefix(f"{path}: ") if isinstance(e, storage.StorageError)
                                    else e.strerror or str(e)))
            return None

    if _is_file(log_dir / "meta.properties"):
        node.meta = read(log_dir / "meta.properties", read_meta_properties)
    else:
        node.problems.append("no meta.properties: cluster and node id unknown")
    if _is_file(log_dir / BOOTSTRAP):
        node.bootstrap = classify(log_dir / BOOTSTRAP)
    if metadata_dir is None:
        return node
    for p, s, _ in read(metadata_dir, storage.listdir) or []:
        node.stats[str(p)] = s
        lf = classify(p)
        if s.kind != "file":
            node.skipped.append((p, "not a regular file" if s.kind == "other" else "not a file"))
            if lf.kind != "other":
                node.unreadable.append((p, f"a {'directory' if s.kind == 'dir' else 'special file'} where a "
                                           f"{lf.kind} should be"))
            continue
        if lf.kind == "segment":
            node.segments.append(lf)
        elif lf.kind == "snapshot":
            node.snapshots.append(lf)
        elif p.name == "quorum-state":
            text = read(p, storage.read_small)  # decoded by json.loads: bad UTF-8 is "not JSON" too
            try:
                state = json.loads(text) if text is not None else None
            except (ValueError, RecursionError) as e:  # RecursionError: nesting too deep
                node.problems.append(f"quorum-state is not JSON: {e}")
            else:
                if isinstance(state, dict):
                    node.quorum_state = state
                elif text is not None:
                    node.problems.append(f"quorum-state is JSON but not an object: {type(state).__name__}")
        elif p.name == "leader-epoch-checkpoint":
            node.leader_epochs = read(p, read_leader_epoch_checkpoint) or []
        elif p.name == "partition.metadata":
            node.partition_metadata = read(p, lambda f: _properties(_text(f)))
        else:
            why = next((w for s, w in SKIPPED_SUFFIXES.items() if p.name.endswith(s)), "not a Kafka log file")
            node.skipped.append((p, why))
    node.segments.sort(key=lambda f: f.offset)
    node.snapshots.sort(key=lambda f: (f.offset, f.epoch))
    return node


def _is_file(path: Where) -> bool:
    """A regular file is there (one that cannot be looked at is not: as ``Path.is_file``)."""
    try:
        return storage.stat(path).kind == "file"
    except storage.StorageError:
        return False


def scan_file(lf: LogFile, limits: Limits = Limits()) -> FileScan:
    """Walk a file's batch headers: offsets, timestamps, epochs, CRCs, reported regions; a file that
    cannot be opened or read to its end says why in ``unreadable``. A clean file's headers are read
    as columns alone (``walk.clean_header_columns``); at anything else the file is walked again by the reader."""
    try:
        return _scan_columns(lf, clean_header_columns(lf.path, limits))
    except NotClean:
        return scan_items(lf, read_log_file(lf.path, limits, records=False))


#: Offsets farther from 0 than this are summed by the reader's path, in Python's integers (no column may wrap).
_FAR = 1 << 62


def _scan_columns(lf: LogFile, windows: Iterable[dict[str, np.ndarray]]) -> FileScan:
    """``scan_items`` of a clean file's header columns (every batch whole, its CRC holding), a window at a time;
    ``NotClean`` for offsets a column could not sum."""
    s = FileScan(lf)
    expected: int | None = None
    lo = hi = None
    try:
        s.bytes = storage.stat(lf.path).size
        for h in windows:
            base = h["baseOffset"]
            if not len(base):
                continue
            if int(base.max()) > _FAR or int(base.min()) < -_FAR:
                raise NotClean(lf.path)
            last = base + h["lastOffsetDelta"]
            s.batches += len(base)
            s.batch_bytes += int(h["batchLength"].sum(dtype=np.int64)) + len(base) * LOG_OVERHEAD
            s.records += int(np.maximum(h["recordsCount"], 0).sum(dtype=np.int64))
            follows = np.concatenate([[int(base[0]) if expected is None else expected], last[:-1] + 1])
            gaps = np.flatnonzero(base != follows)
            s.discontinuities += zip(follows[gaps].tolist(), base[gaps].tolist(), strict=True)
            expected = int(last[-1]) + 1
            times = h["maxTimestamp"]
            if s.first_offset is None:
                s.first_offset, s.first_timestamp = int(base[0]), int(times[0])
            s.last_offset, s.last_timestamp = int(last[-1]), int(times[-1])
            epochs = h["partitionLeaderEpoch"]
            lo = int(epochs.min()) if lo is None else min(lo, int(epochs.min()))
            hi = int(epochs.max()) if hi is None else max(hi, int(epochs.max()))
    except OSError as e:
        s.unreadable = e.strerror or str(e)
    s.epochs = None if lo is None else (lo, hi)
    return s


_FIELD = {sc.name: k for k, sc in enumerate(BatchHeader.subcons)}
_BASE, _LENGTH, _EPOCH, _LAST_DELTA, _MAX_TS, _COUNT = (_FIELD[name] for name in (
    "baseOffset", "batchLength", "partitionLeaderEpoch", "lastOffsetDelta", "maxTimestamp", "recordsCount"))


def scan_items(lf: LogFile, items: Iterable[Batch | Region]) -> FileScan:
    """``scan_file`` of what a reader yields: a ``Batch`` or ``Region``."""
    s = FileScan(lf)
    expected = None
    lo = hi = None
    try:
        s.bytes = storage.stat(lf.path).size
        for item in items:
            if isinstance(item, Region):
                s.regions.append(item)
                s.skipped_bytes += item.length
                continue
            h, valid = item.header, item.is_valid
            base, last = h[_BASE], h[_BASE] + h[_LAST_DELTA]
            s.batches += 1
            s.batch_bytes += h[_LENGTH] + LOG_OVERHEAD
            s.records += max(h[_COUNT], 0)
            s.invalid_batches += not valid
            if expected is not None and base != expected:
                s.discontinuities.append((expected, base))
            expected = last + 1
            if s.first_offset is None:
                s.first_offset, s.first_timestamp = base, h[_MAX_TS]
            s.last_offset, s.last_timestamp = last, h[_MAX_TS]
            epoch = h[_EPOCH]
            lo = epoch if lo is None else min(lo, epoch)
            hi = epoch if hi is None else max(hi, epoch)
    except OSError as e:
        s.unreadable = e.strerror or str(e)
    s.epochs = None if lo is None else (lo, hi)
    return s
