"""A small cluster's metadata log with known events, written by kraftlog's own encoder, for the
report tests; and checks that it replays as the report tests assume."""

import base64
import hashlib
from datetime import UTC, datetime
from pathlib import Path

from kraftlog.files.logdir import find_nodes
from kraftlog.schema import encode_control, encode_metadata
from kraftlog.state.rebuild import rebuild
from kraftlog.wire.batch import CONTROL_BIT, Record, encode_batch

T0 = 1709294400000  # 2024-03-01T12:00:00Z
SECOND = 1000


def uuid(name: str) -> str:
    """A stable 22-character uuid for a name."""
    return base64.urlsafe_b64encode(hashlib.md5(name.encode()).digest()).decode().rstrip("=")


def utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class LogWriter:
    """Appends one-batch-per-call to a segment, the way a controller writes, and remembers where."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.offset = 0
        self.epoch = 0
        self.known: dict[str, tuple[int, int]] = {}  # event name -> (offset, time)

    def _batch(self, ts: int, values: list[tuple[bytes | None, bytes]], attributes: int = 0) -> int:
        records = [Record(self.offset + i, ts, key, value, offset_delta=i) for i, (key, value) in enumerate(values)]
        self.data += encode_batch(records, base_offset=self.offset, base_timestamp=ts,
                                  partition_leader_epoch=self.epoch, attributes=attributes)
        first = self.offset
        self.offset += len(values)
        return first

    def records(self, ts: int, *records: tuple[str, int, dict], name: str | None = None) -> int:
        first = self._batch(ts, [(None, encode_metadata(t, v, d)) for t, v, d in records])
        if name:
            self.known[name] = (first, ts)
        return first

    def leader_change(self, ts: int, leader: int, voters: list[int]) -> None:
        self.epoch += 1
        key, value = encode_control("LEADER_CHANGE", {
            "version": 0, "leaderId": leader, "voters": [{"voterId": v} for v in voters],
            "grantingVoters": [{"voterId": v} for v in voters]})
        self.known[f"epoch {self.epoch}"] = (self._batch(ts, [(key, value)], CONTROL_BIT), ts)

    def noops_until(self, ts: int, every: int = 500) -> None:
        """NoOpRecords every ``every`` ms from after the last record up to ``ts``."""
        last = self.last_ts + every
        while last < ts:
            self._batch(last, [(None, encode_metadata("NO_OP_RECORD", 0, {}))])
            last += every
        self.last_ts = ts

    last_ts = T0


def broker(bid: int, epoch: int) -> tuple[str, int, dict]:
    return ("REGISTER_BROKER_RECORD", 1, {
        "brokerId": bid, "incarnationId": uuid(f"broker {bid}"), "brokerEpoch": epoch,
        "endPoints": [{"name": "PLAINTEXT", "host": f"b{bid}", "port": 9092, "securityProtocol": 0}],
        "features": [], "rack": f"rack-{bid % 2}", "fenced": True, "inControlledShutdown": False})


def partition(topic: str, pid: int, replicas: list[int]) -> tuple[str, int, dict]:
    return ("PARTITION_RECORD", 0, {
        "partitionId": pid, "topicId": uuid(topic), "replicas": replicas, "isr": replicas,
        "removingReplicas": [], "addingReplicas": [], "leader": replicas[0], "leaderEpoch": 0, "partitionEpoch": 0})


def change(topic: str, pid: int, **fields) -> tuple[str, int, dict]:
    return ("PARTITION_CHANGE_RECORD", 0, {"partitionId": pid, "topicId": uuid(topic), **fields})


def registration_change(bid: int, epoch: int, **fields) -> tuple[str, int, dict]:
    return ("BROKER_REGISTRATION_CHANGE_RECORD", 1, {"brokerId": bid, "brokerEpoch": epoch, **fields})


def config(resource_type: int, resource: str, key: str, value: str | None) -> tuple[str, int, dict]:
    return ("CONFIG_RECORD", 0, {"resourceType": resource_type, "resourceName": resource, "name": key, "value": value})


def write_events(w: LogWriter, start: int = T0) -> None:
    """Five minutes of a three-broker cluster; offsets and times of the named events go to ``w.known``."""
    at = {name: start + s * SECOND for name, s in [
        ("setup", 1), ("topics", 5), ("leader", 60), ("shrink", 90), ("fence", 120), ("config", 150),
        ("upgrade", 180), ("acl", 200), ("shutdown", 240), ("delete", 260), ("failover", 270), ("end", 300)]}
    w.last_ts = start
    w.leader_change(start, 1, [1, 2, 3])
    w.records(start, ("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 7}))
    w.noops_until(at["setup"])
    w.records(at["setup"], broker(1, 10), broker(2, 11), broker(3, 12))
    w.records(at["setup"] + 500, *(registration_change(b, 10 + b - 1, fenced=-1) for b in (1, 2, 3)))
    w.noops_until(at["topics"])
    w.records(at["topics"], ("TOPIC_RECORD", 0, {"name": "orders", "topicId": uuid("orders")}),
              config(2, "orders", "retention.ms", "86400000"),
              *(partition("orders", p, [1 + (p + i) % 3 for i in range(3)]) for p in range(3)), name="orders created")
    w.records(at["topics"] + 500, ("TOPIC_RECORD", 0, {"name": "payments", "topicId": uuid("payments")}),
              partition("payments", 0, [2, 3, 1]), name="payments created")
    w.noops_until(at["leader"])
    w.records(at["leader"], change("orders", 0, leader=2), name="orders-0 leader 1->2")
    w.noops_until(at["shrink"])
    w.records(at["shrink"], change("orders", 1, isr=[2, 3]), name="orders-1 isr shrink")
    w.noops_until(at["fence"])
    # the controller moves leadership off broker 3 first, then fences it (reference 6.2)
    w.records(at["fence"], change("orders", 2, leader=1, isr=[1, 2]), change("payments", 0, leader=1, isr=[2, 1]),
              name="orders-2 leader 3->1")
    w.records(at["fence"] + 100, registration_change(3, 12, fenced=1), name="broker 3 fenced")
    w.noops_until(at["config"])
    w.records(at["config"], config(4, "", "log.retention.ms", "3600000"), name="cluster config")
    w.records(at["config"] + 100, config(2, "orders", "sasl.jaas.config", "hunter2-secret"), name="secret config")
    w.noops_until(at["upgrade"])
    w.records(at["upgrade"], ("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 14}),
              name="metadata.version 14")
    w.noops_until(at["acl"])
    w.records(at["acl"], ("ACCESS_CONTROL_ENTRY_RECORD", 0, {
        "id": uuid("acl"), "resourceType": 2, "resourceName": "orders", "patternType": 3,
        "principal": "User:alice", "host": "*", "operation": 3, "permissionType": 3}), name="acl")
    w.noops_until(at["shutdown"])
    w.records(at["shutdown"], change("orders", 0, leader=1, isr=[1, 3]),
              change("payments", 0, isr=[1]), name="orders-0 leader 2->1")
    w.records(at["shutdown"] + 100, registration_change(2, 11, inControlledShutdown=1), name="broker 2 shutdown")
    w.noops_until(at["delete"])
    w.records(at["delete"], ("REMOVE_TOPIC_RECORD", 0, {"topicId": uuid("payments")}), name="payments deleted")
    w.noops_until(at["failover"])
    w.leader_change(at["failover"], 2, [1, 2, 3])
    w.noops_until(at["end"])


def write_cluster(root: Path, writer: LogWriter | None = None) -> LogWriter:
    """A node's log dir (``meta.properties`` + ``__cluster_metadata-0``) holding ``write_events``."""
    w = writer or LogWriter()
    if writer is None:
        write_events(w)
    meta = root / "__cluster_metadata-0"
    meta.mkdir(parents=True, exist_ok=True)
    (root / "meta.properties").write_text("version=1\ncluster.id=ReportTestClusterAAAAA\nnode.id=1\n")
    (meta / "00000000000000000000.log").write_bytes(w.data)
    return w


def test_the_cluster_replays_without_problems(tmp_path):
    w = write_cluster(tmp_path)
    built = rebuild(find_nodes(tmp_path)[0], offset=w.offset - 1)
    image = built.image
    assert not built.problems.messages and not image.problems
    assert set(image.topics.id_by_name) == {"orders"}
    assert image.topics.by_name("orders")["partitions"][0]["leader"] == 1
    assert image.brokers.registrations[3]["fenced"] and image.brokers.registrations[2]["inControlledShutdown"]
    assert image.features.metadata_version == 14 and image.raft.leader_id == 2
