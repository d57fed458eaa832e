"""Finalized feature levels (``FeaturesImage``): metadata.version, other features, ZK migration state.

Rules from Kafka 4.2 (apache/kafka 4.2.0-rc1, 6eef6636, ``metadata/src/main/java/org/apache/kafka/image/``):
no metadata.version record means none (``FeaturesImage.EMPTY``, line 40: ``Optional.empty()``, not
3.0-IV1 as before 4.0); a FeatureLevelRecord for kraft.version is skipped (``FeaturesDelta.java``
line 69, KAFKA-18979: kraft.version lives in KRaftVersionRecords); a metadata.version below the
lowest Kafka 4.x knows is refused (``FeaturesDelta.java`` line 63).
"""

from collections.abc import Callable

from kraftlog.state.problems import ReplayProblem

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"

#: ``MetadataVersion.MINIMUM_VERSION`` of Kafka 4.x: 3.3-IV3.
MINIMUM_METADATA_VERSION = 7
#: 4.0-IV0: from here Kafka's image ignores ZkMigrationStateRecords (``MetadataDelta.java`` line 252).
ZOOKEEPER_GONE = 22

#: MetadataVersion feature level -> name, as ``MetadataVersion.toString()`` prints it (reference §8).
METADATA_VERSION_NAMES = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3",
    8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1",
    14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4",
    20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3",
    26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0", 31: "4.4-IV0", 32: "4.4-IV1",
    33: "4.4-IV2",
}  # 28-33: apache/kafka@4425e970 server-common/.../MetadataVersion.java

#: ZkMigrationStateRecord values as 3.5+ numbers them (3.4 swapped 1 and 2).
ZK_MIGRATION_STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION"}


def metadata_version_name(level: int | None) -> str:
    """Kafka's name; a level above the table is shown as its number, said to be newer than kraftlog."""
    if level is None:
        return "none"
    name = METADATA_VERSION_NAMES.get(level)
    if name is not None:
        return name
    if level > max(METADATA_VERSION_NAMES):
        return f"{level} (newer than kraftlog knows)"
    return f"level {level}"


class Features:
    """Enabled feature name -> finalized level; a level of 0 turns a feature off, so it is dropped."""

    def __init__(self) -> None:
        self.levels: dict[str, int] = {}
        self.zk_migration_state = 0

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {
            "FEATURE_LEVEL_RECORD": self._feature_level,
            "ZK_MIGRATION_STATE_RECORD": self._zk_migration_state,
        }

    @property
    def metadata_version(self) -> int | None:
        """The finalized level; None before any metadata.version record (Kafka 4.x has none then)."""
        return self.levels.get(METADATA_VERSION)

    @property
    def zk_migration_state_name(self) -> str:
        return ZK_MIGRATION_STATES.get(self.zk_migration_state, str(self.zk_migration_state))

    def _feature_level(self, data: dict) -> None:
        """A level below 3.3-IV3 is applied (the log says so, and 3.x read it) but reported."""
        name, level = data["name"], data["featureLevel"]
        if name == KRAFT_VERSION:
            return
        if level == 0 and name != METADATA_VERSION:
            self.levels.pop(name, None)
        else:
            self.levels[name] = level
        if name == METADATA_VERSION and level < MINIMUM_METADATA_VERSION:
            raise ReplayProblem(f"metadata.version {metadata_version_name(level)} is below "
                                f"{metadata_version_name(MINIMUM_METADATA_VERSION)}: Kafka 4.x refuses this record "
                                f"(Unsupported metadata version); kraftlog applies it as Kafka 3.x did")

    def _zk_migration_state(self, data: dict) -> None:
        """A no-op from 4.0-IV0 on, as in Kafka 4.x; earlier levels keep the state 3.x kept."""
        level = self.metadata_version
        if level is None or level < ZOOKEEPER_GONE:
            self.zk_migration_state = data["zkMigrationState"]

    def to_json(self) -> dict:
        return dict(sorted(self.levels.items()))
