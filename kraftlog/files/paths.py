"""What a file is, from its name and place: Kafka decides by name, and so do we."""

import errno
import os
import posixpath
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kraftlog.files.storage import Remote, local

SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
CHECKPOINT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
BOOTSTRAP = "bootstrap.checkpoint"
METADATA_DIR_RE = re.compile(r"^__cluster_metadata-\d+$")
#: A partition's folder, as Kafka's ``LocalLog`` names it: ``<topic>-<partition>``, and the same with
#: ``.<uuid>-delete`` / ``-future`` / ``-stray`` while it is being deleted, moved or found stray.
PARTITION_DIR_RE = re.compile(r"^.+-\d+(\.[0-9a-f]{32}-(delete|future|stray))?$")


@dataclass(frozen=True, slots=True)
class LogFile:
    """A readable log file: a segment, a snapshot, or the bootstrap snapshot."""

    path: Path | Remote
    kind: str  # "segment" | "snapshot" | "bootstrap" | "other"
    offset: int  # segment base offset, snapshot end offset (exclusive), 0 otherwise
    epoch: int = 0  # snapshot epoch

    @property
    def is_metadata(self) -> bool:
        """Files under ``__cluster_metadata-N`` and every ``.checkpoint`` hold metadata records."""
        return self.kind in ("snapshot", "bootstrap") or any(
            METADATA_DIR_RE.match(p) for p in self.path.parts[:-1]
        )


def classify(path: str | os.PathLike | Remote) -> LogFile:
    p = path if isinstance(path, Remote) else Path(path)
    name = p.name
    if m := SEGMENT_RE.match(name):
        return LogFile(p, "segment", int(m.group(1)))
    if m := CHECKPOINT_RE.match(name):
        return LogFile(p, "snapshot", int(m.group(1)), int(m.group(2)))
    if name == BOOTSTRAP:
        return LogFile(p, "bootstrap", 0)
    return LogFile(p, "other", 0)


#: Folders below a walked root that are listed: a copied log dir is a few levels deep (a fleet's
#: folder, a node's, its log dir, ``__cluster_metadata-0``); a deeper tree is not a log dir's.
MAX_DEPTH = 32


class NotRegularFile(OSError):
    """An entry that is neither a folder nor a regular file (FIFO, device, socket): never opened."""

    def __init__(self, path: str) -> None:
        super().__init__(errno.EINVAL, "not a regular file (a FIFO, device or socket); skipped", path)


class TooDeep(OSError):
    """A folder below the depth a walk lists: its contents are not read."""

    def __init__(self, path: str, depth: int) -> None:
        super().__init__(errno.ELOOP, f"nested deeper than {depth} folders below the input; not read", path)


def walk_tree(root: str | os.PathLike, onerror: Callable[[OSError], object] | None = None,
              max_depth: int = MAX_DEPTH) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(root, onerror=onerror)`` (top down; the caller may prune ``dirnames``; symlinked
    folders are listed but not entered), without recursion: Python 3.11's ``os.walk`` recurses, so
    1,500 nested folders are a ``RecursionError``. ``filenames`` holds regular files only (a FIFO
    named like a segment would hang its reader): other entries go to ``onerror`` as
    ``NotRegularFile``, and the folders below ``max_depth`` as ``TooDeep``."""
    report = onerror or (lambda e: None)
    stack = [(os.fspath(root), 0)]
    while stack:
        top, depth = stack.pop()
        dirnames, filenames = [], []
        try:
            with os.scandir(top) as entries:
                for e in entries:
                    try:
                        if e.is_dir():
                            dirnames.append(e.name)
                        elif e.is_file():
                            filenames.append(e.name)
                        elif e.is_symlink() and not os.path.exists(e.path):
                            filenames.append(e.name)  # dangling: its reader says it cannot be opened
                        else:
                            report(NotRegularFile(e.path))
                    except OSError as err:
                        report(err)
        except OSError as err:
            report(err)
            continue
        yield top, dirnames, filenames
        below = []
        for d in dirnames:
            path = os.path.join(top, d)
            if os.path.islink(path):
                continue
            if depth >= max_depth:
                report(TooDeep(path, max_depth))
            else:
                below.append((path, depth + 1))
        stack.extend(reversed(below))


def is_data_partition_dir(path: Path) -> bool:
    """A partition folder of a topic other than the metadata log: named like one, and holding files
    only (a log dir named ``broker-1`` holds ``meta.properties`` or folders)."""
    if not PARTITION_DIR_RE.match(path.name) or METADATA_DIR_RE.match(path.name):
        return False
    try:
        with os.scandir(path) as entries:
            return all(e.name != "meta.properties" and not e.is_dir() for e in entries)
    except OSError:
        return False  # walked, so that what cannot be read is said where it is read


def log_files_under(root: str | os.PathLike, all_partitions: bool = False,
                    left_out: list[Path] | None = None, unreadable: list[OSError] | None = None) -> list[LogFile]:
    """Segments and checkpoints below ``root``: per directory the bootstrap snapshot first, then
    snapshots and segments in offset order (a snapshot ending at O sorts before the segment
    starting at O); a folder named like one of them is listed too. Data partitions' folders below ``root`` are not walked unless ``all_partitions``
    (``root`` itself always is); those left out are appended to ``left_out``, and the folders that
    could not be listed to ``unreadable``, as are folders nested too deep (``walk_tree``) and
    entries named like a log file that are not regular files."""
    found = []

    def skipped(e: OSError) -> None:
        if unreadable is not None and not (isinstance(e, NotRegularFile) and classify(e.filename).kind == "other"):
            unreadable.append(e)

    for dirpath, dirnames, filenames in walk_tree(root, skipped):
        dirnames.sort()
        if not all_partitions:
            for d in [d for d in dirnames if is_data_partition_dir(Path(dirpath) / d)]:
                dirnames.remove(d)
                if left_out is not None:
                    left_out.append(Path(dirpath) / d)
        misnamed = [d for d in dirnames if classify(d).kind != "other"]  # a folder named like a log file
        for d in misnamed:
            dirnames.remove(d)  # listed, so that reading it says it is no file
        files = [classify(Path(dirpath) / n) for n in [*filenames, *misnamed]]
        files = [f for f in files if f.kind != "other"]
        order = {"bootstrap": 0, "snapshot": 1, "segment": 2}
        files.sort(key=lambda f: (f.kind != "bootstrap", f.offset, order[f.kind], f.epoch))
        found.extend(files)
    return found


#: A URI names its scheme and ``//`` (``s3a://b/k``, ``hdfs://nn/x``) or is a ``file:`` URI; anything
#: else is a path, whatever it holds (``out#1``, ``a?b``, ``run:2`` are file names).
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://([^/]*)(.*)$", re.DOTALL)
#: Names of one store: Hadoop's ``s3a``/``s3n`` are pyarrow's ``s3``, ``gcs`` is ``gs``.
_STORE = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}


def location(text: str) -> tuple[str, PurePosixPath]:
    """Where a path or URI points, in a form two can be compared in: ``("", real path)`` for a local one
    (absolute, symlinks resolved), ``("<scheme>://<bucket>", key)`` for a URI (the scheme by store, the
    key normalized: ``s3a://b/x/../y/`` is ``s3://b``, ``/y``)."""
    m = _URI.match(text)
    if m is None or m[1].lower() == "file":
        return "", PurePosixPath(Path(local(text)).resolve())
    scheme = m[1].lower()
    return f"{_STORE.get(scheme, scheme)}://{m[2]}", PurePosixPath(posixpath.normpath("/" + m[3].lstrip("/")))


def _read_root(given: str) -> tuple[str, PurePosixPath]:
    """What reading ``given`` reads: a file or metadata folder given as input stands for its log dir
    (``meta.properties``, ``bootstrap.checkpoint`` are read too)."""
    store, root = location(given)
    if not store and os.path.isfile(root):
        root = root.parent
    if METADATA_DIR_RE.match(root.name):
        root = root.parent
    return store, root


def _inside(inner: tuple[str, PurePosixPath], outer: tuple[str, PurePosixPath]) -> bool:
    return inner[0] == outer[0] and inner[1].is_relative_to(outer[1])


def read_by(path: str | os.PathLike, inputs: list[str]) -> str | None:
    """The input ``path`` lies inside, if any, so that nothing kraftlog writes lands in what it reads."""
    target = location(os.fspath(path))
    return next((given for given in inputs if _inside(target, _read_root(given))), None)


def holds(path: str | os.PathLike, inputs: list[str]) -> str | None:
    """The input that lies inside ``path`` (or is it), if any: replacing ``path`` would delete it."""
    target = location(os.fspath(path))
    return next((given for given in inputs if _inside(location(given), target)), None)
