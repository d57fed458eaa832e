"""Hide secrets before records leave the process (dumps, Parquet, shared reports).

What counts as secret follows Kafka: a config value is shown only when Kafka defines the config
with a type other than PASSWORD (``KafkaConfig.maybeSensitive``: an unknown config type is
sensitive, so a custom ``my.plugin.api.token`` or a PASSWORD config newer than the list is hidden);
the list is ``known_configs.NON_SENSITIVE``, generated from Kafka's config definitions. SCRAM salts
and keys are secret (enough for an offline attack on the password). Bytes kraftlog did not decode
(a record's raw value, unknown tagged fields) of a record type that can carry secrets, or of a
record whose type is unknown, are never shown: ``redacted_bytes`` says how many there were.
Delegation token records carry no HMAC (it is derived from the token id and the cluster's secret
key), so their decoded fields stay visible.
"""

from __future__ import annotations

import copy
import re

from kraftlog.schema.control import ControlRecord
from kraftlog.schema.known_configs import NON_SENSITIVE
from kraftlog.schema.metadata import BY_API_KEY, BY_TYPE_NAME
from kraftlog.schema.records import MetadataRecord, decode_metadata

REDACTED = "[redacted]"

_CONFIG_RECORD = BY_TYPE_NAME["CONFIG_RECORD"].api_key
_USER_SCRAM_CREDENTIAL_RECORD = BY_TYPE_NAME["USER_SCRAM_CREDENTIAL_RECORD"].api_key
#: Record types whose bytes can hold secrets: config values, SCRAM salts and keys, delegation tokens.
SECRET_TYPES = frozenset({_CONFIG_RECORD, _USER_SCRAM_CREDENTIAL_RECORD,
                          BY_TYPE_NAME["DELEGATION_TOKEN_RECORD"].api_key})
_SCRAM_SECRETS = ("salt", "storedKey", "serverKey")
#: ``listener.name.<listener>.`` (Kafka's ``ListenerName.configPrefix``), the prefix of a listener's
#: own copy of a config; a SASL mechanism's copy adds ``<mechanism>.`` (``saslMechanismPrefix``).
_LISTENER_PREFIX = re.compile(r"listener\.name\.[^.]+\.")


def is_secret_config(name: str) -> bool:
    """True unless Kafka defines ``name`` with a type other than PASSWORD: a config Kafka does not
    know (custom, a plugin's, newer than the list) is treated as sensitive, as Kafka treats it. A
    listener's (or listener and mechanism's) copy of a config is judged by that config."""
    if name in NON_SENSITIVE:
        return False
    m = _LISTENER_PREFIX.match(name)
    if m is None:
        return True
    rest = name[m.end() :]
    return rest not in NON_SENSITIVE and rest.partition(".")[2] not in NON_SENSITIVE


def redacted_bytes(n: int) -> str:
    """What is shown in place of ``n`` bytes that may hold a secret."""
    return f"<redacted {n} bytes>"


def may_hold_secrets(rec: MetadataRecord) -> bool:
    """A record whose undecoded bytes must not be shown: of a type that can carry secrets, or of a
    type (or frame) that could not be read at all."""
    return rec.api_key in SECRET_TYPES or rec.api_key not in BY_API_KEY


def hides_value(value: bytes | None, metadata_log: bool) -> bool:
    """Whether the raw bytes of a record value must not be shown when redacting (``--decoder raw``,
    an undecodable record): a metadata record that ``may_hold_secrets``, or in a metadata log any
    value that is not a readable record of another type."""
    if value is None:
        return False
    rec = decode_metadata(value)
    if rec.error is None or rec.api_key in BY_API_KEY:
        return rec.api_key in SECRET_TYPES
    return metadata_log or rec.api_key in SECRET_TYPES


def redact(rec: MetadataRecord | ControlRecord) -> MetadataRecord | ControlRecord:
    """A copy with secret values replaced by ``"[redacted]"``; other records come back as they are.

    A redacted copy drops ``raw``, which would carry the secret bytes, so it cannot be re-encoded;
    unknown tagged fields of a type that can carry secrets keep their path and tag, their bytes
    become ``redacted_bytes``. A record that failed to decode and ``may_hold_secrets`` keeps its
    error but not its bytes.
    """
    if not isinstance(rec, MetadataRecord):
        return rec
    if rec.error is not None:
        if may_hold_secrets(rec):
            return MetadataRecord(rec.api_key, rec.version, {}, (), rec.error, b"")
        return rec
    secrets: list[str] = []
    if rec.api_key == _USER_SCRAM_CREDENTIAL_RECORD:
        secrets = [k for k in _SCRAM_SECRETS if k in rec.data]
    elif rec.api_key == _CONFIG_RECORD and rec.data.get("value") is not None \
            and is_secret_config(rec.data.get("name", "")):
        secrets = ["value"]
    tags = rec.unknown_tags if rec.api_key not in SECRET_TYPES else \
        tuple((path, tag, redacted_bytes(len(raw))) for path, tag, raw in rec.unknown_tags)
    if not secrets and tags is rec.unknown_tags:
        return rec
    data = copy.deepcopy(rec.data)
    for key in secrets:
        data[key] = REDACTED
    return MetadataRecord(rec.api_key, rec.version, data, tags, None, b"", rec.decoded_as)
