"""The KRaft quorum at a point: what ``kafka-metadata-quorum describe --status`` would have shown,
from the log on disk, and the elections (leader epochs) around the point.

Every leader epoch starts with a LeaderChange control batch (KafkaRaftClient.onBecomeLeader
appends it first), so epoch starts are found from batch headers alone and only those batches'
records are decoded. An epoch whose first batch is no LeaderChange (it was cut away, or the log
starts inside it) has leader None: unknown, not guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraftlog.files.logdir import NodeDir
from kraftlog.files.reader import Limits, Region, read_log_file
from kraftlog.files.records import ReadProblems
from kraftlog.schema import decode_control
from kraftlog.state.brokers import broker_state
from kraftlog.state.image import ClusterImage
from kraftlog.wire.batch import decode_batch


@dataclass(frozen=True, slots=True)
class Election:
    """A leader epoch as the log shows it: where it starts, when, and whom it elected."""

    epoch: int
    start_offset: int
    timestamp: int
    leader_id: int | None
    voters: list[int] | None  # LeaderChange's voters (kraft.version 0 names them there)

    def to_json(self) -> dict:
        return {"epoch": self.epoch, "startOffset": self.start_offset, "timestamp": self.timestamp,
                "leaderId": self.leader_id, "voters": self.voters}


def _leader_change(path, position: int, size: int, limits: Limits) -> dict | None:
    """The LeaderChange record of the control batch at ``position``, or None if it holds none."""
    with open(path, "rb") as f:
        f.seek(position)
        raw = f.read(size)
    batch = decode_batch(raw, position, max_decompressed=limits.max_decompressed)
    for record in batch.records:
        control = decode_control(record.key, record.value)
        if control.type == "LEADER_CHANGE" and control.error is None:
            return control.data
    return None


def elections(node: NodeDir, limits: Limits = Limits(), problems: ReadProblems | None = None) -> list[Election]:
    """Each epoch start in the node's log segments, in log order (batch headers, one pass)."""
    out: list[Election] = []
    epoch = None
    for segment in node.segments:
        for item in read_log_file(segment.path, limits, records=False):
            if isinstance(item, Region):
                if problems is not None:
                    problems.add(segment, f"{item.length} bytes at {item.position} skipped ({item.reason}): "
                                 "an election there would be missed")
                continue
            if item.partition_leader_epoch == epoch:
                continue
            epoch = item.partition_leader_epoch
            change = _leader_change(segment.path, item.position, item.size, limits) if item.is_control else None
            voters = None if change is None or change.get("voters") is None else \
                sorted(v["voterId"] for v in change["voters"])
            out.append(Election(epoch, item.base_offset, item.base_timestamp,
                                None if change is None else change["leaderId"], voters))
    return out


def quorum_status(image: ClusterImage, history: list[Election], cluster_id: str | None) -> dict:
    """Leader, epoch, voters and registrations at the image's point.

    The leader is the one elected for the epoch of the image's last record (``history`` holds
    that epoch's start when the log does). Voters come from KRaftVoters records with
    kraft.version 1, else from that election's LeaderChange."""
    offset, epoch = image.provenance.offset, image.provenance.epoch
    current = next((e for e in reversed(history) if e.start_offset <= offset and e.epoch == epoch), None)
    if image.raft.kraft_version >= 1:
        voters = [{"id": v["voterId"], "directoryId": v.get("voterDirectoryId"), "endpoints": v.get("endpoints", [])}
                  for v in image.raft.voters]
    else:
        voters = [{"id": v} for v in (current.voters or [])] if current is not None else []
    brokers = image.brokers.registrations
    return {
        "clusterId": cluster_id,
        "leaderId": None if current is None else current.leader_id,
        "leaderEpoch": epoch,
        "epochStartOffset": None if current is None else current.start_offset,
        "offset": offset,  # the point: the last record applied (the high watermark is not on disk)
        "timestamp": image.provenance.timestamp,
        "kraftVersion": image.raft.kraft_version,
        "voters": voters,
        "controllers": [
            {"id": c["controllerId"], "incarnationId": c["incarnationId"],
             "voter": any(v["id"] == c["controllerId"] for v in voters)}
            for c in image.controllers.to_json().values()
        ],
        "brokers": [
            {"id": b["brokerId"], "epoch": b["brokerEpoch"], "incarnationId": b["incarnationId"],
             "state": broker_state(b), "fenced": b["fenced"], "inControlledShutdown": b["inControlledShutdown"]}
            for b in (brokers[i] for i in sorted(brokers))
        ],
    }


def around(history: list[Election], offset: int, count: int = 3) -> tuple[list[Election], list[Election]]:
    """The last ``count`` elections at or before ``offset`` and the first ``count`` after it."""
    before = [e for e in history if e.start_offset <= offset]
    after = [e for e in history if e.start_offset > offset]
    return before[-count:], after[:count]
