"""Broker registrations (``ClusterImage.brokers``), with Kafka's epoch checks on every change."""

from collections.abc import Callable

from kraftlog.state.ids import sorted_map, uuid_order
from kraftlog.state.problems import ReplayProblem

#: BrokerRegistrationChangeRecord.Fenced: -1 unfence, 0 no change, 1 fence.
_FENCING = {-1: False, 0: None, 1: True}
#: BrokerRegistrationChangeRecord.InControlledShutdown: 0 no change, 1 entered (there is no "left").
_CONTROLLED_SHUTDOWN = {0: None, 1: True}

_JSON_FIELDS = (
    "brokerId", "brokerEpoch", "incarnationId", "endPoints", "rack", "fenced",
    "inControlledShutdown", "features", "logDirs",
)


def by_name(items: list[dict]) -> list[dict]:
    """Listeners and supported features are maps in Kafka, so their record order means nothing."""
    return sorted(items, key=lambda item: item["name"])


class Brokers:
    """Broker id -> registration, kept in the RegisterBrokerRecord's JSON shape.

    ``endPoints`` stay in record order (the broker's advertised order); ``logDirs`` are kept
    sorted as Kafka keeps them."""

    def __init__(self) -> None:
        self.registrations: dict[int, dict] = {}

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {
            "REGISTER_BROKER_RECORD": self._register,
            "UNREGISTER_BROKER_RECORD": self._unregister,
            "FENCE_BROKER_RECORD": self._fence,
            "UNFENCE_BROKER_RECORD": self._unfence,
            "BROKER_REGISTRATION_CHANGE_RECORD": self._change,
        }

    def _register(self, data: dict) -> None:
        """A registration replaces the previous one whole, epoch and fencing included."""
        self.registrations[data["brokerId"]] = {
            "brokerId": data["brokerId"],
            "brokerEpoch": data["brokerEpoch"],
            "incarnationId": data["incarnationId"],
            "endPoints": [dict(e) for e in data.get("endPoints", [])],
            "rack": data.get("rack"),
            "fenced": data.get("fenced", True),
            "inControlledShutdown": data.get("inControlledShutdown", False),
            "features": [dict(f) for f in data.get("features", [])],
            "logDirs": sorted(data.get("logDirs") or [], key=uuid_order),
            "isMigratingZkBroker": data.get("isMigratingZkBroker", False),
        }

    def _unregister(self, data: dict) -> None:
        """The broker-side image removes without checking the epoch."""
        self.registrations.pop(data["brokerId"], None)

    def _current(self, broker_id: int, epoch: int, what: str) -> dict:
        registration = self.registrations.get(broker_id)
        if registration is None:
            raise ReplayProblem(f"{what} for broker {broker_id}, which is not registered")
        if registration["brokerEpoch"] != epoch:
            raise ReplayProblem(
                f"{what} for broker {broker_id} carries epoch {epoch}, "
                f"but the registration has epoch {registration['brokerEpoch']}"
            )
        return registration

    def _fence(self, data: dict) -> None:
        self._current(data["id"], data["epoch"], "FenceBrokerRecord")["fenced"] = True

    def _unfence(self, data: dict) -> None:
        self._current(data["id"], data["epoch"], "UnfenceBrokerRecord")["fenced"] = False

    def _change(self, data: dict) -> None:
        registration = self._current(data["brokerId"], data["brokerEpoch"], "BrokerRegistrationChangeRecord")
        fenced_value = data.get("fenced", 0)
        shutdown_value = data.get("inControlledShutdown", 0)
        if fenced_value not in _FENCING:
            raise ReplayProblem(f"BrokerRegistrationChangeRecord has unknown fenced value {fenced_value}")
        if shutdown_value not in _CONTROLLED_SHUTDOWN:
            raise ReplayProblem(
                f"BrokerRegistrationChangeRecord has unknown inControlledShutdown value {shutdown_value}"
            )
        if (fenced := _FENCING[fenced_value]) is not None:
            registration["fenced"] = fenced
        if _CONTROLLED_SHUTDOWN[shutdown_value]:
            registration["inControlledShutdown"] = True
        if log_dirs := data.get("logDirs"):
            registration["logDirs"] = sorted(log_dirs, key=uuid_order)

    def to_json(self) -> dict:
        return sorted_map(self.registrations, _broker_json)

    def broker_json(self, broker_id: int) -> dict | None:
        """One broker as ``to_json`` shows it."""
        registration = self.registrations.get(broker_id)
        return None if registration is None else _broker_json(registration)


def broker_state(registration: dict | None) -> str:
    """A broker's state at a glance: absent (not registered), fenced, shutdown (in controlled
    shutdown, unfenced) or active. A fenced broker is fenced whether or not it was in controlled
    shutdown: Kafka fences a broker at the end of its controlled shutdown and keeps the flag until it
    registers again."""
    if registration is None:
        return "absent"
    if registration["fenced"]:
        return "fenced"
    return "shutdown" if registration["inControlledShutdown"] else "active"


def _broker_json(registration: dict) -> dict:
    out = {name: registration[name] for name in _JSON_FIELDS}
    out["endPoints"] = by_name(out["endPoints"])
    out["features"] = by_name(out["features"])
    return out
