"""ACLs of the KRaft authorizer (``AclsImage``), by ACL id."""

from collections.abc import Callable

from kraftlog.state.problems import ReplayProblem

#: Enum ids of AccessControlEntryRecord fields -> Kafka's names (reference §3.3).
RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                  6: "DELEGATION_TOKEN", 7: "USER"}
PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
              8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS",
              12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS"}
PERMISSION_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}


class Acls:
    """ACL id -> the AccessControlEntryRecord's fields."""

    def __init__(self) -> None:
        self.entries: dict[str, dict] = {}

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {
            "ACCESS_CONTROL_ENTRY_RECORD": self._add,
            "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": self._remove,
        }

    def _add(self, data: dict) -> None:
        self.entries[data["id"]] = dict(data)

    def _remove(self, data: dict) -> None:
        if self.entries.pop(data["id"], None) is None:
            raise ReplayProblem(f"RemoveAccessControlEntryRecord for unknown ACL id {data['id']}")

    def to_json(self) -> dict:
        return {acl_id: dict(self.entries[acl_id]) for acl_id in sorted(self.entries)}
