"""Client quotas (``ClientQuotasImage``): entity -> quota key -> value."""

from collections.abc import Callable

#: An entity as sorted (entityType, entityName) pairs; a None name is the default entity.
Entity = tuple[tuple[str, str | None], ...]

DEFAULT_NAME = "<default>"


def entity_of(data: dict) -> Entity:
    return tuple(sorted((e["entityType"], e.get("entityName")) for e in data["entity"]))


def entity_key(entity: Entity) -> str:
    """``client-id=<default>,user=alice``: types sorted, so one entity has one spelling."""
    return ",".join(f"{kind}={DEFAULT_NAME if name is None else name}" for kind, name in entity)


class ClientQuotas:
    """Entity -> {key: value}; an entity with no keys left is dropped."""

    def __init__(self) -> None:
        self.entities: dict[Entity, dict[str, float]] = {}

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {"CLIENT_QUOTA_RECORD": self._quota}

    def _quota(self, data: dict) -> None:
        entity = entity_of(data)
        if not data.get("remove", False):
            self.entities.setdefault(entity, {})[data["key"]] = data["value"]
            return
        quotas = self.entities.get(entity)
        if quotas is not None:
            quotas.pop(data["key"], None)
            if not quotas:
                del self.entities[entity]

    def to_json(self) -> dict:
        rendered = {entity_key(entity): quotas for entity, quotas in self.entities.items()}
        return {key: dict(sorted(rendered[key].items())) for key in sorted(rendered)}
