"""Control records built byte by byte from reference section 1.7, and their failure modes."""

import base64
import struct

import pytest

from kraftlog.schema import decode_control, encode_control

UUID_B = bytes(range(100, 116))
UUID_B_TEXT = base64.urlsafe_b64encode(UUID_B).rstrip(b"=").decode()


def key(type_id: int, key_version: int = 0) -> bytes:
    return struct.pack(">hh", key_version, type_id)


def cstr(s: str) -> bytes:
    return bytes((len(s.encode()) + 1,)) + s.encode()


def test_snapshot_header_footer_and_kraft_version():
    header = decode_control(key(3), b"\x00\x00" + struct.pack(">q", 1_700_000_000_499) + b"\x00")
    assert header.to_json() == {"type": "SNAPSHOT_HEADER", "typeId": 3, "version": 0,
                                "data": {"version": 0, "lastContainedLogTimestamp": 1_700_000_000_499}}
    assert header.dump_text() == 'SnapshotHeader {"version":0,"lastContainedLogTimestamp":1700000000499}'
    footer = decode_control(key(4), b"\x00\x00\x00")
    assert footer.dump_text() == 'SnapshotFooter {"version":0}'
    kraft = decode_control(key(5), b"\x00\x00\x00\x01\x00")
    assert kraft.data == {"version": 0, "kRaftVersion": 1}
    assert kraft.dump_text() == 'KRaftVersion {"version":0,"kRaftVersion":1}'


def test_voters_record_nested_structs_and_unknown_tag_paths():
    endpoint = cstr("CONTROLLER") + cstr("h") + struct.pack(">H", 9093) + b"\x01\x02\x01\xee"  # unknown tag 2
    voter = struct.pack(">i", 3) + UUID_B + b"\x02" + endpoint + struct.pack(">hh", 0, 1) + b"\x00" + b"\x00"
    rec = decode_control(key(6), b"\x00\x00" + b"\x02" + voter + b"\x00")
    assert rec.error is None
    assert rec.data == {"version": 0, "voters": [{
        "voterId": 3, "voterDirectoryId": UUID_B_TEXT,
        "endpoints": [{"name": "CONTROLLER", "host": "h", "port": 9093}],
        "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}
    assert rec.dump_text().startswith('KRaftVoters {"version":0,"voters":[{"voterId":3,')


def test_leader_change_v0_and_v1():
    v0 = b"\x00\x00" + struct.pack(">i", 2) + b"\x02" + struct.pack(">i", 2) + b"\x00" + b"\x01" + b"\x00"
    rec = decode_control(key(2), v0)
    assert rec.to_json()["data"] == {"version": 0, "leaderId": 2, "voters": [{"voterId": 2}], "grantingVoters": []}
    assert rec.dump_text() == "controlType: LEADER_CHANGE(2)"  # kafka-dump-log does not decode it
    v1 = b"\x00\x01" + struct.pack(">i", 2) + b"\x02" + struct.pack(">i", 2) + UUID_B + b"\x00" + b"\x01" + b"\x00"
    rec = decode_control(key(2), v1)
    assert rec.value_version == 1
    assert rec.data["voters"] == [{"voterId": 2, "voterDirectoryId": UUID_B_TEXT}]
    assert encode_control("LEADER_CHANGE", rec.data) == (key(2), v1)


def test_end_txn_markers():
    commit = decode_control(key(1), struct.pack(">hi", 0, 11))
    assert commit.to_json() == {"type": "COMMIT", "typeId": 1, "version": 0,
                                "data": {"version": 0, "coordinatorEpoch": 11}}
    assert commit.dump_text() == "endTxnMarker: COMMIT coordinatorEpoch: 11"
    assert decode_control(key(0), struct.pack(">hi", 0, -1)).dump_text() == "endTxnMarker: ABORT coordinatorEpoch: -1"
    # a higher marker version is read as v0, extra bytes and all
    newer = decode_control(key(0), struct.pack(">hi", 3, 7) + b"future")
    assert newer.error is None and newer.data == {"version": 3, "coordinatorEpoch": 7}


def test_higher_key_version_is_read_as_v0():
    rec = decode_control(key(4, key_version=1) + b"extra", b"\x00\x00\x00")
    assert rec.error is None and rec.to_json()["version"] == 1 and rec.type == "SNAPSHOT_FOOTER"


def test_unknown_type_keeps_the_value_as_base64():
    rec = decode_control(key(7), b"\x01\x02\x03")
    assert rec.to_json() == {"type": "UNKNOWN", "typeId": 7, "version": 0, "data": "AQID"}
    assert rec.dump_text() == "controlType: UNKNOWN(7)"


@pytest.mark.parametrize("k,value,error", [
    (b"\x00\x00\x03", b"\x00\x00\x00", "InvalidRecordException: Invalid record size: expected to read 4 bytes in "
                                       "control record key, but found only 3"),
    (key(4, key_version=-1), b"\x00\x00\x00", "InvalidRecordException: Invalid version found for control record: -1. "
                                              "May indicate data corruption"),
    (key(4), None, "InvalidRecordException: SNAPSHOT_FOOTER control record has a null value"),
    (key(4), b"\x00", "InvalidRecordException: SnapshotFooterRecord of 1 bytes has no version"),
    (key(4), b"\x00\x01\x00", "UnsupportedVersionException: Can't read version 1 of SnapshotFooterRecord"),
    (key(2), b"\x00\x02", "UnsupportedVersionException: Can't read version 2 of LeaderChangeMessage"),
    (key(4), b"\x00\x00\x00\x00", "InvalidRecordException: Found 1 byte(s) of garbage after SnapshotFooterRecord v0 "
                                  "(body ends at byte 3)"),
    (key(3), b"\x00\x00\x00\x00\x01", "InvalidRecordException: SnapshotHeaderRecord v0: field "
                                      "'lastContainedLogTimestamp' at byte 2: needs 8 bytes, 3 left"),
    (key(6), b"\x00\x00\x02" + struct.pack(">i", 1) + UUID_B + b"\x02\x03\xff\xff",
     "InvalidRecordException: VotersRecord v0: field 'voters[0].endpoints[0].name' at byte 25: "
     "invalid UTF-8 (invalid start byte at string byte 0)"),
    (key(6), b"\x00\x00\xff\xff\xff\xff\x0f", "InvalidRecordException: VotersRecord v0: field 'voters' at byte 7: "
                                              "array of 4294967294 needs at least 4294967294 bytes, 0 left"),
    (key(1), b"\x00\x00\x00", "InvalidRecordException: Invalid end transaction marker of 3 bytes, expected 6"),
    (key(1), struct.pack(">hi", -1, 0), "InvalidRecordException: Invalid version found for end transaction marker: -1. "
                                        "May indicate data corruption"),
    (key(1), struct.pack(">hi", 0, 0) + b"\x00", "InvalidRecordException: Found 1 byte(s) of garbage after end "
                                                 "transaction marker v0"),
])
def test_failures_are_reported_not_raised(k, value, error):
    rec = decode_control(k, value)
    assert rec.error == error and rec.data is None
    assert rec.to_json()["error"] == error


def test_encode_control_round_trips_every_type():
    cases = [
        ("ABORT", {"version": 0, "coordinatorEpoch": 5}),
        ("COMMIT", {"version": 0, "coordinatorEpoch": -7}),
        ("LEADER_CHANGE", {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}], "grantingVoters": [{"voterId": 1}]}),
        ("SNAPSHOT_HEADER", {"version": 0, "lastContainedLogTimestamp": -1}),
        ("SNAPSHOT_FOOTER", {"version": 0}),
        ("KRAFT_VERSION", {"version": 0, "kRaftVersion": 1}),
        ("KRAFT_VOTERS", {"version": 0, "voters": [{"voterId": 1, "voterDirectoryId": UUID_B_TEXT, "endpoints": [
            {"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093}],
            "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}),
    ]
    for name, data in cases:
        k, v = encode_control(name, data)
        rec = decode_control(k, v)
        assert rec.error is None and rec.type == name and rec.data == data
    assert encode_control("SNAPSHOT_FOOTER", {"version": 0}) == (key(4), b"\x00\x00\x00")
    with pytest.raises(ValueError, match="unknown control record type"):
        encode_control("NOPE", {})
    with pytest.raises(ValueError, match="KRAFT_VERSION: field 'kRaftVersion'"):
        encode_control("KRAFT_VERSION", {"version": 0, "kRaftVersion": 1 << 20})
