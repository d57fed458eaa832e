"""What a file is, from its name and place: Kafka decides by name, and so do we."""

import os
import re
from dataclasses import dataclass
from pathlib import Path

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
    could not be listed to ``unreadable``."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=None if unreadable is None else unreadable.append):
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
