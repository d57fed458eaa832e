"""Text forms that must match what Kafka's Java tools print.

Kafka's JSON converters build Jackson trees; ``kafka-dump-log`` prints them compactly. Python's
``json`` differs in two visible ways, float formatting (Java's ``Double.toString``) and the case
of ``\\u00XX`` escapes, so the compact writer here follows Jackson instead.
"""

from __future__ import annotations

import base64
import math
from decimal import Decimal
from typing import Any

_ESCAPES = {i: f"\\u{i:04X}" for i in range(32)}
_ESCAPES.update({8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r", 34: '\\"', 92: "\\\\"})


def b64(raw: bytes) -> str:
    """Jackson's BinaryNode text: standard alphabet, padded."""
    return base64.b64encode(raw).decode("ascii")


def jsonable(value: Any) -> Any:
    """``data`` as Kafka's JSON converters see it: ``bytes`` fields become base64 text."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return b64(bytes(value))
    return value


def java_double(x: float) -> str:
    """Java's ``Double.toString`` (shortest digits, as JDK 19+): ``1.0E7``, ``0.001``, ``100.0``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    sci = len(digits) + exponent - 1  # power of ten of the first digit
    if 1e-3 <= abs(x) < 1e7:
        if exponent >= 0:
            body = text + "0" * exponent + ".0"
        elif sci >= 0:
            body = text[: sci + 1] + "." + text[sci + 1 :]
        else:
            body = "0." + "0" * (-sci - 1) + text
    else:
        body = f"{text[0]}.{text[1:] or '0'}E{sci}"
    return "-" + body if sign else body


def compact_json(value: Any) -> str:
    """Jackson's compact rendering of a JSON tree (no spaces; Java number and escape forms)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = java_double(value)
        return text if math.isfinite(value) else f'"{text}"'
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPES) + '"'
    if isinstance(value, bytes | bytearray | memoryview):
        return '"' + b64(bytes(value)) + '"'
    if isinstance(value, dict):
        return "{" + ",".join(compact_json(str(k)) + ":" + compact_json(v) for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(compact_json(v) for v in value) + "]"
    raise TypeError(f"not JSON: {type(value).__name__}")
