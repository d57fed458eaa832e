"""Schema layer: the declarative tables of metadata and control records, generated decoders and
encoders, Kafka-identical JSON and dump text, redaction and entity extraction."""

from kraftlog.schema.control import ControlRecord, decode_control
from kraftlog.schema.records import (
    NOOP_VALUE,
    MetadataRecord,
    decode_metadata,
    encode_metadata,
    encode_record,
)

__all__ = [
    "NOOP_VALUE",
    "ControlRecord",
    "MetadataRecord",
    "decode_control",
    "decode_metadata",
    "encode_metadata",
    "encode_record",
]
