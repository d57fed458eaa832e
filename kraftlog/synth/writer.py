"""Records to batches, the way the Raft leader and the snapshot writer lay them out (reference
sections 1.5 and 1.7): uncompressed, CreateTime, null keys, zero timestamp deltas, producer fields
-1, the leader epoch in every batch, at most 8 MiB a batch. Values come from ``kraftlog.schema``,
batches from ``kraftlog.wire``; a NoOp batch is a template where only offset, time and CRC change.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kraftlog.schema import NOOP_VALUE, encode_control, encode_metadata
from kraftlog.synth.layout import SegmentedLog
from kraftlog.wire.batch import CONTROL_BIT, CRC_START, Record, encode_batch
from kraftlog.wire.crc import crc32c

#: ``KafkaRaftClient.MAX_BATCH_SIZE_BYTES``.
MAX_BATCH_BYTES = 8 * 1024 * 1024

MetadataRec = tuple[str, int, dict]  # (type, version, data in Kafka's JSON names)
ControlRec = tuple[str, dict]  # (control type, data)

_OFFSET = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
_TIMES = struct.Struct(">qq")  # baseTimestamp, maxTimestamp at byte 27
_CRC = struct.Struct(">I")
_NOOPS_PER_WRITE = 16384  # about 1 MiB of NoOp batches per write: bounded memory


def data_batch(values: list[bytes], base_offset: int, timestamp: int, epoch: int) -> bytes:
    records = [Record(base_offset + i, timestamp, None, v, offset_delta=i) for i, v in enumerate(values)]
    batch = encode_batch(records, base_offset=base_offset, base_timestamp=timestamp, partition_leader_epoch=epoch)
    if len(batch) > MAX_BATCH_BYTES:
        raise ValueError(f"a batch of {len(batch)} bytes is over Kafka's 8 MiB metadata batch limit")
    return batch


def control_batch(records: list[ControlRec], base_offset: int, timestamp: int, epoch: int) -> bytes:
    encoded = [encode_control(kind, data) for kind, data in records]
    rs = [Record(base_offset + i, timestamp, k, v, offset_delta=i) for i, (k, v) in enumerate(encoded)]
    return encode_batch(rs, base_offset=base_offset, base_timestamp=timestamp, partition_leader_epoch=epoch,
                        attributes=CONTROL_BIT)


def encode(records: Iterable[MetadataRec]) -> list[bytes]:
    return [encode_metadata(kind, version, data) for kind, version, data in records]


class LogWriter:
    """The active controller's view of its log: the next offset, the epoch each batch is stamped
    with, and where each epoch began (``leader-epoch-checkpoint``)."""

    def __init__(self, log: SegmentedLog) -> None:
        self.log = log
        self.next_offset = 0
        self.last_timestamp = 0
        self.last_epoch = 0
        self.epochs: list[tuple[int, int]] = []
        self.bytes = 0  # committed bytes written, the snapshot trigger's measure
        self._noop = bytearray(data_batch([NOOP_VALUE], 0, 0, 0))
        self._tail: list[bytes] | None = None

    def data(self, records: list[MetadataRec], epoch: int, timestamp: int) -> int:
        """One batch of metadata records; returns its base offset."""
        base, ts = self._start(epoch, timestamp)
        self._write(data_batch(encode(records), base, ts, epoch), base, ts, len(records))
        return base

    def control(self, records: list[ControlRec], epoch: int, timestamp: int) -> int:
        base, ts = self._start(epoch, timestamp)
        self._write(control_batch(records, base, ts, epoch), base, ts, len(records))
        return base

    def noops(self, epoch: int, first_ms: int, count: int, interval_ms: int, jitter: bytes) -> None:
        """``count`` one-record NoOp batches, ``interval_ms`` apart and each delayed by
        ``jitter[offset % len(jitter)]`` ms: copies of one template with offset, timestamps and CRC
        rewritten, handed to the segment in runs that need no roll."""
        self._start(epoch, first_ms)
        tpl = self._noop
        _EPOCH.pack_into(tpl, 12, epoch)
        size = len(tpl)
        span = len(jitter)
        done = 0
        while done < count:
            base = self.next_offset
            last = self.last_timestamp
            first = max(first_ms + done * interval_ms + jitter[base % span], last)
            n = count - done
            room, deadline = (1 << 62, 1 << 62) if self._tail is not None else self.log.limits(size, first)
            n = min(n, max(1, room // size), _NOOPS_PER_WRITE)
            chunk = bytearray(size * n)
            for i in range(n):
                ts = first_ms + (done + i) * interval_ms + jitter[(base + i) % span]
                if ts < last:
                    ts = last
                if ts > deadline and i:
                    n = i
                    del chunk[i * size:]
                    break
                last = ts
                _OFFSET.pack_into(tpl, 0, base + i)
                _TIMES.pack_into(tpl, 27, ts, ts)
                _CRC.pack_into(tpl, 17, crc32c(tpl[CRC_START:]))
                chunk[i * size:(i + 1) * size] = tpl
            self._write(chunk, base, first, n, last)
            done += n

    def _start(self, epoch: int, timestamp: int) -> tuple[int, int]:
        if epoch < self.last_epoch:
            raise ValueError(f"epoch {epoch} after epoch {self.last_epoch}: Raft epochs never go back")
        if not self.epochs or self.epochs[-1][0] != epoch:
            self.epochs.append((epoch, self.next_offset))
        self.last_epoch = epoch
        return self.next_offset, max(timestamp, self.last_timestamp)

    def _write(self, batch: bytes | bytearray, base: int, ts: int, count: int, last_ts: int | None = None) -> None:
        if self._tail is not None:
            self._tail.append(bytes(batch))
        else:
            self.log.append(batch, base, ts)
            self.bytes += len(batch)
        self.next_offset = base + count
        self.last_timestamp = ts if last_ts is None else last_ts

    @contextmanager
    def uncommitted(self) -> Iterator[list[bytes]]:
        """Appends that never reach the other nodes: their bytes are collected, not written, and
        the log goes on afterwards from where they started, as the next leader's log does."""
        saved = (self.next_offset, self.last_timestamp, self.last_epoch, list(self.epochs))
        self._tail = []
        try:
            yield self._tail
        finally:
            self._tail = None
            self.next_offset, self.last_timestamp, self.last_epoch, self.epochs = saved


def write_snapshot(path: Path, records: Iterable[MetadataRec], epoch: int, last_contained_ms: int,
                   written_ms: int, raft_records: list[ControlRec] = ()) -> int:
    """A ``.checkpoint`` as ``RecordsSnapshotWriter`` writes it: a control batch with the header
    (then kraft.version and voters when known), the image in batches of at most 8 MiB, and a
    control batch with the footer; offsets count from 0 in the file. Returns the record count."""
    header = [("SNAPSHOT_HEADER", {"version": 0, "lastContainedLogTimestamp": last_contained_ms}), *raft_records]
    offset = 0
    with open(path, "wb", buffering=1 << 20) as f:
        f.write(control_batch(header, offset, written_ms, epoch))
        offset += len(header)
        pending: list[bytes] = []
        size = 0
        for value in encode(records):
            if size + len(value) + 64 > MAX_BATCH_BYTES - 61:
                f.write(data_batch(pending, offset, written_ms, epoch))
                offset += len(pending)
                pending, size = [], 0
            pending.append(value)
            size += len(value) + 8
        if pending:
            f.write(data_batch(pending, offset, written_ms, epoch))
            offset += len(pending)
        f.write(control_batch([("SNAPSHOT_FOOTER", {"version": 0})], offset, written_ms, epoch))
    return offset + 1
