"""Dynamic configs (``ConfigurationsImage``): resource -> key -> value."""

from collections.abc import Callable

from kraftlog.schema.entity import CONFIG_RESOURCE_TYPES as RESOURCE_TYPES
from kraftlog.schema.redact import REDACTED, is_secret_config
from kraftlog.state.ids import key_order

TOPIC = 2
BROKER = 4


def type_name(resource_type: int) -> str:
    return RESOURCE_TYPES.get(resource_type, str(resource_type))


def resource_key(resource_type: int, name: str) -> str:
    """``TOPIC:orders``, ``BROKER:1``, and ``BROKER:`` for the cluster-wide default."""
    return f"{type_name(resource_type)}:{name}"


def _resource_order(resource: tuple[int, str]) -> tuple:
    return (type_name(resource[0]), key_order(resource[1]))


class Configs:
    """(resourceType, resourceName) -> {key: value}; a resource with no keys left is dropped."""

    def __init__(self) -> None:
        self.resources: dict[tuple[int, str], dict[str, str]] = {}

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {"CONFIG_RECORD": self._config}

    def _config(self, data: dict) -> None:
        resource = (data["resourceType"], data["resourceName"])
        value = data.get("value")
        if value is not None:
            self.resources.setdefault(resource, {})[data["name"]] = value
            return
        values = self.resources.get(resource)
        if values is not None:
            values.pop(data["name"], None)
            if not values:
                del self.resources[resource]

    def remove_resource(self, resource_type: int, name: str) -> None:
        self.resources.pop((resource_type, name), None)

    def ordered(self) -> list[tuple[tuple[int, str], dict[str, str]]]:
        return [(r, self.resources[r]) for r in sorted(self.resources, key=_resource_order)]

    def to_json(self, redact: bool = True) -> dict:
        return {resource_key(*resource): _values_json(values, redact) for resource, values in self.ordered()}

    def resource_json(self, resource: tuple[int, str], redact: bool = True) -> dict:
        """One resource's values as ``to_json`` shows them ({} when it has none)."""
        return _values_json(self.resources.get(resource, {}), redact)


def type_of(name: str) -> int | None:
    """The resource type ``type_name`` shows as ``name`` (None: no type is shown so)."""
    by_name = {v: k for k, v in RESOURCE_TYPES.items()}
    if name in by_name:
        return by_name[name]
    if name.lstrip("-").isdigit() and str(int(name)) == name and int(name) not in RESOURCE_TYPES:
        return int(name)
    return None


def _values_json(values: dict[str, str], redact: bool) -> dict:
    return {k: REDACTED if redact and is_secret_config(k) else v for k, v in sorted(values.items())}
