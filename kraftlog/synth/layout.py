"""A node's log directory as Kafka lays it out (reference section 5): rolled segments, snapshot
files, and the small text files beside them. Nothing here knows what the records mean."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

METADATA_DIR = "__cluster_metadata-0"
#: ``Uuid.ONE_UUID``: the topic id Kafka writes into the metadata partition's ``partition.metadata``.
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def snapshot_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


class SegmentedLog:
    """Batches appended to the active segment, rolled as Kafka's ``LocalLog`` rolls: before a batch
    that would take the segment past ``segment_bytes``, or once ``segment_ms`` has passed since the
    segment's first batch. Files are written through a buffer, never held whole."""

    def __init__(self, directory: Path, segment_bytes: int, segment_ms: int) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.segment_ms = segment_ms
        self.bases: list[int] = []
        self._file = None
        self._size = 0
        self._first_timestamp = 0

    def append(self, batch: bytes | bytearray, base_offset: int, timestamp: int) -> None:
        """Append one batch, or several back to back that ``limits`` said fit without a roll."""
        if self.rolls(len(batch), timestamp):
            self._roll(base_offset, timestamp)
        self._file.write(batch)
        self._size += len(batch)

    def rolls(self, size: int, timestamp: int) -> bool:
        """Whether a batch of ``size`` bytes stamped ``timestamp`` starts a new segment."""
        return self._file is None or bool(self._size) and (
            self._size + size > self.segment_bytes or timestamp - self._first_timestamp > self.segment_ms)

    def limits(self, size: int, timestamp: int) -> tuple[int, int]:
        """(bytes, latest timestamp) the segment that takes this batch accepts before it rolls."""
        if self.rolls(size, timestamp):
            return self.segment_bytes, timestamp + self.segment_ms
        return self.segment_bytes - self._size, self._first_timestamp + self.segment_ms

    def position(self) -> tuple[int | None, int]:
        """(active segment's base offset, its size): where the next batch lands if it does not roll."""
        return (self.bases[-1] if self.bases else None), self._size

    def _roll(self, base_offset: int, timestamp: int) -> None:
        self.close()
        self._file = open(self.directory / segment_name(base_offset), "wb", buffering=1 << 20)  # noqa: SIM115
        self.bases.append(base_offset)
        self._size = 0
        self._first_timestamp = timestamp

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass(frozen=True, slots=True)
class Cut:
    """Where a node's copy leaves the committed log: at ``offset``, which the primary copy holds at
    ``position`` of segment ``segment_base``; the node's own ``tail`` bytes follow there instead."""

    offset: int
    segment_base: int
    position: int
    tail: bytes


def copy_metadata_dir(src: Path, dst: Path, cut: Cut | None = None) -> None:
    """Another node's replica of the metadata log: the same batches byte for byte, and the same
    snapshots; with a ``cut``, only what lies before it, then the node's uncommitted tail."""
    dst.mkdir(parents=True, exist_ok=True)
    for path in sorted(src.iterdir()):
        if path.suffix == ".checkpoint":
            if cut is None or int(path.name[:20]) <= cut.offset:
                shutil.copyfile(path, dst / path.name)
        elif path.suffix == ".log":
            base = int(path.stem)
            if cut is None or base < cut.segment_base:
                shutil.copyfile(path, dst / path.name)
            elif base == cut.segment_base:
                with open(path, "rb") as f, open(dst / path.name, "wb") as out:
                    out.write(f.read(cut.position))
                    out.write(cut.tail)
    if cut is not None and not (dst / segment_name(cut.segment_base)).exists():
        (dst / segment_name(cut.segment_base)).write_bytes(cut.tail)


def java_date(ms: int) -> str:
    """``java.util.Date.toString()`` in UTC, as ``Properties.store`` dates its files."""
    t = datetime.fromtimestamp(ms / 1000, UTC)
    return f"{_DAYS[t.weekday()]} {_MONTHS[t.month - 1]} {t.day:02d} {t:%H:%M:%S} UTC {t.year}"


def write_meta_properties(log_dir: Path, node_id: int, cluster_id: str, directory_id: str | None,
                          formatted_ms: int) -> None:
    """``kafka-storage format``'s file: version 1 (KRaft), and a directory id from 3.7 on."""
    lines = ["#", f"#{java_date(formatted_ms)}", f"node.id={node_id}"]
    if directory_id is not None:
        lines.append(f"directory.id={directory_id}")
    lines += ["version=1", f"cluster.id={cluster_id}"]
    (log_dir / "meta.properties").write_text("\n".join(lines) + "\n")


def write_quorum_state(metadata_dir: Path, leader_id: int, epoch: int, voters: list[int], kraft_version: int) -> None:
    """What ``FileQuorumStateStore`` leaves once a leader is known: data_version 0 lists the
    static voters, data_version 1 (kraft.version 1) leaves them to the log."""
    if kraft_version:
        state = {"leaderId": leader_id, "leaderEpoch": epoch, "votedId": -1,
                 "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA", "data_version": 1}
    else:
        state = {"clusterId": "", "leaderId": leader_id, "leaderEpoch": epoch, "votedId": -1, "appliedOffset": 0,
                 "currentVoters": [{"voterId": v} for v in voters], "data_version": 0}
    (metadata_dir / "quorum-state").write_text(json.dumps(state, separators=(",", ":")))


def write_leader_epoch_checkpoint(metadata_dir: Path, entries: list[tuple[int, int]]) -> None:
    """Version 0, the entry count, then ``epoch startOffset`` per epoch that has records."""
    lines = ["0", str(len(entries)), *(f"{epoch} {offset}" for epoch, offset in entries)]
    (metadata_dir / "leader-epoch-checkpoint").write_text("\n".join(lines) + "\n")


def write_partition_metadata(metadata_dir: Path) -> None:
    (metadata_dir / "partition.metadata").write_text(f"version: 0\ntopic_id: {METADATA_TOPIC_ID}")
