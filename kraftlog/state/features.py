"""Finalized feature levels (``FeaturesImage``): metadata.version, other features, ZK migration state."""

from collections.abc import Callable

METADATA_VERSION = "metadata.version"

#: Kafka's assumption when the log carries no metadata.version record (``FeaturesImage.EMPTY``).
DEFAULT_METADATA_VERSION = 1

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


def metadata_version_name(level: int) -> str:
    """Kafka's name; a level above the table is shown as its number, said to be newer than kraftlog."""
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
    def metadata_version(self) -> int:
        return self.levels.get(METADATA_VERSION, DEFAULT_METADATA_VERSION)

    @property
    def zk_migration_state_name(self) -> str:
        return ZK_MIGRATION_STATES.get(self.zk_migration_state, str(self.zk_migration_state))

    def _feature_level(self, data: dict) -> None:
        name, level = data["name"], data["featureLevel"]
        if level == 0 and name != METADATA_VERSION:
            self.levels.pop(name, None)
        else:
            self.levels[name] = level

    def _zk_migration_state(self, data: dict) -> None:
        self.zk_migration_state = data["zkMigrationState"]

    def to_json(self) -> dict:
        return dict(sorted(self.levels.items()))
