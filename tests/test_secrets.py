"""Secrets stay redacted in every output: config values unless Kafka defines the config as
non-sensitive, and never the undecoded bytes of a record type that can carry secrets (in text,
jsonl, ``--decoder raw``, and the job's ``records`` columns) unless ``--no-redact``."""

import base64
import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from kraftlog.cli.main import main
from kraftlog.schema import encode_metadata, redact
from kraftlog.schema.known_configs import NON_SENSITIVE, PASSWORD
from kraftlog.schema.records import decode_metadata
from kraftlog.schema.redact import hides_value, is_secret_config
from kraftlog.spark.decode import _VALUES, decode_value
from kraftlog.wire.batch import Record, encode_batch

SECRET = b"hunter2-top-secret"


@pytest.mark.parametrize("name", [
    "sasl.oauthbearer.assertion.private.key.passphrase",  # PASSWORD in Kafka 4.1, newer than the list
    "my.plugin.api.token", "ldap.bind.pwd", "sasl.jaas.config", "ssl.key.password",
    "listener.name.internal.ssl.keystore.password", "listener.name.internal.plain.sasl.jaas.config",
])
def test_configs_kafka_does_not_define_as_plain_are_secret(name):
    assert is_secret_config(name)


@pytest.mark.parametrize("name", [
    "retention.ms", "cleanup.policy", "segment.bytes", "min.insync.replicas", "log.retention.hours", "log.roll.ms",
    "ssl.keystore.location", "listener.security.protocol.map", "metrics", "consumer.session.timeout.ms",
    "listener.name.internal.ssl.keystore.type", "listener.name.internal.scram-sha-256.sasl.login.class",
])
def test_configs_kafka_defines_as_plain_are_shown(name):
    assert not is_secret_config(name)


def test_the_lists_come_from_kafka():
    assert PASSWORD.isdisjoint(NON_SENSITIVE) and {"ssl.key.password", "sasl.jaas.config"} <= PASSWORD
    assert len(NON_SENSITIVE) > 300


def _config(name: str, value: str) -> bytes:
    return encode_metadata("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": "orders", "name": name,
                                                "value": value})


#: A ConfigRecord and a SCRAM credential whose bodies cannot be read, each holding the secret; a
#: custom config; a record of a type no Kafka has.
VALUES = [
    b"\x01\x04\x00\xff\xff" + SECRET,
    b"\x01\x0b\x00\xff\xff" + SECRET,
    _config("my.plugin.api.token", SECRET.decode()),
    b"\x01\x7e\x00" + SECRET,
]


def _log(tmp_path):
    path = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(b"".join(encode_batch([Record(0, 0, None, v)], base_offset=i, base_timestamp=1_700_000_000_000)
                              for i, v in enumerate(VALUES)))
    return path


def _cli(*argv: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(list(argv))
    return out.getvalue()


def _leaks(text: str) -> bool:
    return SECRET.decode() in text or any(base64.b64encode(v).decode() in text for v in VALUES) \
        or base64.b64encode(SECRET).decode()[:16] in text


@pytest.mark.parametrize("argv", [[], ["--format", "jsonl"], ["--decoder", "raw"],
                                  ["--decoder", "raw", "--format", "jsonl"]])
def test_dump_never_prints_secret_bytes(tmp_path, argv):
    path = _log(tmp_path)
    out = _cli("dump", *argv, str(path))
    assert not _leaks(out), out
    assert "<redacted 23 bytes>" in out or "[redacted]" in out
    assert _leaks(_cli("dump", "--no-redact", *argv, str(path)))


def test_raw_values_hidden_by_type():
    assert [hides_value(v, True) for v in VALUES] == [True, True, True, True]
    topic = encode_metadata("TOPIC_RECORD", 0, {"name": "orders", "topicId": "3ql6QVjQQWKGtGd-HqfNxA"})
    assert not hides_value(topic, True)
    assert not hides_value(b"user data", False) and hides_value(b"user data", True)


def test_unknown_tagged_fields_of_secret_types_are_redacted():
    """A ConfigRecord carrying a tagged field this schema does not know: its bytes are hidden in
    the record's JSON and in the job's ``unknown_tags`` column, its place is kept."""
    value = _config("retention.ms", "1000") + b""
    # the body ends with its tagged fields: none -> one unknown tag 7 of the secret's bytes
    assert value.endswith(b"\x00")
    tagged = value[:-1] + b"\x01\x07" + bytes([len(SECRET)]) + SECRET
    rec = decode_metadata(tagged)
    assert rec.error is None and rec.unknown_tags == (("", 7, SECRET),)
    shown = redact(rec)
    assert shown.data["value"] == "1000"
    assert shown.to_json()["unknownTaggedFields"] == [{"path": "", "tag": 7, "data": "<redacted 18 bytes>"}]
    columns = dict(zip([n for n, _ in _VALUES], decode_value(False, None, tagged), strict=True))
    assert json.loads(columns["unknown_tags"]) == [{"path": "", "tag": 7, "data": "<redacted 18 bytes>"}]
    assert SECRET.decode() not in json.dumps(columns)
