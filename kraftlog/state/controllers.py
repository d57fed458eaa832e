"""Controller registrations (``ClusterImage.controllers``, KIP-919)."""

from collections.abc import Callable

from kraftlog.state.brokers import by_name
from kraftlog.state.ids import sorted_map


class Controllers:
    """Controller id -> the latest RegisterControllerRecord, which replaces the previous one."""

    def __init__(self) -> None:
        self.registrations: dict[int, dict] = {}

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {"REGISTER_CONTROLLER_RECORD": self._register}

    def _register(self, data: dict) -> None:
        self.registrations[data["controllerId"]] = {
            "controllerId": data["controllerId"],
            "incarnationId": data["incarnationId"],
            "zkMigrationReady": data.get("zkMigrationReady", False),
            "endPoints": [dict(e) for e in data.get("endPoints", [])],
            "features": [dict(f) for f in data.get("features", [])],
        }

    def to_json(self) -> dict:
        return sorted_map(
            self.registrations,
            lambda r: {**r, "endPoints": by_name(r["endPoints"]), "features": by_name(r["features"])},
        )
