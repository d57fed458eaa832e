"""Kafka's reserved directory ids and the orders Kafka keeps ids and map keys in."""

import base64
import re

#: ``DirectoryId.MIGRATING``: the replica's directory was never recorded (pre-JBOD metadata).
MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"
#: ``DirectoryId.UNASSIGNED``: a new replica not yet placed in a directory.
UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"
#: ``DirectoryId.LOST``: the replica's directory is offline.
LOST = "AAAAAAAAAAAAAAAAAAAAAg"


def uuid_order(text: str) -> tuple[int, int]:
    """Sort key matching ``Uuid.compareTo`` (signed most- then least-significant bits), so lists
    Kafka keeps sorted (a broker's log dirs) come out in Kafka's order."""
    raw = base64.urlsafe_b64decode(text + "==")
    return (int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:16], "big", signed=True))


#: A map key that sorts as a number: ASCII digits that fit a long (``str.isdigit`` also takes "²",
#: which int() refuses, and int() refuses more than 4300 digits).
_INTEGER = re.compile(r"-?[0-9]{1,19}")


def key_order(key: object) -> tuple:
    """Numbers before text, numbers by value: map keys such as broker ids sort as 1, 2, 10."""
    if isinstance(key, int):
        return (0, key, "")
    text = str(key)
    if _INTEGER.fullmatch(text):
        return (0, int(text), "")
    return (1, 0, text)


def sorted_map(mapping: dict, render=lambda v: v) -> dict:
    """A JSON object with string keys in ``key_order`` and each value rendered."""
    return {str(k): render(mapping[k]) for k in sorted(mapping, key=key_order)}
