"""Entity-level differences between two images, for ``kraftlog diff``."""

from dataclasses import dataclass
from typing import Any

from kraftlog.state.ids import key_order
from kraftlog.state.image import ClusterImage


@dataclass(frozen=True, slots=True)
class Change:
    """One entity that differs: ``kind`` is added, removed or changed; absent sides are None."""

    domain: str
    key: str
    kind: str
    before: Any
    after: Any

    def to_json(self) -> dict:
        return {"domain": self.domain, "key": self.key, "kind": self.kind, "before": self.before, "after": self.after}


def _entities(image: ClusterImage, redact: bool) -> dict[str, dict[str, Any]]:
    """Domain -> entity key -> value, from the canonical JSON (provenance left out).

    A topic and each of its partitions are separate entities, so a leader change reads as one
    changed partition rather than a changed topic; SCRAM users are keyed ``mechanism/user``."""
    state = image.to_json(redact)
    topics, scram = state["topics"], state["scram"]
    return {
        "features": state["features"],
        "zkMigrationState": {"zkMigrationState": state["zkMigrationState"]},
        "brokers": state["brokers"],
        "controllers": state["controllers"],
        "topics": {name: {"topicId": t["topicId"]} for name, t in topics.items()},
        "partitions": {f"{name}-{pid}": p for name, t in topics.items() for pid, p in t["partitions"].items()},
        "configs": state["configs"],
        "clientQuotas": state["clientQuotas"],
        "acls": state["acls"],
        "scram": {f"{mech}/{user}": c for mech, users in scram.items() for user, c in users.items()},
        "delegationTokens": state["delegationTokens"],
        "producerIds": state["producerIds"],
    }


def _partition_order(key: str) -> tuple:
    name, _, partition_id = key.rpartition("-")
    return (name, int(partition_id))


def diff(image_a: ClusterImage, image_b: ClusterImage, redact: bool = True) -> list[Change]:
    """What changed from ``image_a`` to ``image_b``, entity by entity, in a stable order."""
    a, b = _entities(image_a, redact), _entities(image_b, redact)
    changes = []
    for domain in a:
        old, new = a[domain], b[domain]
        for key in sorted(old.keys() | new.keys(), key=_partition_order if domain == "partitions" else key_order):
            if key not in new:
                changes.append(Change(domain, key, "removed", old[key], None))
            elif key not in old:
                changes.append(Change(domain, key, "added", None, new[key]))
            elif old[key] != new[key]:
                changes.append(Change(domain, key, "changed", old[key], new[key]))
    return changes
