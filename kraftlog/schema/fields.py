"""Field types and declarations for Kafka's flexible message schemas.

A schema here is data, not code: ``Field`` lines mirror the rows of Kafka's JSON message specs
(name, type, versions, nullableVersions, tag, default) so that a reviewer can hold the two side by
side. ``codegen`` turns these declarations into straight-line decoders and encoders.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

import construct

#: ``default=`` left out: the field takes its type's default (Kafka's ``FieldSpec.fieldDefault``).
TYPE_DEFAULT: Any = type("TypeDefault", (), {"__repr__": lambda self: "TYPE_DEFAULT"})()


@dataclass(frozen=True, slots=True)
class VersionRange:
    """Kafka's version spec: ``"0+"``, ``"1-3"``, ``"2"`` or ``"none"``."""

    lo: int
    hi: int | None  # None: open-ended ("0+")

    @classmethod
    def parse(cls, spec: str) -> VersionRange:
        if spec == "none":
            return cls(1, 0)
        m = re.fullmatch(r"(\d+)(\+|-(\d+))?", spec)
        if not m:
            raise ValueError(f"bad version spec {spec!r}")
        lo = int(m.group(1))
        if m.group(2) == "+":
            return cls(lo, None)
        return cls(lo, int(m.group(3)) if m.group(3) else lo)

    def __contains__(self, version: int) -> bool:
        return self.lo <= version and (self.hi is None or version <= self.hi)

    def __iter__(self):
        if self.hi is None:
            raise ValueError("open-ended version range")
        return iter(range(self.lo, self.hi + 1))


class FieldType:
    """A wire type. ``min_size`` is the fewest bytes one value can take, used to bound counts."""

    name: str
    default: Any
    min_size: int


@dataclass(frozen=True, slots=True, eq=False)
class Fixed(FieldType):
    """A fixed-width type read with one ``struct`` code (several are merged into one unpack)."""

    name: str
    code: str  # struct format code without byte order
    size: int
    default: Any

    @property
    def min_size(self) -> int:
        return self.size

    @classmethod
    def of(cls, name: str, con: construct.FormatField, default: Any) -> Fixed:
        """Take the layout from construct's declaration of the primitive."""
        return cls(name, con.fmtstr.lstrip("<>="), con.length, default)


@dataclass(frozen=True, slots=True, eq=False)
class Compact(FieldType):
    """A compact (varint ``N+1``) length-prefixed string or byte string; prefix 0 is null."""

    name: str
    default: Any
    min_size: int = 1


@dataclass(frozen=True, slots=True, eq=False)
class Array(FieldType):
    """A compact array: varint ``count+1`` (0 = null), then the elements."""

    element: FieldType
    default: Any = dc_field(default_factory=list)
    min_size: int = 1

    @property
    def name(self) -> str:
        return "[]" + self.element.name


# Java Kafka writes bool as one byte (non-zero = true); construct's Flag is not a FormatField.
BOOL = Fixed("bool", "?", 1, False)
INT8 = Fixed.of("int8", construct.Int8sb, 0)
INT16 = Fixed.of("int16", construct.Int16sb, 0)
INT32 = Fixed.of("int32", construct.Int32sb, 0)
INT64 = Fixed.of("int64", construct.Int64sb, 0)
UINT16 = Fixed.of("uint16", construct.Int16ub, 0)
FLOAT64 = Fixed.of("float64", construct.Float64b, 0.0)
#: Kept in ``data`` as Kafka's ``Uuid.toString()``: 22 chars of base64url without padding.
UUID = Fixed("uuid", f"{construct.Bytes(16).length}s", 16, "AAAAAAAAAAAAAAAAAAAAAA")
STRING = Compact("string", "")
BYTES = Compact("bytes", b"")


def array(element: FieldType) -> Array:
    return Array(element)


def json_name(name: str) -> str:
    """Kafka's JSON key: only the first letter lower-cased (``KRaftVersion`` -> ``kRaftVersion``)."""
    return name[:1].lower() + name[1:]


@dataclass(frozen=True, slots=True)
class Field:
    """One row of a message spec."""

    name: str
    type: FieldType
    versions: str
    nullable: str = "none"
    tag: int | None = None
    default: Any = TYPE_DEFAULT

    @property
    def json(self) -> str:
        return json_name(self.name)

    @property
    def version_range(self) -> VersionRange:
        return VersionRange.parse(self.versions)

    def nullable_in(self, version: int) -> bool:
        return version in VersionRange.parse(self.nullable)

    def default_value(self) -> Any:
        """The value an absent field takes (a fresh list for array defaults)."""
        if self.default is not TYPE_DEFAULT:
            return list(self.default) if isinstance(self.default, list) else self.default
        t = self.type
        return [] if isinstance(t, Array) else t.default


class Struct(FieldType):
    """A struct type: its fields in schema order. Every struct ends with its own tag section."""

    min_size = 1  # at least the tag-section count

    def __init__(self, name: str, fields: list[Field]) -> None:
        self.name = name
        self.fields = tuple(fields)
        tags = [f.tag for f in self.fields if f.tag is not None]
        if len(tags) != len(set(tags)):
            raise ValueError(f"{name}: duplicate tag")
        for f in self.fields:
            if f.nullable != "none" and not isinstance(f.type, Compact | Array):
                raise ValueError(f"{name}.{f.name}: a {f.type.name} cannot be nullable")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    @property
    def default(self) -> dict:
        """Encoding an absent struct field writes each of its fields' defaults."""
        return {}

    def fields_at(self, version: int) -> list[Field]:
        return [f for f in self.fields if version in f.version_range]


class Message(Struct):
    """A top-level schema: a metadata record (``api_key`` set) or a control record value."""

    def __init__(self, api_key: int | None, name: str, valid: str, fields: list[Field]) -> None:
        super().__init__(name, fields)
        self.api_key = api_key
        self.valid_versions = VersionRange.parse(valid)

    @functools.cached_property
    def type_name(self) -> str:
        """The ``MetadataRecordType`` enum constant: UPPER_SNAKE_CASE of the spec name (asked per record)."""
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", self.name).upper()

    @property
    def highest_version(self) -> int:
        assert self.valid_versions.hi is not None
        return self.valid_versions.hi
