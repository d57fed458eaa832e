"""A ``kafka-metadata-shell`` style tree of the image (the 3.5+ ``/image/...`` layout).

Directories are dicts, leaves are the strings the shell prints (Kafka's ``toString`` forms).
``render_tree`` prints like the shell's ``tree`` command: children sorted, two spaces per level."""

import datetime
import math
from decimal import Decimal

from kraftlog.schema.redact import REDACTED, is_secret_config
from kraftlog.state import acls as acl_names
from kraftlog.state.configs import type_name
from kraftlog.state.features import METADATA_VERSION, metadata_version_name
from kraftlog.state.image import ClusterImage, Provenance
from kraftlog.state.quotas import DEFAULT_NAME, Entity
from kraftlog.state.scram import mechanism_name
from kraftlog.state.topics import LEADER_RECOVERY_STATES
from kraftlog.wire.text import printable

Node = dict | str

SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
_QUOTA_TYPES = {"client-id": "clientId", "ip": "ip", "user": "user"}


# --- Java's toString forms ---------------------------------------------------------------------


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _list(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _double(value: float) -> str:
    """``Double.toString``: plain between 10^-3 and 10^7, else computerized scientific notation."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))
    sign, digits, exponent = Decimal(repr(float(value))).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) - 1 + exponent
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def _version_range(feature: dict) -> str:
    """``VersionRange.toString``."""
    low, high = feature["minSupportedVersion"], feature["maxSupportedVersion"]
    if low == high:
        return str(low)
    return f"{low}+" if high == 32767 else f"{low}-{high}"


def _listeners(endpoints: list[dict]) -> str:
    return _list(
        f"Endpoint(listenerName='{e['name']}', "
        f"securityProtocol={SECURITY_PROTOCOLS.get(e['securityProtocol'], e['securityProtocol'])}, "
        f"host='{e['host']}', port={e['port']})"
        for e in sorted(endpoints, key=lambda e: e["name"])
    )


def _features(features: list[dict]) -> str:
    return "{" + ", ".join(f"{f['name']}: {_version_range(f)}" for f in sorted(features, key=lambda f: f["name"])) + "}"


_YEAR_1_MS = -62_135_596_800_000
_YEAR_10000_MS = 253_402_300_800_000


def provenance_text(provenance: Provenance) -> str:
    """``offset O, epoch E, time <ISO_ZONED_DATE_TIME in UTC>``."""
    ms = provenance.timestamp
    head = f"offset {provenance.offset}, epoch {provenance.epoch}, time "
    if not _YEAR_1_MS <= ms < _YEAR_10000_MS:  # a corrupt timestamp: Python's dates cannot hold it
        return f"{head}{ms} ms since the epoch"
    moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=ms)
    fraction = f".{ms % 1000:03d}".rstrip("0").rstrip(".")
    return f"{head}{moment:%Y-%m-%dT%H:%M:%S}{fraction}Z[UTC]"


# --- one node per domain -----------------------------------------------------------------------


def _features_node(image: ClusterImage) -> dict:
    node = {
        "metadataVersion": metadata_version_name(image.features.metadata_version),
        "zkMigrationState": image.features.zk_migration_state_name,
    }
    for name, level in image.features.levels.items():
        if name != METADATA_VERSION:
            node[f"finalized_{name}"] = str(level)
    return node


def _broker_text(b: dict) -> str:
    rack = "Optional.empty" if b["rack"] is None else f"Optional[{b['rack']}]"
    return (
        f"BrokerRegistration(id={b['brokerId']}, epoch={b['brokerEpoch']}, incarnationId={b['incarnationId']}, "
        f"listeners={_listeners(b['endPoints'])}, supportedFeatures={_features(b['features'])}, rack={rack}, "
        f"fenced={_bool(b['fenced'])}, inControlledShutdown={_bool(b['inControlledShutdown'])}, "
        f"isMigratingZkBroker={_bool(b['isMigratingZkBroker'])}, directories={_list(b['logDirs'])})"
    )


def _controller_text(c: dict) -> str:
    return (
        f"ControllerRegistration(id={c['controllerId']}, incarnationId={c['incarnationId']}, "
        f"zkMigrationReady={_bool(c['zkMigrationReady'])}, listeners={_listeners(c['endPoints'])}, "
        f"supportedFeatures={_features(c['features'])})"
    )


def _partition_text(p: dict) -> str:
    return (
        f"PartitionRegistration(replicas={_list(p['replicas'])}, directories={_list(p['directories'])}, "
        f"isr={_list(p['isr'])}, removingReplicas={_list(p['removingReplicas'])}, "
        f"addingReplicas={_list(p['addingReplicas'])}, elr={_list(p['eligibleLeaderReplicas'])}, "
        f"lastKnownElr={_list(p['lastKnownElr'])}, leader={p['leader']}, "
        f"leaderRecoveryState={LEADER_RECOVERY_STATES[p['leaderRecoveryState']]}, "
        f"leaderEpoch={p['leaderEpoch']}, partitionEpoch={p['partitionEpoch']})"
    )


def _topic_node(topic: dict) -> dict:
    node = {"name": topic["name"], "id": topic["topicId"]}
    node.update({str(pid): _partition_text(p) for pid, p in topic["partitions"].items()})
    return node


def _topics_node(image: ClusterImage) -> dict:
    topics = image.topics
    return {
        "byName": {name: _topic_node(topics.by_id[tid]) for name, tid in topics.id_by_name.items()},
        "byId": {tid: _topic_node(topic) for tid, topic in topics.by_id.items()},
    }


def _configs_node(image: ClusterImage, redact: bool) -> dict:
    """``TOPIC:foo``, ``BROKER:1``, and ``BROKER`` alone for the cluster default."""
    return {
        type_name(kind) + (f":{name}" if name else ""): {
            key: REDACTED if redact and is_secret_config(key) else value for key, value in values.items()
        }
        for (kind, name), values in image.configs.resources.items()
    }


def _quota_entity_name(entity: Entity) -> str:
    """``clientId(x)_ip(y)_user(z)``, with ``\\``, ``(`` and ``)`` escaped as the shell does."""

    def escape(name: str | None) -> str:
        text = DEFAULT_NAME if name is None else name
        return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    return "_".join(f"{_QUOTA_TYPES.get(kind, kind)}({escape(name)})" for kind, name in entity)


def _acl_text(a: dict) -> str:
    return (
        f"StandardAcl(resourceType={acl_names.RESOURCE_TYPES.get(a['resourceType'], a['resourceType'])}, "
        f"resourceName={a['resourceName']}, "
        f"patternType={acl_names.PATTERN_TYPES.get(a['patternType'], a['patternType'])}, "
        f"principal={a['principal']}, host={a['host']}, "
        f"operation={acl_names.OPERATIONS.get(a['operation'], a['operation'])}, "
        f"permissionType={acl_names.PERMISSION_TYPES.get(a['permissionType'], a['permissionType'])})"
    )


def _scram_text(c: dict, redact: bool) -> str:
    def show(value) -> str:
        return REDACTED if redact else (value.hex() if isinstance(value, bytes) else str(value))

    return (f"ScramCredentialData(salt={show(c['salt'])}, storedKey={show(c['storedKey'])}, "
            f"serverKey={show(c['serverKey'])}, iterations={show(c['iterations'])})")


def _token_text(t: dict) -> str:
    """DelegationTokenDataNode's layout, odd parentheses included."""
    return (
        f"DelegationTokenDatatokenId={t['tokenId']}(owner={t['owner']}(tokenRequester={t['requester']}"
        f"(renewers={' '.join(t['renewers'])}, issueTimestamp={t['issueTimestamp']}, "
        f"maxTimestamp={t['maxTimestamp']}), expiryTimestamp={t['expirationTimestamp']}"
    )


def image_tree(image: ClusterImage, redact: bool = True) -> dict:
    """The ``/image`` node and everything below it."""
    return {
        "provenance": provenance_text(image.provenance),
        "features": _features_node(image),
        "cluster": {
            "brokers": {str(i): _broker_text(b) for i, b in image.brokers.registrations.items()},
            "controllers": {str(i): _controller_text(c) for i, c in image.controllers.registrations.items()},
        },
        "topics": _topics_node(image),
        "configs": _configs_node(image, redact),
        "clientQuotas": {
            _quota_entity_name(entity): {key: _double(value) for key, value in quotas.items()}
            for entity, quotas in image.client_quotas.entities.items()
        },
        "producerIds": {"nextProducerId": str(image.producer_ids.next_producer_id)},
        "acls": {acl_id: _acl_text(a) for acl_id, a in image.acls.entries.items()},
        "scram": {
            mechanism_name(mechanism): {user: _scram_text(c, redact) for user, c in users.items()}
            for mechanism, users in image.scram.credentials.items()
        },
        "delegationToken": {tid: _token_text(t) for tid, t in image.delegation_tokens.tokens.items()},
    }


# --- the same tree with JSON leaves (the shell's ``cat``) ---------------------------------------


def _topic_json(topic: dict) -> dict:
    """A topic node: its name, id and partitions, each partition as the canonical image has it."""
    node = {"name": topic["name"], "id": topic["topicId"]}
    node.update({str(pid): dict(p) for pid, p in topic["partitions"].items()})
    return node


def _topics_json(image: ClusterImage, parts: list[str]) -> tuple[Node, list[str]]:
    """Only the topic a path names is built, so following one partition through the log is cheap."""
    topics = image.topics
    if len(parts) >= 2 and parts[0] in ("byName", "byId"):
        topic = topics.by_name(parts[1]) if parts[0] == "byName" else topics.by_id.get(parts[1])
        if topic is None:
            raise KeyError(parts[1])
        return _topic_json(topic), parts[2:]
    return {
        "byName": {name: _topic_json(topics.by_id[tid]) for name, tid in topics.id_by_name.items()},
        "byId": {tid: _topic_json(topic) for tid, topic in topics.by_id.items()},
    }, parts


def _domain_json(image: ClusterImage, domain: str, redact: bool) -> Node:
    """One child of ``/image`` with JSON leaves, keyed as ``image_tree`` keys it."""
    if domain == "provenance":
        return image.provenance.to_json()
    if domain == "features":
        node = {"metadataVersion": metadata_version_name(image.features.metadata_version),
                "zkMigrationState": image.features.zk_migration_state_name}
        node.update({f"finalized_{name}": level for name, level in image.features.levels.items()
                     if name != METADATA_VERSION})
        return node
    if domain == "cluster":
        return {"brokers": image.brokers.to_json(), "controllers": image.controllers.to_json()}
    if domain == "configs":
        return _configs_node(image, redact)
    if domain == "clientQuotas":
        return {_quota_entity_name(entity): dict(quotas) for entity, quotas in image.client_quotas.entities.items()}
    if domain == "producerIds":
        return image.producer_ids.to_json()
    if domain == "acls":
        return image.acls.to_json()
    if domain == "scram":
        return image.scram.to_json(redact)
    if domain == "delegationToken":
        return image.delegation_tokens.to_json()
    raise KeyError(domain)


def node_json(image: ClusterImage, parts: list[str], redact: bool = True) -> Node:
    """The node at ``/image/<parts>`` as JSON: a partition is the canonical image's partition
    object (what ``replay`` prints), a directory the object of its children.

    The layout is ``image_tree``'s (a test walks both); a missing name raises KeyError."""
    if not parts:
        return {domain: node_json(image, [domain], redact) for domain in _DOMAINS}
    domain, rest = parts[0], list(parts[1:])
    if domain == "topics":
        node, rest = _topics_json(image, rest)
    else:
        node = _domain_json(image, domain, redact)
    for name in rest:
        if not isinstance(node, dict) or name not in node:
            raise KeyError(name)
        node = node[name]
    return node


_DOMAINS = ("provenance", "features", "cluster", "topics", "configs", "clientQuotas", "producerIds", "acls",
            "scram", "delegationToken")


# --- printing ----------------------------------------------------------------------------------


def _print(node: Node, depth: int, out: list[str]) -> None:
    indent = "  " * depth
    if isinstance(node, str):
        out.append(indent + printable(node))  # one line a node: a hostile name cannot forge lines
        return
    for name in sorted(node):
        out.append(f"{indent}{printable(name)}:")
        _print(node[name], depth + 1, out)


def render_tree(image: ClusterImage, path: str = "/image", redact: bool = True) -> str:
    """The shell's ``tree <path>`` output: the node's children (or a leaf's value), one per line."""
    node: Node = {"image": image_tree(image, redact)}
    for part in (p for p in path.split("/") if p):
        if not isinstance(node, dict) or part not in node:
            return f"tree: {path}: No such file or directory.\n"
        node = node[part]
    return render_node(node)


def render_node(node: Node) -> str:
    """A node of the tree printed as ``tree`` prints it."""
    out: list[str] = []
    _print(node, 0, out)
    return "".join(line + "\n" for line in out)
