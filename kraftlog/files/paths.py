"""What a file is, from its name and place: Kafka decides by name, and so do we."""

import os
import re
from dataclasses import dataclass
from pathlib import Path

from kraftlog.files.storage import Remote

SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
CHECKPOINT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
BOOTSTRAP = "bootstrap.checkpoint"
METADATA_DIR_RE = re.compile(r"^__cluster_metadata-\d+$")


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


def read_by(path: str | os.PathLike, inputs: list[str]) -> str | None:
    """The input ``path`` lies inside, if any, so that nothing kraftlog writes lands in what it reads.
    A file or metadata folder given as input stands for its log dir, which is read too
    (``meta.properties``, ``bootstrap.checkpoint``)."""
    target = Path(path).resolve()
    for given in inputs:
        root = Path(given).resolve()
        if root.is_file():
            root = root.parent
        if METADATA_DIR_RE.match(root.name):
            root = root.parent
        if target.is_relative_to(root):
            return given
    return None
