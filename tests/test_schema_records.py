"""Metadata record values built byte by byte from the spec (reference sections 2-4), decoded,
rendered and re-encoded; and every way a value can be wrong, reported without raising."""

import base64
import gc
import struct

import pytest

from kraftlog.schema import (
    METADATA_RECORDS,
    NOOP_VALUE,
    MetadataRecord,
    decode_metadata,
    encode_metadata,
    encode_record,
    message_of,
    records,
)

# --- spec-level builders: independent of the code under test ---------------------------------


def uv(n: int) -> bytes:
    """Unsigned LEB128 varint."""
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cstr(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    b = s.encode()
    return uv(len(b) + 1) + b


def carr(fmt: str, values: list | None) -> bytes:
    return b"\x00" if values is None else uv(len(values) + 1) + b"".join(struct.pack(">" + fmt, v) for v in values)


def tags(*fields: tuple[int, bytes]) -> bytes:
    return uv(len(fields)) + b"".join(uv(t) + uv(len(d)) + d for t, d in fields)


def frame(api_key: int, version: int) -> bytes:
    return uv(1) + uv(api_key) + uv(version)


UUID_A = bytes(range(16))
UUID_A_TEXT = base64.urlsafe_b64encode(UUID_A).rstrip(b"=").decode()
ZERO_UUID_TEXT = "AAAAAAAAAAAAAAAAAAAAAA"


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def topic_record(name: str, *extra_tags: tuple[int, bytes]) -> bytes:
    return frame(2, 0) + cstr(name) + UUID_A + tags(*extra_tags)


def partition_v2(leader_recovery: bytes | None = None, elr: list | None = None, lke: list | None = None) -> bytes:
    body = (i32(7) + UUID_A + carr("i", [1, 2, 3]) + carr("i", [1, 2]) + carr("i", []) + carr("i", [])
            + i32(1) + i32(5) + i32(9) + uv(4) + UUID_A * 3)
    fields = []
    if leader_recovery is not None:
        fields.append((0, leader_recovery))
    if elr is not None:
        fields.append((1, carr("i", elr)))
    if lke is not None:
        fields.append((2, carr("i", lke)))
    return frame(3, 2) + body + tags(*fields)


def ok(value: bytes) -> MetadataRecord:
    rec = decode_metadata(value)
    assert rec.error is None, rec.error
    assert rec.raw == value
    return rec


def failed(value: bytes) -> str:
    rec = decode_metadata(value)
    assert rec.error is not None and rec.data == {}
    assert rec.raw == value
    return rec.error


# --- decoding values built from the spec -----------------------------------------------------


def test_reference_worked_example_topic_record():
    value = bytes.fromhex("010200") + b"\x04foo" + UUID_A + b"\x00"
    rec = ok(value)
    assert (rec.api_key, rec.version, rec.type) == (2, 0, "TOPIC_RECORD")
    assert rec.data == {"name": "foo", "topicId": UUID_A_TEXT} and len(UUID_A_TEXT) == 22
    assert rec.to_json() == {"type": "TOPIC_RECORD", "version": 0, "data": {"name": "foo", "topicId": UUID_A_TEXT}}
    assert encode_record(rec) == value


def test_noop_is_recognised_and_equals_the_full_decode():
    rec = decode_metadata(NOOP_VALUE)
    assert rec.to_json() == {"type": "NO_OP_RECORD", "version": 0, "data": {}}
    assert rec.dump_text() == 'payload: {"type":"NO_OP_RECORD","version":0,"data":{}}'
    assert decode_metadata(bytearray(NOOP_VALUE)) == rec
    assert decode_metadata(memoryview(b"\x01\x14\x00\x00")) == rec
    assert encode_metadata("NO_OP_RECORD", 0, {}) == NOOP_VALUE


def test_uuid_text_is_base64url_without_padding():
    raw = bytes.fromhex("fbf3ffffffffffffffffffffffffff00")  # '-' and '_' appear only in the url-safe alphabet
    rec = ok(frame(9, 0) + raw + b"\x00")
    assert rec.data["topicId"] == "-_P_________________AA"
    assert ok(frame(9, 0) + bytes(16) + b"\x00").data["topicId"] == ZERO_UUID_TEXT


def test_partition_record_v2_tagged_fields_shown_only_when_not_default():
    plain = ok(partition_v2())
    assert list(plain.data) == ["partitionId", "topicId", "replicas", "isr", "removingReplicas", "addingReplicas",
                                "leader", "leaderEpoch", "partitionEpoch", "directories"]
    assert plain.data["directories"] == [UUID_A_TEXT] * 3

    # An empty ELR differs from the null default, so it is shown (as in Kafka's golden v2 line).
    empty_elr = ok(partition_v2(elr=[], lke=[]))
    assert empty_elr.data["eligibleLeaderReplicas"] == [] and empty_elr.data["lastKnownElr"] == []
    assert encode_record(empty_elr) == partition_v2(elr=[], lke=[])

    # LeaderRecoveryState=1 (tag 0) sits in schema position, between leader and leaderEpoch.
    recovering = ok(partition_v2(leader_recovery=b"\x01", elr=[2, 3]))
    keys = list(recovering.data)
    assert keys.index("leaderRecoveryState") == keys.index("leader") + 1
    assert recovering.data["eligibleLeaderReplicas"] == [2, 3] and "lastKnownElr" not in recovering.data
    assert encode_record(recovering) == partition_v2(leader_recovery=b"\x01", elr=[2, 3])


def test_tagged_field_written_with_its_default_is_not_shown():
    """Kafka's converters print tagged fields only when non-default, even if they were on the wire."""
    rec = ok(partition_v2(leader_recovery=b"\x00", elr=None))
    assert "leaderRecoveryState" not in rec.data
    rec = ok(frame(3, 2) + partition_v2()[3:-1] + tags((1, b"\x00")))  # ELR explicitly null
    assert "eligibleLeaderReplicas" not in rec.data


def test_partition_change_defaults_are_no_change():
    base = frame(5, 0) + i32(4) + UUID_A
    assert ok(base + b"\x00").data == {"partitionId": 4, "topicId": UUID_A_TEXT}
    rec = ok(base + tags((0, carr("i", [])), (1, i32(-1)), (5, b"\x00")))
    # empty ISR differs from null; leader -1 differs from -2; recovery state 0 differs from -1
    assert rec.data == {"partitionId": 4, "topicId": UUID_A_TEXT, "isr": [], "leader": -1, "leaderRecoveryState": 0}
    assert encode_record(rec) == base + tags((0, carr("i", [])), (1, i32(-1)), (5, b"\x00"))


def test_partition_change_v2_directories_come_before_elr_in_json_but_after_on_the_wire():
    value = frame(5, 2) + i32(0) + UUID_A + tags((6, carr("i", [3])), (7, carr("i", [])), (8, uv(2) + UUID_A))
    rec = ok(value)
    assert list(rec.data) == ["partitionId", "topicId", "directories", "eligibleLeaderReplicas", "lastKnownElr"]
    assert encode_record(rec) == value


def test_edge_values_of_every_primitive():
    broker = frame(0, 1) + i32(-2**31) + UUID_A + struct.pack(">q", 2**63 - 1) + uv(2) + (
        cstr("") + cstr("h\u00e9\U0001f600") + struct.pack(">H", 65535) + struct.pack(">h", -32768) + b"\x00"
    ) + uv(2) + (cstr("metadata.version") + struct.pack(">hh", -32768, 32767) + b"\x00") + cstr(None) + b"\x00\x01" + b"\x00"
    rec = ok(broker)
    assert rec.data == {
        "brokerId": -2**31, "incarnationId": UUID_A_TEXT, "brokerEpoch": 2**63 - 1,
        "endPoints": [{"name": "", "host": "h\u00e9\U0001f600", "port": 65535, "securityProtocol": -32768}],
        "features": [{"name": "metadata.version", "minSupportedVersion": -32768, "maxSupportedVersion": 32767}],
        "rack": None, "fenced": False, "inControlledShutdown": True,
    }
    assert encode_record(rec) == broker
    # int64 minimum, null config value (= delete the key)
    assert ok(frame(1, 0) + i32(0) + struct.pack(">q", -2**63) + b"\x00").data["brokerEpoch"] == -2**63
    config = frame(4, 0) + b"\x02" + cstr("t") + cstr("retention.ms") + cstr(None) + b"\x00"
    assert ok(config).data == {"resourceType": 2, "resourceName": "t", "name": "retention.ms", "value": None}


def test_bytes_and_float_fields_render_like_kafka():
    scram = frame(11, 0) + cstr("alice") + b"\x01" + uv(1) + uv(4) + b"\x01\x02\x03" + uv(3) + b"\xff\x00" + i32(4096) + b"\x00"
    rec = ok(scram)
    assert rec.data["salt"] == b"" and rec.data["storedKey"] == b"\x01\x02\x03"
    assert rec.to_json()["data"] == {"name": "alice", "mechanism": 1, "salt": "", "storedKey": "AQID",
                                     "serverKey": "/wA=", "iterations": 4096}
    quota = frame(14, 0) + uv(2) + cstr("user") + cstr(None) + b"\x00" + cstr("k") + struct.pack(">d", 1e7) + b"\x01" + b"\x00"
    rec = ok(quota)
    assert rec.data == {"entity": [{"entityType": "user", "entityName": None}], "key": "k", "value": 1e7, "remove": True}
    assert rec.dump_text() == ('payload: {"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":'
                               '"user","entityName":null}],"key":"k","value":1.0E7,"remove":true}}')
    assert encode_record(rec) == quota


def test_fields_absent_from_a_version_are_absent_from_data():
    v0 = ok(frame(0, 0) + i32(1) + UUID_A + struct.pack(">q", 1) + uv(1) + uv(1) + cstr("r") + b"\x01" + b"\x00")
    assert "isMigratingZkBroker" not in v0.data and "inControlledShutdown" not in v0.data
    assert v0.data["fenced"] is True


def test_broker_registration_change_tags_by_version():
    base = i32(1) + struct.pack(">q", 5)
    rec = ok(frame(17, 1) + base + tags((0, b"\xff"), (1, b"\x01")))
    assert rec.data == {"brokerId": 1, "brokerEpoch": 5, "fenced": -1, "inControlledShutdown": 1}
    # tag 1 exists only from v1: Kafka's reader refuses it at v0
    assert failed(frame(17, 0) + base + tags((1, b"\x01"))) == \
        "MetadataParseException: BrokerRegistrationChangeRecord v0: field '(tagged fields)' at byte 18: " \
        "Tag 1 is not valid for version 0"


def test_begin_and_abort_transaction_nullable_tagged_strings():
    assert ok(frame(23, 0) + tags((0, cstr("bootstrap")))).data == {"name": "bootstrap"}
    assert ok(frame(23, 0) + b"\x00").data == {}
    assert ok(frame(25, 0) + tags((0, cstr("")))).data == {"reason": ""}  # "" differs from the null default


def test_retired_and_newest_api_keys_decode():
    acl = frame(6, 0) + b"\x02" + cstr(None) + b"\x03" + cstr("User:a") + cstr("*") + b"\x03\x03" + b"\x00"
    assert ok(acl).type == "ACCESS_CONTROL_RECORD" and ok(acl).data["resourceName"] is None
    assert ok(frame(16, 0) + cstr("f") + b"\x00").to_json()["type"] == "REMOVE_FEATURE_LEVEL_RECORD"
    assert ok(frame(28, 0) + cstr("") + b"\x00").to_json() == {
        "type": "CLEAR_ELR_RECORD", "version": 0, "data": {"topicName": ""}}


# --- unknown tagged fields -------------------------------------------------------------------


def test_unknown_tags_are_kept_with_their_path_and_written_back():
    value = topic_record("t", (5, b"\x01\x02"), (90000, b""))
    rec = ok(value)
    assert rec.unknown_tags == (("", 5, b"\x01\x02"), ("", 90000, b""))
    assert rec.to_json()["unknownTaggedFields"] == [{"path": "", "tag": 5, "data": "AQI="},
                                                     {"path": "", "tag": 90000, "data": ""}]
    assert encode_record(rec) == value
    assert encode_metadata(2, 0, rec.data) == topic_record("t")  # without them, they are dropped


def test_unknown_tag_inside_an_array_element_has_an_element_path():
    endpoint = cstr("PLAINTEXT") + cstr("h") + struct.pack(">Hh", 9092, 0)
    value = (frame(0, 0) + i32(1) + UUID_A + struct.pack(">q", 1) + uv(3) + endpoint + b"\x00" + endpoint
             + tags((3, b"\x07")) + uv(1) + cstr(None) + b"\x01" + tags((7, b"\xaa")))
    rec = ok(value)
    assert rec.unknown_tags == (("endPoints[1]", 3, b"\x07"), ("", 7, b"\xaa"))
    assert encode_record(rec) == value


def test_unknown_tags_merge_in_ascending_order_with_known_ones():
    value = partition_v2(elr=[1]) [:-len(tags((1, carr("i", [1]))))] + tags((0, b"\x01"), (1, carr("i", [1])), (3, b"z"))
    rec = ok(value)
    assert rec.unknown_tags == (("", 3, b"z"),)
    assert encode_record(rec) == value


# --- failure modes: precise errors, raw kept, never raises -----------------------------------


@pytest.mark.parametrize("value,error", [
    (frame(13, 0) + b"\x00", "UnsupportedVersionException: Unknown metadata id 13"),
    (frame(30, 0) + b"\x00", "UnsupportedVersionException: Unknown metadata id 30"),
    (frame(3, 3) + b"\x00", "UnsupportedVersionException: Can't read version 3 of PartitionRecord "
                            "(highest known version is 2); read as version 2, field 'partitionId' at byte 3: "
                            "needs 4 bytes, 1 left"),
    (frame(12, 1) + b"\x00", "UnsupportedVersionException: Can't read version 1 of FeatureLevelRecord "
                             "(highest known version is 0); read as version 0, field 'name' at byte 4: "
                             "non-nullable field was serialized as null"),
    (b"\x00\x14\x00\x00", "MetadataParseException: Could not deserialize metadata record with frame version 0 "
                          "(the KRaft preview format of Kafka 2.8 is not supported)"),
    (b"\x02\x14\x00\x00", "MetadataParseException: unknown frame version 2 (only frame version 1 is supported)"),
    (b"", "MetadataParseException: frame version: unsigned varint runs past the end of the data at byte 0"),
    (b"\x01\x14", "MetadataParseException: version: unsigned varint runs past the end of the data at byte 2"),
    (b"\x01" + uv(32768) + b"\x00", "MetadataParseException: Value for type was too large (32768)"),
    (b"\x01\x80\x80\x80\x80\x80\x00", "MetadataParseException: type: unsigned varint longer than 5 bytes at byte 1"),
    (NOOP_VALUE + b"\x00", "MetadataParseException: Found 1 byte(s) of garbage after NoOpRecord v0 "
                           "(body ends at byte 4)"),
    (topic_record("ab") + b"\x00\x00", "MetadataParseException: Found 2 byte(s) of garbage after TopicRecord v0 "
                                       "(body ends at byte 23)"),
])
def test_frame_and_length_errors(value, error):
    rec = decode_metadata(value)
    assert rec.error == error
    assert rec.raw == value and rec.data == {}


def test_unknown_type_keeps_its_key_and_version():
    rec = decode_metadata(frame(13, 4) + b"\x00")
    assert (rec.api_key, rec.version, rec.type) == (13, 4, "UNKNOWN")
    assert rec.to_json() == {"type": "UNKNOWN", "version": 4, "error": rec.error}
    assert rec.dump_text(offset=42) == "payload: Error at 42, skipping. Unknown metadata id 13"
    assert encode_record(rec) == rec.raw


@pytest.mark.parametrize("value,error", [
    # truncated inside a run of fixed fields: the field and its byte are named
    (topic_record("ab")[:10], "TopicRecord v0: field 'topicId' at byte 6: needs 16 bytes, 4 left"),
    (frame(1, 0) + i32(1) + b"\x00\x00", "UnregisterBrokerRecord v0: field 'brokerEpoch' at byte 7: needs 8 bytes, 2 left"),
    # truncated where a length prefix should be
    (frame(2, 0), "TopicRecord v0: field 'name' at byte 3: value runs past the end of the data"),
    (topic_record("ab")[:-1], "TopicRecord v0: field '(tagged fields)' at byte 22: value runs past the end of the data"),
    # lengths and counts larger than what is left: checked before anything is allocated
    (frame(2, 0) + uv(2**31 + 1) + b"abc", "TopicRecord v0: field 'name' at byte 8: "
                                           "length 2147483648 exceeds the 3 bytes left"),
    (frame(3, 0) + i32(0) + UUID_A + uv(2**31) + b"\x00" * 8, "PartitionRecord v0: field 'replicas' at byte 28: "
                                                               "array of 2147483647 needs at least 8589934588 bytes, 8 left"),
    (frame(3, 1) + partition_v2()[3:-50] + uv(2**32 - 1), "PartitionRecord v1: field 'directories' at byte 64: "
                                                          "array of 4294967294 needs at least 68719476704 bytes, 0 left"),
    (frame(0, 0) + i32(1) + UUID_A + struct.pack(">q", 1) + uv(2**31), "RegisterBrokerRecord v0: field 'endPoints' "
                                                                       "at byte 36: array of 2147483647 needs at least "
                                                                       "2147483647 bytes, 0 left"),
    (frame(2, 0) + uv(40000) + b"x" * 39999 + UUID_A + b"\x00", "TopicRecord v0: field 'name' at byte 6: "
                                                                 "string length 39999 is over 32767"),
    (frame(2, 0) + b"\x00" + UUID_A + b"\x00", "TopicRecord v0: field 'name' at byte 4: "
                                               "non-nullable field was serialized as null"),
    (frame(2, 0) + b"\x03\xff\xfe" + UUID_A + b"\x00", "TopicRecord v0: field 'name' at byte 4: "
                                                       "invalid UTF-8 (invalid start byte at string byte 0)"),
    (frame(2, 0) + b"\x80\x80\x80\x80\x80\x01", "TopicRecord v0: field 'name': "
                                                "unsigned varint longer than 5 bytes at byte 3"),
    # tag sections: sizes must hold, and a known tag's value must fill exactly its declared size
    (topic_record("a")[:-1] + uv(2**31), "TopicRecord v0: field '(tagged fields)' at byte 26: "
                                         "2147483648 tagged fields need at least 4294967296 bytes, 0 left"),
    (topic_record("a")[:-1] + b"\x01\x05\x09ab", "TopicRecord v0: field '(tagged fields)' at byte 24: "
                                                 "tag 5 has size 9, 2 bytes left"),
    (partition_v2()[:-1] + tags((0, b"\x01\x00")), "PartitionRecord v2: field 'leaderRecoveryState' at byte 112: "
                                                   "tag 0 declares 2 bytes, its value took 1"),
    (partition_v2()[:-1] + tags((1, uv(3) + i32(1)), (9, i32(0))), "PartitionRecord v2: field "
                                                                   "'eligibleLeaderReplicas' at byte 120: "
                                                                   "tag 1 declares 5 bytes, its value took 9"),
])
def test_body_errors_name_the_field_and_the_byte(value, error):
    assert failed(value) == "MetadataParseException: " + error


def test_errors_inside_nested_structs_name_the_element():
    endpoint = cstr("PLAINTEXT") + b"\x03\xc3\x28" + struct.pack(">Hh", 9092, 0) + b"\x00"
    value = frame(27, 0) + i32(1) + UUID_A + b"\x00" + uv(2) + endpoint + uv(1) + b"\x00"
    assert failed(value) == ("MetadataParseException: RegisterControllerRecord v0: field 'endPoints[0].host' "
                             "at byte 36: invalid UTF-8 (invalid continuation byte at string byte 0)")
    truncated = frame(27, 0) + i32(1) + UUID_A + b"\x00" + uv(2) + cstr("C") + cstr("h") + b"\x23"
    assert failed(truncated).endswith("field 'endPoints[0].port' at byte 29: needs 2 bytes, 1 left")


def test_null_value_is_an_error_not_an_exception():
    rec = decode_metadata(None)
    assert rec.error == "MetadataParseException: the record value is null" and rec.raw == b""


# --- encoding --------------------------------------------------------------------------------


def test_encode_accepts_api_key_enum_name_and_spec_name():
    data = {"name": "foo", "topicId": UUID_A_TEXT}
    assert encode_metadata(2, 0, data) == encode_metadata("TOPIC_RECORD", 0, data) \
        == encode_metadata("TopicRecord", 0, data) == topic_record("foo")
    assert message_of("PARTITION_RECORD").api_key == 3


def test_encode_fills_defaults_for_missing_fields():
    rec = ok(encode_metadata("PARTITION_RECORD", 0, {}))
    assert rec.data == {"partitionId": -1, "topicId": ZERO_UUID_TEXT, "replicas": [], "isr": [],
                        "removingReplicas": [], "addingReplicas": [], "leader": -1, "leaderEpoch": -1,
                        "partitionEpoch": -1}
    assert ok(encode_metadata("REGISTER_BROKER_RECORD", 0, {})).data["fenced"] is True


@pytest.mark.parametrize("args,message", [
    ((2, 0, {"name": "x", "bogus": 1}), "TopicRecord v0: no such field in this version: ['bogus']"),
    ((3, 0, {"eligibleLeaderReplicas": []}), "no such field in this version: ['eligibleLeaderReplicas']"),
    ((1, 0, {"brokerId": 2**31}), "UnregisterBrokerRecord v0: field 'brokerId': "),
    ((2, 0, {"name": None}), "TopicRecord v0: field 'name': null is not allowed in this version"),
    ((2, 0, {"name": "x" * 40000}), "TopicRecord v0: field 'name': string of 40000 bytes is over 32767"),
    ((2, 0, {"topicId": "short"}), "TopicRecord v0: field 'topicId': not a uuid text"),
    ((2, 0, {"topicId": "!" * 22}), "TopicRecord v0: field 'topicId': not a uuid text"),
    ((0, 0, {"endPoints": [{"port": 70000}]}), "RegisterBrokerRecord v0: field 'endPoints[0].port'"),
    ((3, 3, {}), "PartitionRecord has no version 3"),
    ((13, 0, {}), "unknown metadata record type 13"),
])
def test_encode_rejects_data_that_does_not_fit(args, message):
    with pytest.raises(ValueError) as info:
        encode_metadata(*args)
    assert message in str(info.value)


def test_every_declared_record_and_version_encodes_its_defaults_and_decodes_back():
    count = 0
    for message in METADATA_RECORDS:
        for version in message.valid_versions:
            value = encode_metadata(message.api_key, version, {})
            rec = ok(value)
            assert (rec.api_key, rec.version) == (message.api_key, version)
            assert encode_record(rec) == value
            count += 1
    assert len(METADATA_RECORDS) == 29 and count == 38  # keys 0-29 without 13; versions as in section 3.1


# --- versions newer than the table (issue 17's rule) ------------------------------------------


def newer(api_key: int, version: int, data: dict, tags=()) -> bytes:
    """A value of ``version`` + 1: the body at ``version`` with extra tagged fields, as Kafka adds fields."""
    value = encode_metadata(api_key, version, data, tags)
    return value[:2] + bytes([version + 1]) + value[3:]


def test_a_newer_version_with_an_extra_tagged_field_is_decoded_at_the_highest_known_and_marked():
    value = newer(0, 3, {"brokerId": 4, "brokerEpoch": 7, "fenced": False}, [("", 1, b"\x02\x01\x02")])
    rec = ok(value)
    assert (rec.version, rec.decoded_as) == (4, 3)
    assert rec.data["brokerId"] == 4 and rec.data["fenced"] is False
    assert rec.unknown_tags == (("", 1, b"\x02\x01\x02"),)
    j = rec.to_json()
    assert j["version"] == 4 and j["decodedAs"] == 3 and j["unknownTaggedFields"][0]["tag"] == 1
    assert rec.dump_text(9).endswith("(RegisterBrokerRecord v4 is newer than kraftlog knows: decoded as v3, "
                                     "1 unknown tagged field(s) kept raw)")
    assert encode_record(rec) == value


def test_a_newer_version_whose_fixed_layout_changed_is_kept_raw_with_the_reason():
    value = newer(1, 0, {"brokerId": 4, "brokerEpoch": 7})[:-1] + b"\x00\x00\x00\x05\x00"  # an int32 more
    rec = decode_metadata(value)
    assert rec.error == ("UnsupportedVersionException: Can't read version 1 of UnregisterBrokerRecord (highest "
                         "known version is 0); read as version 0, 4 byte(s) are left after its body (ends at byte 16)")
    assert rec.raw == value and rec.data == {} and rec.decoded_as is None


def test_a_newer_secret_carrying_record_is_still_redacted():
    from kraftlog.schema import REDACTED, redact
    value = newer(4, 0, {"resourceType": 2, "resourceName": "t", "name": "sasl.jaas.config", "value": "pw"},
                  [("", 0, b"\x01")])
    shown = redact(ok(value))
    assert shown.data["value"] == REDACTED and shown.decoded_as == 0
    assert shown.unknown_tags == (("", 0, "<redacted 1 bytes>"),)  # where a field was, not its bytes
    assert shown.to_json()["decodedAs"] == 0


def test_unregister_controller_record_is_api_key_29():
    """apache/kafka@4425e970 metadata/src/main/resources/common/metadata/UnregisterControllerRecord.json."""
    value = encode_metadata(29, 0, {"controllerId": 3000})
    assert value == frame(29, 0) + i32(3000) + b"\x00"
    rec = ok(value)
    assert rec.type == "UNREGISTER_CONTROLLER_RECORD" and rec.data == {"controllerId": 3000}


@pytest.fixture
def fresh_cache(monkeypatch):
    """``decode_metadata``'s cache as a new process has it, smaller (the tests fill it)."""
    monkeypatch.setattr(records, "_recent", {})
    monkeypatch.setattr(records, "_full", 4)
    monkeypatch.setattr(records, "_RECENT_ENTRIES", 4)
    monkeypatch.setattr(records, "_RARE_FULL", 8)
    monkeypatch.setattr(records, "_RECENT_VALUE_BYTES", 64)
    monkeypatch.setattr(records, "_PAYS", 2)
    monkeypatch.setattr(records, "_REST", 8)
    monkeypatch.setattr(records, "_hits", 0)
    monkeypatch.setattr(records, "_resting", 0)


def _fences(n: int, start: int = 0) -> list[bytes]:
    return [encode_metadata("FENCE_BROKER_RECORD", 0, {"id": i, "epoch": 7}) for i in range(start, start + n)]


def _cached() -> set[bytes]:
    return set(records._recent)


def test_a_value_decoded_again_is_the_same_record_in_any_buffer(fresh_cache):
    value = _fences(1)[0]
    first = decode_metadata(value)
    assert decode_metadata(bytes(value)) is first  # another bytes object of the same value
    assert decode_metadata(bytearray(value)) is first and decode_metadata(memoryview(bytearray(value))) is first
    assert first.data == {"id": 0, "epoch": 7} and first == records._decode_metadata(value)
    assert decode_metadata(NOOP_VALUE) is decode_metadata(NOOP_VALUE)
    assert decode_metadata(None).error == "MetadataParseException: the record value is null"


@pytest.fixture
def rare_full_collections():
    """Full collections rarer, as a reader or a replay makes them while it runs."""
    before = gc.get_threshold()
    gc.set_threshold(before[0], before[1], before[2] * 100)
    yield
    gc.set_threshold(*before)


def test_the_cache_keeps_about_the_most_recent_values_and_is_bounded(fresh_cache, rare_full_collections):
    """While full collections are rare, up to ``_RARE_FULL`` values; when full, the ``_RECENT_ENTRIES``
    decoded last are kept (a value found again is not moved); a value over ``_RECENT_VALUE_BYTES`` is not
    kept. What it gives is what decoding gives."""
    values = _fences(12)
    first = [decode_metadata(v) for v in values[:8]]  # full: eight
    assert list(records._recent) == values[:8]
    assert decode_metadata(values[0]) is first[0] and decode_metadata(values[5]) is first[5]
    decode_metadata(values[8])
    assert list(records._recent) == values[4:9]  # the four decoded last kept, then the new one
    assert decode_metadata(values[5]) is first[5] and decode_metadata(values[0]) is not first[0]
    assert list(records._recent) == [*values[4:9], values[0]]
    assert [decode_metadata(v) for v in values] == [records._decode_metadata(v) for v in values]
    big = encode_metadata("TOPIC_RECORD", 0, {"name": "t" * 80, "topicId": "3ql6QVjQQWKGtGd-HqfNxA"})
    assert decode_metadata(big) == decode_metadata(big) and big not in _cached()
    for v in _fences(100, start=50):
        decode_metadata(v)
        assert len(records._recent) <= 8


def test_with_full_collections_as_usual_the_cache_keeps_one_generation(fresh_cache):
    """Each full collection would visit the records kept: with the usual thresholds a full generation
    is dropped, not kept as the older one."""
    values = _fences(9)
    first = [decode_metadata(v) for v in values for _ in range(2)][::2]  # each seen twice: the fills pay
    assert _cached() == {values[8]} and records._resting == 0
    assert decode_metadata(values[0]) is not first[0] and decode_metadata(values[0]) == first[0]


def test_values_that_do_not_repeat_are_not_kept_with_the_usual_thresholds(fresh_cache, monkeypatch):
    """A fill hardly hit (the columnar walks of a dense log decode each distinct value of a walk once):
    the next ``_REST`` values are decoded without being kept, then the cache fills again; while full
    collections are rare it keeps them all the same. Decoded values are the same either way."""
    values = _fences(5)
    assert [decode_metadata(v) for v in values] == [records._decode_metadata(v) for v in values]
    assert _cached() == set() and records._resting == records._REST
    rest = _fences(records._REST, start=len(values))
    assert [decode_metadata(v).data["id"] for v in rest] == [len(values) + i for i in range(len(rest))]
    assert _cached() == set() and records._resting == 0
    assert decode_metadata(values[0]) is decode_metadata(values[0]) is records._recent[values[0]]
    monkeypatch.setattr(records, "_resting", 5)
    before = gc.get_threshold()
    gc.set_threshold(before[0], before[1], before[2] * 100)
    try:
        assert decode_metadata(values[1]) is decode_metadata(values[1]) and records._resting == 5
    finally:
        gc.set_threshold(*before)


def test_the_walk_and_the_reader_share_one_cache(fresh_cache, tmp_path):
    """``files.records`` decodes the walk's values through ``decode_metadata``: a value read both ways is
    one record, held once."""
    from kraftlog.files.paths import LogFile
    from kraftlog.files.records import iter_entries, iter_items
    from kraftlog.synth.writer import data_batch

    values = _fences(3)
    seg = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    seg.write_bytes(data_batch(values, 0, 0, 0))
    lf = LogFile(seg, "segment", 0)
    walked = [e.record for block in iter_items(lf) for e in block.entries()]
    read = [e.record for e in iter_entries(lf)]
    assert [r.data["id"] for r in walked] == [0, 1, 2]
    assert all(a is b is decode_metadata(v) for a, b, v in zip(walked, read, values, strict=True))
    assert _cached() == set(values)


def test_whole_value_decoders_are_kept_for_record_frames_only():
    """Values whose first three bytes are no record frame of one-byte varints (noise, a frame version
    other than 1, two-byte api keys) leave nothing behind; the frames kept are at most 128 x 128."""
    before = dict(records._wholes)
    for i in range(2000):
        decode_metadata(bytes((i % 250 + 2, 0x80 | i % 128, i % 7)) + b"noise")
        decode_metadata(bytes((1, 0x80 | i % 128, 1, i % 5)))
    assert records._wholes == before
    assert decode_metadata(bytes((1, 120, 0, 0))).error == "UnsupportedVersionException: Unknown metadata id 120"
    assert records._wholes[bytes((1, 120, 0))] is None and len(records._wholes) <= 128 * 128
