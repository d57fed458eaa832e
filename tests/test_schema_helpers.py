"""Java-compatible rendering, redaction of secrets, and entity extraction."""

import math

import pytest

from kraftlog.schema import (
    ENTITY_KEYS,
    REDACTED,
    decode_control,
    decode_metadata,
    encode_metadata,
    entity_of,
    is_secret_config,
    redact,
)
from kraftlog.schema.codegen import decoder, source_of, whole_decoder
from kraftlog.schema.metadata import BY_API_KEY
from kraftlog.schema.render import compact_json, java_double

TOPIC_ID = "enp6egAAAAEAAAAAAAAAAQ"


def rec(type_name: str, data: dict, version: int = 0):
    r = decode_metadata(encode_metadata(type_name, version, data))
    assert r.error is None
    return r


# --- rendering -------------------------------------------------------------------------------


@pytest.mark.parametrize("x,text", [
    (1048576.5, "1048576.5"), (100.0, "100.0"), (0.0, "0.0"), (-0.0, "-0.0"), (0.001, "0.001"),
    (1e-4, "1.0E-4"), (9999999.0, "9999999.0"), (1e7, "1.0E7"), (123456789.0, "1.23456789E8"),
    (-2.5e-10, "-2.5E-10"), (1.7976931348623157e308, "1.7976931348623157E308"), (0.1, "0.1"),
    (math.inf, "Infinity"), (-math.inf, "-Infinity"), (math.nan, "NaN"),
])
def test_java_double_to_string(x, text):
    assert java_double(x) == text


def test_compact_json_follows_jackson():
    assert compact_json({"a": [1, None, True], "b": "\"\\\n\x01\u00e9", "c": 2.0, "d": b"\xff"}) == \
        '{"a":[1,null,true],"b":"\\"\\\\\\n\\u0001\u00e9","c":2.0,"d":"/w=="}'
    assert compact_json({"v": math.nan}) == '{"v":"NaN"}'  # Jackson quotes non-finite numbers


def test_generated_source_is_readable():
    text = source_of(decoder(BY_API_KEY[2], 0))
    assert text.startswith("def decode_TopicRecord_v0(buf, pos, unk):")
    assert "f_name = str(buf[pos:pos + " in text
    whole = source_of(whole_decoder(BY_API_KEY[2], 0))
    assert whole.startswith("def decode_TopicRecord_v0_whole(buf, pos):")
    assert "f_name = str(buf[pos:pos + " in whole and whole.endswith("return None\n")


# --- redaction -------------------------------------------------------------------------------


def test_scram_salt_and_keys_are_redacted_in_a_copy():
    original = rec("USER_SCRAM_CREDENTIAL_RECORD", {"name": "alice", "mechanism": 2, "salt": b"s",
                                                    "storedKey": b"k1", "serverKey": b"k2", "iterations": 4096})
    hidden = redact(original)
    assert hidden.to_json()["data"] == {"name": "alice", "mechanism": 2, "salt": REDACTED, "storedKey": REDACTED,
                                        "serverKey": REDACTED, "iterations": 4096}
    assert hidden.raw == b"" and b"k1" not in repr(hidden).encode()
    assert original.data["storedKey"] == b"k1"  # the input is untouched


@pytest.mark.parametrize("name,secret", [
    ("ssl.key.password", True), ("ssl.keystore.password", True), ("ssl.keystore.key", True),
    ("listener.name.sasl_ssl.plain.sasl.jaas.config", True), ("sasl.jaas.config", True),
    ("password.encoder.secret", True), ("delegation.token.secret.key", True), ("delegation.token.master.key", True),
    ("ssl.truststore.certificates", True), ("sasl.oauthbearer.client.credentials.client.secret", True),
    ("retention.ms", False), ("cleanup.policy", False), ("ssl.keystore.type", False), ("sasl.mechanism", False),
])
def test_secret_config_names(name, secret):
    assert is_secret_config(name) is secret


def test_config_values_redacted_by_name_only():
    secret = rec("CONFIG_RECORD", {"resourceType": 4, "resourceName": "1", "name": "ssl.key.password",
                                   "value": "hunter2"})
    assert redact(secret).data["value"] == REDACTED and "hunter2" not in str(redact(secret).to_json())
    deleted = rec("CONFIG_RECORD", {"resourceType": 4, "resourceName": "1", "name": "ssl.key.password",
                                    "value": None})
    assert redact(deleted) is deleted  # a delete carries no secret
    plain = rec("CONFIG_RECORD", {"resourceType": 2, "resourceName": "t", "name": "retention.ms", "value": "1"})
    assert redact(plain) is plain


def test_delegation_token_stays_whole_and_control_records_pass_through():
    token = rec("DELEGATION_TOKEN_RECORD", {"owner": "User:a", "tokenId": "tok-1"})
    assert redact(token).data["tokenId"] == "tok-1"
    control = decode_control(b"\x00\x00\x00\x04", b"\x00\x00\x00")
    assert redact(control) is control


def test_failed_sensitive_record_loses_its_bytes():
    broken = decode_metadata(encode_metadata("USER_SCRAM_CREDENTIAL_RECORD", 0, {"salt": b"secret-salt"})[:-3])
    assert broken.error is not None
    hidden = redact(broken)
    assert hidden.error == broken.error and hidden.raw == b""


# --- entities --------------------------------------------------------------------------------


@pytest.mark.parametrize("type_name,data,entity", [
    ("TOPIC_RECORD", {"name": "orders", "topicId": TOPIC_ID}, {"topic_id": TOPIC_ID, "topic_name": "orders"}),
    ("PARTITION_RECORD", {"partitionId": 3, "topicId": TOPIC_ID}, {"topic_id": TOPIC_ID, "partition_id": 3}),
    ("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": TOPIC_ID}, {"topic_id": TOPIC_ID, "partition_id": 0}),
    ("REMOVE_TOPIC_RECORD", {"topicId": TOPIC_ID}, {"topic_id": TOPIC_ID}),
    ("REGISTER_BROKER_RECORD", {"brokerId": 4}, {"broker_id": 4}),
    ("FENCE_BROKER_RECORD", {"id": 2, "epoch": 9}, {"broker_id": 2}),
    ("BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": 1}, {"broker_id": 1}),
    ("REGISTER_CONTROLLER_RECORD", {"controllerId": 3000}, {"broker_id": 3000}),
    ("PRODUCER_IDS_RECORD", {"brokerId": -1, "brokerEpoch": -1, "nextProducerId": 5}, {}),
    ("CONFIG_RECORD", {"resourceType": 2, "resourceName": "orders", "name": "x", "value": "y"},
     {"topic_name": "orders", "resource_type": "TOPIC", "resource_name": "orders"}),
    ("CONFIG_RECORD", {"resourceType": 4, "resourceName": "7", "name": "x"},
     {"broker_id": 7, "resource_type": "BROKER", "resource_name": "7"}),
    ("CONFIG_RECORD", {"resourceType": 4, "resourceName": "", "name": "x"},
     {"resource_type": "BROKER", "resource_name": ""}),
    ("ACCESS_CONTROL_ENTRY_RECORD", {"resourceType": 3, "resourceName": "g1"},
     {"resource_type": "GROUP", "resource_name": "g1"}),
    ("CLIENT_QUOTA_RECORD", {"entity": [{"entityType": "user", "entityName": "alice"},
                                        {"entityType": "client-id", "entityName": None}]},
     {"resource_type": "CLIENT_QUOTA", "resource_name": "client-id=<default>,user=alice"}),
    ("USER_SCRAM_CREDENTIAL_RECORD", {"name": "alice"}, {"resource_type": "USER", "resource_name": "alice"}),
    ("DELEGATION_TOKEN_RECORD", {"tokenId": "t1"}, {"resource_type": "DELEGATION_TOKEN", "resource_name": "t1"}),
    ("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 21},
     {"resource_type": "FEATURE", "resource_name": "metadata.version"}),
    ("CLEAR_ELR_RECORD", {"topicName": "orders"}, {"topic_name": "orders"}),
    ("CLEAR_ELR_RECORD", {"topicName": ""}, {}),
    ("NO_OP_RECORD", {}, {}),
])
def test_entity_of(type_name, data, entity):
    assert entity_of(rec(type_name, data)) == dict(dict.fromkeys(ENTITY_KEYS), **entity)


def test_entity_of_errors_and_control_records_is_empty():
    empty = dict.fromkeys(ENTITY_KEYS)
    assert entity_of(decode_metadata(b"\x01\x0d\x00\x00")) == empty
    assert entity_of(decode_control(b"\x00\x00\x00\x04", b"\x00\x00\x00")) == empty
