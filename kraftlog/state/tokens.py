"""Delegation tokens (``DelegationTokenImage``), by token id."""

from collections.abc import Callable


class DelegationTokens:
    """Token id -> the DelegationTokenRecord's fields (the record carries no HMAC)."""

    def __init__(self) -> None:
        self.tokens: dict[str, dict] = {}

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {
            "DELEGATION_TOKEN_RECORD": self._set,
            "REMOVE_DELEGATION_TOKEN_RECORD": self._remove,
        }

    def _set(self, data: dict) -> None:
        self.tokens[data["tokenId"]] = {**data, "renewers": list(data.get("renewers", []))}

    def _remove(self, data: dict) -> None:
        self.tokens.pop(data["tokenId"], None)

    def to_json(self) -> dict:
        return {token_id: dict(self.tokens[token_id]) for token_id in sorted(self.tokens)}
