"""What a file is, from its name and place: Kafka decides by name, and so do we."""

import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
CHECKPOINT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
BOOTSTRAP = "bootstrap.checkpoint"
METADATA_DIR_RE = re.compile(r"^__cluster_metadata-\d+$")


@dataclass(frozen=True, slots=True)
class LogFile:
    """A readable log file: a segment, a snapshot, or the bootstrap snapshot."""

    path: Path
    kind: str  # "segment" | "snapshot" | "bootstrap" | "other"
    offset: int  # segment base offset, snapshot end offset (exclusive), 0 otherwise
    epoch: int = 0  # snapshot epoch

    @property
    def is_metadata(self) -> bool:
        """Files under ``__cluster_metadata-N`` and every ``.checkpoint`` hold metadata records."""
        return self.kind in ("snapshot", "bootstrap") or any(
            METADATA_DIR_RE.match(p) for p in self.path.parts[:-1]
        )


def classify(path: str | os.PathLike) -> LogFile:
    p = Path(path)
    name = p.name
    if m := SEGMENT_RE.match(name):
        return LogFile(p, "segment", int(m.group(1)))
    if m := CHECKPOINT_RE.match(name):
        return LogFile(p, "snapshot", int(m.group(1)), int(m.group(2)))
    if name == BOOTSTRAP:
        return LogFile(p, "bootstrap", 0)
    return LogFile(p, "other", 0)


def log_files_under(root: str | os.PathLike) -> list[LogFile]:
    """Segments and checkpoints below ``root``: per directory the bootstrap snapshot first, then
    snapshots and segments in offset order (a snapshot ending at O sorts before the segment
    starting at O)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        files = [classify(Path(dirpath) / n) for n in filenames]
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


def is_uri(text: str) -> bool:
    return bool(_URI.match(text)) or text.startswith("file:")


def is_remote(text: str) -> bool:
    """A URI of a store other than the local filesystem (``file:`` URIs and paths are local)."""
    return is_uri(text) and not text.startswith("file:")


def local(text: str) -> str:
    """The local path a plain path or ``file:`` URI names (``file:/a%20b`` -> ``/a b``), not made absolute."""
    return unquote(urlsplit(text).path) if text.startswith("file:") else text


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
