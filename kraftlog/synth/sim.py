"""The simulated clock: scenarios in time order, a NoOp every 500 ms in between, snapshots when
Kafka's byte or time trigger fires, metadata.version upgrades, and the diverging node's tail."""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from pathlib import Path

from kraftlog.synth import ids, records, versions
from kraftlog.synth.controller import ActiveController
from kraftlog.synth.events import SECOND, Scenarios
from kraftlog.synth.image import Image
from kraftlog.synth.layout import Cut, SegmentedLog, snapshot_name
from kraftlog.synth.spec import ClusterSpec
from kraftlog.synth.truth import Truth
from kraftlog.synth.writer import LogWriter, write_snapshot

NOOP_INTERVAL_MS = 500  # metadata.max.idle.interval.ms
NOOP_BATCH_BYTES = 72


class Simulation:
    """One cluster's run, written into ``metadata_dir`` (the primary node's copy)."""

    def __init__(self, spec: ClusterSpec, metadata_dir: Path, truth: Truth) -> None:
        self.spec = spec
        self.metadata_dir = metadata_dir
        self.rng = random.Random(spec.seed)
        self.cluster_id = ids.uuid_text(self.rng)
        self.node_dirs = {n: ids.uuid_text(self.rng) for n in spec.node_ids}
        self.log = SegmentedLog(metadata_dir, spec.segment_bytes, spec.segment_ms)
        self.writer = LogWriter(self.log)
        self.image = Image()
        self.truth = truth
        self.ctl = ActiveController(self.image, self.writer, truth, self.rng, spec.controller_ids, spec.kraft_version,
                                    spec.max_records_per_batch, self.node_dirs, spec.metadata_versions[0],
                                    max(spec.metadata_versions))
        self.scenarios = Scenarios(self)
        self.end_ms = spec.start_ms + spec.duration_ms
        self.jitter = bytes(self.rng.randrange(0, 20) for _ in range(61))
        self._queue: list[tuple[int, int, Callable[[int], object]]] = []
        self._seq = 0
        self.available_ms = spec.start_ms
        self.noop_next = spec.start_ms
        self.snapshot_offset = 0
        self.snapshot_bytes = 0
        self.snapshot_ms = spec.start_ms
        self.cut: Cut | None = None
        self.tail_epoch = -1
        self.full = False

    def schedule(self, t: int, fn: Callable[[int], object]) -> None:
        if t < self.end_ms:
            heapq.heappush(self._queue, (t, self._seq, fn))
            self._seq += 1

    def pause_until(self, t: int) -> None:
        """No leader until ``t``: nothing is written, and NoOps resume half an interval after."""
        self.available_ms = max(self.available_ms, t)
        self.noop_next = max(self.noop_next, t + NOOP_INTERVAL_MS // 2)

    def run(self) -> None:
        spec, rng = self.spec, self.rng
        first = spec.start_ms + rng.randrange(1000, 3000)
        self.pause_until(first)
        self.scenarios.start(first)
        path = spec.metadata_versions
        for i, level in enumerate(path[1:], 1):
            self.schedule(spec.start_ms + spec.duration_ms * i // len(path), lambda t, level=level: self._upgrade(t, level))
        self.schedule(first + self._gap(), self._random_event)
        if spec.diverge:
            self.schedule(spec.start_ms + spec.duration_ms * 4 // 5, self._diverge)
        while self._queue and not self.full:
            t, _, fn = heapq.heappop(self._queue)
            if t < self.available_ms:
                self.schedule(self.available_ms + rng.randrange(0, 500), fn)
                continue
            self._noops_until(t)
            if self.full:
                break
            fn(t)
            self._maybe_snapshot()
        if not self.full:
            self._noops_until(self.end_ms)
        self.log.close()

    def _gap(self) -> int:
        mean = int(3_600_000 / self.spec.events_per_hour)
        return self.rng.randrange(max(1, mean // 5), 2 * mean)

    def _random_event(self, t: int) -> None:
        self.scenarios.random_event(t)
        self.schedule(t + self._gap(), self._random_event)

    def _upgrade(self, t: int, level: int) -> None:
        before = self.image.mv
        self.ctl.upgrade(t, level)
        if before < versions.CONTROLLER_REGISTRATION <= level:
            self.scenarios.register_controllers(t)
        if before < versions.DIRECTORIES <= level:
            self.scenarios.report_log_dirs(t)

    # --- NoOps and snapshots ------------------------------------------------------------------

    def _noops_until(self, t_end: int) -> None:
        """Every NoOp due before ``t_end``, in runs cut where a snapshot or the size cap falls due."""
        if self.image.mv < versions.NOOP:
            self.noop_next = max(self.noop_next, t_end)
            return
        spec, w = self.spec, self.writer
        while self.noop_next < t_end and not self.full:
            count = -(-(t_end - self.noop_next) // NOOP_INTERVAL_MS)
            to_bytes = spec.snapshot_bytes - (w.bytes - self.snapshot_bytes)
            count = min(count, max(1, -(-to_bytes // NOOP_BATCH_BYTES)))
            due = self.snapshot_ms + spec.snapshot_interval_ms
            if due > self.noop_next:
                count = min(count, max(1, (due - self.noop_next) // NOOP_INTERVAL_MS + 1))
            if spec.max_bytes is not None:
                count = min(count, max(1, -(-(spec.max_bytes - w.bytes) // NOOP_BATCH_BYTES)))
            w.noops(self.ctl.epoch, self.noop_next, count, NOOP_INTERVAL_MS, self.jitter)
            self.noop_next += count * NOOP_INTERVAL_MS
            self._maybe_snapshot()

    def _maybe_snapshot(self) -> None:
        """``SnapshotGenerator``: after enough new bytes or enough time with new records, never
        inside a metadata transaction; snapshot ids are batch-aligned."""
        w, spec = self.writer, self.spec
        if spec.max_bytes is not None and w.bytes >= spec.max_bytes:
            self.full = True
        if self.ctl.transaction is not None or w.next_offset == self.snapshot_offset:
            return
        if (w.bytes - self.snapshot_bytes >= spec.snapshot_bytes
                or w.last_timestamp - self.snapshot_ms >= spec.snapshot_interval_ms):
            end, epoch, last = w.next_offset, w.last_epoch, w.last_timestamp
            raft = self.ctl.raft_records() if spec.kraft_version else []
            count = write_snapshot(self.metadata_dir / snapshot_name(end, epoch), self.image.snapshot_records(),
                                   epoch, last, last + self.rng.randrange(5, 300), raft)
            self.truth.snapshot(end, epoch, last, count)
            self.snapshot_offset, self.snapshot_bytes, self.snapshot_ms = end, w.bytes, last

    # --- the diverging node ---------------------------------------------------------------------

    def _diverge(self, t: int) -> None:
        """The diverging node leads an epoch, appends a tail no other voter receives, and dies;
        the others elect a leader whose epoch overwrites that tail's offsets."""
        node, scenarios = self.spec.diverging_node, self.scenarios
        if self.ctl.leader != node or node in scenarios.down or not self.image.topics:
            if node not in scenarios.down and self.ctl.leader != node:
                scenarios.controller_failover(t, leader=node, restart=False)
            self.schedule(t + self.rng.randrange(30, 90) * SECOND, self._diverge)
            return
        base, position = self.log.position()
        offset = self.writer.next_offset
        epoch = self.ctl.epoch
        topic = sorted(self.image.topics.values(), key=lambda x: x.name)[0]
        change = records.config(2, topic.name, "retention.ms", str(self.rng.randrange(1, 10**9)))
        with self.writer.uncommitted() as tail:
            self.writer.noops(epoch, t, self.rng.randrange(2, 5), NOOP_INTERVAL_MS, self.jitter)
            change_offset = self.writer.next_offset
            self.writer.data([change], epoch, t + 2 * NOOP_INTERVAL_MS + 100)
            self.writer.noops(epoch, t + 3 * NOOP_INTERVAL_MS, self.rng.randrange(1, 4), NOOP_INTERVAL_MS, self.jitter)
            last = self.writer.next_offset - 1
        if self.log.rolls(len(tail[0]), t):
            base, position = offset, 0
        self.cut = Cut(offset, base, position, b"".join(tail))
        self.tail_epoch = epoch
        self.truth.uncommitted({"node": node, "epoch": epoch, "fromOffset": offset, "toOffset": last,
                                "records": [{"offset": change_offset, "type": change[0], "data": change[2]}]})
        scenarios.dead.add(node)
        scenarios.down.add(node)
        if self.spec.combined:
            scenarios.crash(t, node, restart=False)
        scenarios.controller_failover(t + 3 * NOOP_INTERVAL_MS, restart=False)
