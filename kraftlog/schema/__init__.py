"""Schema layer: the declarative tables of metadata and control records, generated decoders and
encoders, Kafka-identical JSON and dump text, redaction and entity extraction."""

from kraftlog.schema.control import CONTROL_TYPES, ControlRecord, decode_control, encode_control
from kraftlog.schema.entity import ENTITY_KEYS, entity_of
from kraftlog.schema.metadata import METADATA_RECORDS
from kraftlog.schema.records import (
    NOOP_VALUE,
    MetadataRecord,
    UnknownTag,
    decode_metadata,
    encode_metadata,
    encode_record,
    key_fields,
    message_of,
)
from kraftlog.schema.redact import REDACTED, is_secret_config, redact

__all__ = [
    "CONTROL_TYPES",
    "ENTITY_KEYS",
    "METADATA_RECORDS",
    "NOOP_VALUE",
    "REDACTED",
    "ControlRecord",
    "MetadataRecord",
    "UnknownTag",
    "decode_control",
    "decode_metadata",
    "encode_control",
    "encode_metadata",
    "encode_record",
    "entity_of",
    "is_secret_config",
    "key_fields",
    "message_of",
    "redact",
]
