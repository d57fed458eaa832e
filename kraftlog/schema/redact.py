"""Hide secrets before records leave the process (dumps, Parquet, shared reports).

What counts as secret: SCRAM salts and keys (enough for an offline attack on the password), and
config values whose names Kafka types as PASSWORD or that name credentials. Delegation token
records carry no HMAC (it is derived from the token id and the cluster's secret key), so they
are left whole and ``tokenId`` stays visible.
"""

from __future__ import annotations

import copy

from kraftlog.schema.control import ControlRecord
from kraftlog.schema.records import MetadataRecord

REDACTED = "[redacted]"

_CONFIG_RECORD = 4
_USER_SCRAM_CREDENTIAL_RECORD = 11
_SCRAM_SECRETS = ("salt", "storedKey", "serverKey")

#: Substrings of config names that hold secrets: Kafka's PASSWORD-typed configs
#: (ssl.key.password, ssl.keystore.key, sasl.jaas.config, password.encoder.secret, ...) also
#: under ``listener.name.<l>.`` prefixes, plus anything naming a password, secret or credential.
_SECRET_MARKS = (
    "password",
    "secret",
    "credential",
    "sasl.jaas.config",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
)


def is_secret_config(name: str) -> bool:
    """True for config names whose values must not be shown (``*.key`` counts: keys are secrets)."""
    lowered = name.lower()
    return lowered.endswith(".key") or any(mark in lowered for mark in _SECRET_MARKS)


def redact(rec: MetadataRecord | ControlRecord) -> MetadataRecord | ControlRecord:
    """A copy with secret values replaced by ``"[redacted]"``; other records come back as they are.

    A redacted copy also drops ``raw`` and unknown tagged fields, which would carry the secret
    bytes, so it cannot be re-encoded. A sensitive record that failed to decode keeps its error
    but not its bytes.
    """
    if not isinstance(rec, MetadataRecord):
        return rec
    if rec.error is not None:
        if rec.api_key in (_CONFIG_RECORD, _USER_SCRAM_CREDENTIAL_RECORD):
            return MetadataRecord(rec.api_key, rec.version, {}, (), rec.error, b"")
        return rec
    if rec.api_key == _USER_SCRAM_CREDENTIAL_RECORD:
        secrets = [k for k in _SCRAM_SECRETS if k in rec.data]
    elif rec.api_key == _CONFIG_RECORD and rec.data.get("value") is not None \
            and is_secret_config(rec.data.get("name", "")):
        secrets = ["value"]
    else:
        return rec
    data = copy.deepcopy(rec.data)
    for key in secrets:
        data[key] = REDACTED
    return MetadataRecord(rec.api_key, rec.version, data, (), None, b"", rec.decoded_as)
