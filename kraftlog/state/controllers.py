"""Controller registrations (``ClusterImage.controllers``, KIP-919)."""

from collections.abc import Callable

from kraftlog.state.brokers import by_name
from kraftlog.state.ids import sorted_map


class Controllers:
    """Controller id -> the latest RegisterControllerRecord, which replaces the previous one."""

    def __init__(self) -> None:
        self.registrations: dict[int, dict] = {}

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {"REGISTER_CONTROLLER_RECORD": self._register, "UNREGISTER_CONTROLLER_RECORD": self._unregister}

    def _register(self, data: dict) -> None:
        self.registrations[data["controllerId"]] = {
            "controllerId": data["controllerId"],
            "incarnationId": data["incarnationId"],
            "zkMigrationReady": data.get("zkMigrationReady", False),
            "endPoints": [dict(e) for e in data.get("endPoints", [])],
            "features": [dict(f) for f in data.get("features", [])],
        }

    def _unregister(self, data: dict) -> None:
        """The controller leaves the image; as for brokers, the image does not check that it was there
        (``ClusterDelta.replay(UnregisterControllerRecord)`` puts an empty registration, KIP-1312,
        apache/kafka 4.4; the controller side refuses an unknown id before writing the record)."""
        self.registrations.pop(data["controllerId"], None)

    def to_json(self) -> dict:
        return sorted_map(
            self.registrations,
            lambda r: {**r, "endPoints": by_name(r["endPoints"]), "features": by_name(r["features"])},
        )
