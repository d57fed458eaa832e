"""MetadataVersion levels and what each makes the controller write (reference section 8).

The generator writes, at every point of its simulated log, the record versions and record types
the finalized ``metadata.version`` of that moment allows: this table is the only place that knows.
"""

from __future__ import annotations

#: Feature level -> MetadataVersion name (levels 26-27 are from a fork's copy, reference §11).
NAMES = {
    4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1",
    11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1",
    17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0",
    23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1",
}
#: A release's default level for new clusters (its latest production level).
RELEASES = {"3.3": 7, "3.4": 8, "3.5": 11, "3.6": 14, "3.7": 19, "3.8": 20, "3.9": 21, "4.0": 25, "4.1": 27}
_BY_NAME = {name: level for level, name in NAMES.items()}

NOOP = 5  # 3.3-IV1: NoOpRecord every metadata.max.idle.interval.ms
REGISTRATION_CHANGE = 6  # 3.3-IV2: BrokerRegistrationChangeRecord replaces Fence/UnfenceBrokerRecord
CONTROLLED_SHUTDOWN = 7  # 3.3-IV3: InControlledShutdown
ZK_MIGRATION = 8  # 3.4-IV0: ZkMigrationStateRecord (written until ZooKeeper left in 4.0)
SCRAM = 11  # 3.5-IV2
NO_EPOCH_BUMP_ON_SHRINK = 12  # 3.6-IV0 (KAFKA-15021)
TRANSACTIONS = 13  # 3.6-IV1
DELEGATION_TOKENS = 14  # 3.6-IV2
CONTROLLER_REGISTRATION = 15  # 3.7-IV0; client-metrics configs came with the same release
DIRECTORIES = 17  # 3.7-IV2 (JBOD)
KRAFT_VERSION_1 = 21  # 3.9-IV0: dynamic quorums
ZOOKEEPER_GONE = 22  # 4.0: no ZkMigrationStateRecord; group configs; group.version
ELR_RECORDS = 23  # 4.0-IV1: Partition and PartitionChange v2
TRANSACTION_VERSION_2 = 24  # 4.0-IV2


def name(level: int) -> str:
    return NAMES.get(level, f"level {level}")


def parse_level(text: str) -> int:
    """``3.9``, ``3.3-IV1`` or a bare feature level."""
    t = text.strip()
    if t in RELEASES:
        return RELEASES[t]
    if t in _BY_NAME:
        return _BY_NAME[t]
    if t.isdigit() and int(t) in NAMES:
        return int(t)
    raise ValueError(f"unknown metadata.version {text!r}: use a release (3.3 .. 4.1), a name such as "
                     f"3.3-IV1, or a level {min(NAMES)}..{max(NAMES)}")


def parse_path(text: str) -> list[int]:
    """The levels a cluster goes through: ``3.9`` stays at one level, ``3.3..4.1`` is formatted at
    the first and upgraded through each release's default up to the last."""
    first, sep, last = text.partition("..")
    start = parse_level(first)
    if not sep:
        return [start]
    end = parse_level(last)
    if end < start:
        raise ValueError(f"metadata.version range {text!r} goes down; only upgrades are simulated")
    steps = sorted(level for level in RELEASES.values() if start < level < end)
    return [start, *steps, end] if end != start else [start]


def register_broker_version(mv: int) -> int:
    if mv < CONTROLLED_SHUTDOWN:
        return 0
    if mv < ZK_MIGRATION:
        return 1
    return 2 if mv < DIRECTORIES else 3


def partition_version(mv: int) -> int:
    """PartitionRecord and PartitionChangeRecord share their version."""
    if mv < DIRECTORIES:
        return 0
    return 1 if mv < ELR_RECORDS else 2


def writes_zk_migration_state(mv: int) -> bool:
    return ZK_MIGRATION <= mv < ZOOKEEPER_GONE


def finalized_features(mv: int) -> dict[str, int]:
    """Features other than metadata.version that a cluster at ``mv`` finalizes (4.0 bootstrap)."""
    out = {}
    if mv >= ZOOKEEPER_GONE:
        out["group.version"] = 1
    if mv >= TRANSACTION_VERSION_2:
        out["transaction.version"] = 2
    return out


def supported_features(software: int) -> list[dict]:
    """What a node running the release whose latest level is ``software`` advertises when it registers."""
    out = []
    if software >= ZOOKEEPER_GONE:
        out += [_range("group.version", 0, 1), _range("transaction.version", 0, 2),
                _range("eligible.leader.replicas.version", 0, 1)]
    if software >= KRAFT_VERSION_1:
        out.append(_range("kraft.version", 0, 1))
    out.append(_range("metadata.version", 7 if software >= ZOOKEEPER_GONE else 1, software))
    return out


def _range(feature: str, low: int, high: int) -> dict:
    return {"name": feature, "minSupportedVersion": low, "maxSupportedVersion": high}
