"""SCRAM credentials (``ScramImage``): mechanism -> user -> credential, secrets redacted by default."""

import base64
from collections.abc import Callable

MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
_SECRETS = ("salt", "storedKey", "serverKey")
REDACTED = "[redacted]"


def mechanism_name(mechanism: int) -> str:
    return MECHANISMS.get(mechanism, "UNKNOWN")


class Scram:
    """Mechanism id -> user name -> {salt, storedKey, serverKey, iterations}."""

    def __init__(self) -> None:
        self.credentials: dict[int, dict[str, dict]] = {}

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {
            "USER_SCRAM_CREDENTIAL_RECORD": self._set,
            "REMOVE_USER_SCRAM_CREDENTIAL_RECORD": self._remove,
        }

    def _set(self, data: dict) -> None:
        self.credentials.setdefault(data["mechanism"], {})[data["name"]] = {
            "salt": data["salt"],
            "storedKey": data["storedKey"],
            "serverKey": data["serverKey"],
            "iterations": data["iterations"],
        }

    def _remove(self, data: dict) -> None:
        users = self.credentials.get(data["mechanism"])
        if users is not None:
            users.pop(data["name"], None)
            if not users:
                del self.credentials[data["mechanism"]]

    def to_json(self, redact: bool = True) -> dict:
        def render(credential: dict) -> dict:
            out = dict(credential)
            for name in _SECRETS:
                out[name] = REDACTED if redact else base64.b64encode(credential[name]).decode()
            return out

        return {
            mechanism_name(mechanism): {user: render(users[user]) for user in sorted(users)}
            for mechanism, users in sorted(self.credentials.items())
        }
