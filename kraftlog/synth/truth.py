"""The generator's ground truth: what the simulation meant the log to say, offset by offset.

Intervals are closed as the simulation moves on and spooled to disk, so a long run costs memory
for the open ones only; ``finish`` splices the spools into one JSON document, one item a line.
A state "from F to T" holds after applying offset F through offset T (``to`` null: to the end).
Records of a metadata transaction take effect at its EndTransactionRecord.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kraftlog.synth.image import Broker, Partition, Topic

SECTIONS = ("epochs", "features", "topics", "brokers", "transactions", "snapshots", "uncommitted", "partitions")
#: A partition interval is a JSON array in this column order: there can be millions of them.
PARTITION_COLUMNS = ("topicId", "partition", "from", "to", "leader", "leaderEpoch", "partitionEpoch", "isr",
                     "replicas", "addingReplicas", "removingReplicas", "leaderRecoveryState")


def _line(item: dict) -> str:
    return json.dumps(item, separators=(",", ":"))


def _ints(values: list[int]) -> str:
    return "[" + ",".join(map(str, values)) + "]"


class Truth:
    def __init__(self, spool_dir: Path) -> None:
        self._dir = spool_dir
        spool_dir.mkdir(parents=True, exist_ok=True)
        self._spools = {name: open(spool_dir / f"{name}.jsonl", "w") for name in SECTIONS}  # noqa: SIM115
        self._partitions: dict[tuple[str, int], tuple[int, str]] = {}
        self._topics: dict[str, tuple[int, str]] = {}
        self._brokers: dict[int, tuple[int, dict]] = {}

    def _emit(self, section: str, item: dict) -> None:
        self._spools[section].write(_line(item) + "\n")

    def _close(self, opened: dict, key, offset: int, render) -> None:
        entry = opened.pop(key, None)
        if entry is not None and entry[0] < offset:
            render(key, entry[0], offset - 1, entry[1])

    def partition(self, topic: Topic, p: Partition, offset: int) -> None:
        key = (topic.id, p.id)
        self._close(self._partitions, key, offset, self._partition_line)
        self._partitions[key] = (offset, f"{p.leader},{p.leader_epoch},{p.partition_epoch},{_ints(p.isr)},"
                                         f"{_ints(p.replicas)},{_ints(p.adding)},{_ints(p.removing)},{p.recovery}")

    def _partition_line(self, key: tuple[str, int], start: int, end: int | None, state: str) -> None:
        self._spools["partitions"].write(f'["{key[0]}",{key[1]},{start},{"null" if end is None else end},{state}]\n')

    def topic_created(self, topic: Topic, offset: int) -> None:
        self._topics[topic.id] = (offset, topic.name)

    def topic_removed(self, topic: Topic, offset: int) -> None:
        for pid in topic.partitions:
            self._close(self._partitions, (topic.id, pid), offset, self._partition_line)
        self._close(self._topics, topic.id, offset, self._topic_line)

    def _topic_line(self, topic_id: str, start: int, end: int | None, name: str) -> None:
        self._emit("topics", {"name": name, "topicId": topic_id, "from": start, "to": end})

    def broker(self, b: Broker, offset: int) -> None:
        self._close(self._brokers, b.id, offset, self._broker_line)
        self._brokers[b.id] = (offset, {"brokerEpoch": b.epoch, "incarnationId": b.incarnation,
                                        "fenced": b.fenced, "inControlledShutdown": b.in_controlled_shutdown})

    def broker_removed(self, broker_id: int, offset: int) -> None:
        self._close(self._brokers, broker_id, offset, self._broker_line)

    def _broker_line(self, broker_id: int, start: int, end: int | None, state: dict) -> None:
        self._emit("brokers", {"brokerId": broker_id, "from": start, "to": end, **state})

    def feature(self, name: str, level: int, offset: int) -> None:
        self._emit("features", {"offset": offset, "name": name, "level": level})

    def epoch(self, epoch: int, leader: int, offset: int) -> None:
        self._emit("epochs", {"epoch": epoch, "leaderId": leader, "startOffset": offset})

    def transaction(self, begin: int, end: int, outcome: str, name: str | None = None) -> None:
        self._emit("transactions", {"begin": begin, "end": end, "outcome": outcome, "name": name})

    def snapshot(self, end_offset: int, epoch: int, last_contained_ms: int, records: int) -> None:
        self._emit("snapshots", {"endOffset": end_offset, "epoch": epoch,
                                 "lastContainedLogTimestamp": last_contained_ms, "records": records})

    def uncommitted(self, item: dict) -> None:
        self._emit("uncommitted", item)

    def finish(self, path: Path, cluster: dict, final: dict) -> None:
        """Close what is still open (it holds to the end of the log) and write the document."""
        for key, (start, state) in sorted(self._partitions.items()):
            self._partition_line(key, start, None, state)
        for key, (start, name) in sorted(self._topics.items()):
            self._topic_line(key, start, None, name)
        for key, (start, state) in sorted(self._brokers.items()):
            self._broker_line(key, start, None, state)
        for f in self._spools.values():
            f.close()
        with open(path, "w") as out:
            out.write('{\n"cluster": ' + json.dumps(cluster) + ',\n"final": ' + json.dumps(final)
                      + ',\n"partitionColumns": ' + json.dumps(PARTITION_COLUMNS))
            for name in SECTIONS:
                out.write(f',\n"{name}": [')
                with open(self._dir / f"{name}.jsonl") as f:
                    for i, line in enumerate(f):
                        out.write(("\n" if i == 0 else ",\n") + line.rstrip("\n"))
                out.write("\n]")
            out.write("\n}\n")
        shutil.rmtree(self._dir)
