"""dump for people: type/offset/topic/broker filters, NoOp skipping, redaction and --stats."""

import json

import pytest

from conftest import CORPUS
from kraftlog.cli.main import main

LOG = CORPUS / "kafka-serde/metadata/out/__cluster_metadata-0/00000000000000000000.log"
pytestmark = pytest.mark.skipif(not LOG.exists(), reason="the shared corpus (../shared/corpus) is absent")


def records(capsys, *extra) -> list[dict]:
    assert main(["dump", "--format", "jsonl", str(LOG), *extra]) == 0
    return [x for x in map(json.loads, capsys.readouterr().out.splitlines()) if x["kind"] == "record"]


def _types(rows):
    return [(r.get("metadata") or r.get("control"))["type"] for r in rows]


def test_no_filter_shows_all_39_records(capsys):
    assert len(records(capsys)) == 39


@pytest.mark.parametrize("spelling", ["CONFIG_RECORD", "ConfigRecord", "4"])
def test_type_filter_spellings(capsys, spelling):
    assert _types(records(capsys, "--type", spelling)) == ["CONFIG_RECORD"] * 10


def test_control_type_and_offset_range(capsys):
    assert _types(records(capsys, "--type", "LEADER_CHANGE")) == ["LEADER_CHANGE"]
    assert [r["offset"] for r in records(capsys, "--offset-range", "3:5")] == [3, 4, 5]


def test_skip_noop(capsys):
    rows = records(capsys, "--skip-noop")
    assert len(rows) == 34 and "NO_OP_RECORD" not in _types(rows)


def test_topic_filter_by_name_follows_its_id(capsys):
    rows = records(capsys, "--topic", "orders")
    kinds = _types(rows)
    assert kinds.count("TOPIC_RECORD") == 1 and kinds.count("PARTITION_RECORD") == 3
    assert all(r["metadata"]["data"].get("resourceName", "orders") == "orders" for r in rows)


def test_broker_filter(capsys):
    rows = records(capsys, "--broker", "1")
    assert set(_types(rows)) >= {"REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD"}
    assert "TOPIC_RECORD" not in _types(rows)


def test_secrets_are_redacted_by_default(capsys):
    [scram] = records(capsys, "--type", "USER_SCRAM_CREDENTIAL_RECORD")
    data = scram["metadata"]["data"]
    assert data["salt"] == data["storedKey"] == data["serverKey"] == "[redacted]"
    assert data["name"] == "alice"
    [raw] = records(capsys, "--type", "USER_SCRAM_CREDENTIAL_RECORD", "--no-redact")
    assert raw["metadata"]["data"]["salt"] != "[redacted]"


def test_stats(capsys):
    assert main(["dump", "--stats", "--format", "jsonl", str(LOG)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["batches"], stats["records"], stats["bytes"]) == (21, 39, LOG.stat().st_size)
    counts = {(t["type"], t["version"]): t["records"] for t in stats["types"]}
    assert counts[("CONFIG_RECORD", 0)] == 10 and counts[("NO_OP_RECORD", 0)] == 5
    assert stats["noopShare"] == round(5 / 39, 4)
    assert stats["batchSize"]["min"] == 72 and stats["batchSize"]["max"] == 359


def test_unknown_type_is_a_usage_error(capsys):
    assert main(["dump", "--type", "NoSuchRecord", str(LOG)]) == 2
    assert "unknown record type" in capsys.readouterr().err
