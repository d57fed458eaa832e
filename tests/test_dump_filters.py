"""dump for people: type/offset/topic/broker filters, NoOp skipping, redaction and --stats."""

import json
import shutil

import pytest

from conftest import CORPUS
from kraftlog.cli.main import main
from kraftlog.files.paths import classify

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


# -- a log dir after retention: the TopicRecord survives only in a snapshot ----------------------


def _rows(capsys, *args) -> tuple[int, list[dict], str]:
    """Exit code, JSON rows (records carry the file they came from) and stderr of one dump."""
    status = main(["dump", "--format", "jsonl", *args])
    captured = capsys.readouterr()
    rows, file = [], None
    for row in map(json.loads, captured.out.splitlines()):
        if row["kind"] == "file":
            file = row["path"].rsplit("/", 1)[-1]
        elif row["kind"] == "record":
            rows.append(dict(row, file=file))
    return status, rows, captured.err


@pytest.fixture(scope="module")
def retained(tmp_path_factory):
    """A generated log dir in full, and a copy whose segments before the one holding the first
    snapshot's offset are deleted, as retention leaves it: that segment starts before the snapshot."""
    full = tmp_path_factory.mktemp("retention") / "full"
    assert main(["generate", str(full), "--duration", "2h", "--segment-bytes", "64KiB", "--snapshot-interval", "20m",
                 "--seed", "7"]) == 0
    kept = full.parent / "kept"
    shutil.copytree(full, kept)
    meta = kept / "__cluster_metadata-0"
    first_snapshot = min(classify(p).offset for p in meta.glob("*.checkpoint"))
    segments = sorted(classify(p).offset for p in meta.glob("*.log"))
    straddling = max(o for o in segments if o <= first_snapshot)
    assert 0 < straddling < first_snapshot  # the layout the filter must handle
    deleted = set()
    for p in meta.glob("*.log"):
        if classify(p).offset < straddling:
            p.unlink()
            deleted.add(p.name)
    return full, kept, deleted


@pytest.mark.parametrize("extra", [(), ("--type", "PartitionChangeRecord")])
@pytest.mark.parametrize("topic", ["metrics", "users", "shipments"])
def test_topic_filter_after_retention_finds_every_record(capsys, retained, topic, extra):
    """Equal to the full log's filter over the files kept: the ids are learned from the snapshot."""
    full, kept, deleted = retained
    status, everything, _ = _rows(capsys, str(full), "--topic", topic, *extra)
    assert status == 0
    expected = [(r["file"], r["offset"]) for r in everything if r["file"] not in deleted]
    status, rows, err = _rows(capsys, str(kept), "--topic", topic, *extra)
    assert (status, err) == (0, "")
    assert [(r["file"], r["offset"]) for r in rows] == expected
    assert len(expected) > 10 and any(r["file"].endswith(".log") for r in rows)


def test_topic_name_never_named_is_refused(capsys, retained):
    status, rows, err = _rows(capsys, str(retained[1]), "--topic", "no-such-topic")
    assert status == 1 and rows == []
    assert err.strip().splitlines() == [err.strip()] and "no TopicRecord in the files read names it" in err


def test_single_segment_resolves_from_itself(capsys, retained):
    """A segment given alone: names it creates resolve; names created before it are refused."""
    full, kept, _ = retained
    first = full / "__cluster_metadata-0" / "00000000000000000000.log"
    status, rows, err = _rows(capsys, str(first), "--topic", "metrics")
    assert (status, err) == (0, "") and rows[0]["metadata"]["type"] == "TOPIC_RECORD"
    later = min((kept / "__cluster_metadata-0").glob("*.log"))
    status, rows, err = _rows(capsys, str(later), "--topic", "metrics")
    assert status == 1 and rows == [] and "metrics" in err


def test_topic_id_needs_no_resolution(capsys, retained):
    full, kept, _ = retained
    _, named, _ = _rows(capsys, str(kept), "--topic", "metrics", "--type", "TopicRecord")
    tid = named[0]["metadata"]["data"]["topicId"]
    status, by_id, err = _rows(capsys, str(kept), "--topic", tid)
    _, by_name, _ = _rows(capsys, str(kept), "--topic", "metrics")
    assert (status, err) == (0, "") and by_id == [r for r in by_name if "topicId" in r["metadata"]["data"]]


# -- --broker names partitions too ---------------------------------------------------------------


def test_broker_filter_matches_partition_records_naming_it(capsys, retained):
    full = retained[0]
    _, everything, _ = _rows(capsys, str(full), "--type", "PartitionRecord", "--type", "PartitionChangeRecord")
    fields = ("leader", "replicas", "isr", "eligibleLeaderReplicas", "lastKnownElr", "addingReplicas",
              "removingReplicas")

    def names(data: dict, broker: int) -> bool:
        return any(data.get(f) == broker or broker in (data.get(f) or [] if isinstance(data.get(f), list) else [])
                   for f in fields)

    expected = [(r["file"], r["offset"]) for r in everything if names(r["metadata"]["data"], 2)]
    status, rows, _ = _rows(capsys, str(full), "--broker", "2", "--type", "PartitionRecord",
                            "--type", "PartitionChangeRecord")
    assert status == 0 and len(expected) > 20
    assert [(r["file"], r["offset"]) for r in rows] == expected
    # most PartitionChangeRecords carry only the ISR: matched through it, not through replicas
    assert any("replicas" not in r["metadata"]["data"] and "leader" not in r["metadata"]["data"] for r in rows)


# -- a log dir: its metadata log, not its data partitions -----------------------------------------

LOG_DIR = CORPUS / "real/AdiletBatyrbayev0520__air_analyzer/kafka-data/data"


def _stats(capsys, *args) -> tuple[int, list[dict], str]:
    status = main(["dump", "--stats", "--format", "jsonl", *args])
    captured = capsys.readouterr()
    return status, [json.loads(line) for line in captured.out.splitlines()], captured.err


def test_log_dir_dumps_its_metadata_log_only(capsys):
    metadata = [p for p in LOG_DIR.rglob("*") if classify(p).kind != "other" and classify(p).is_metadata]
    expected = sum(_stats(capsys, str(p))[1][0]["records"] for p in metadata)
    status, stats, err = _stats(capsys, str(LOG_DIR))
    assert status == 0 and [(s["log"], s["records"]) for s in stats] == [("metadata", expected)]
    assert expected == 13254 + 7 + 71 + 5  # the segment, two snapshots and bootstrap.checkpoint
    assert "left out 2 data partition folders" in err
    status, stats, _ = _stats(capsys, str(LOG_DIR), "--all-partitions")
    assert [(s["log"], s["records"]) for s in stats] == [("metadata", expected), ("data", 9 + 8)]


def test_a_named_data_partition_is_dumped(capsys):
    status, stats, err = _stats(capsys, str(LOG_DIR / "i111-0"))
    assert (status, err) == (0, "") and [(s["log"], s["records"]) for s in stats] == [("data", 8)]


def test_a_log_dir_without_a_metadata_log_is_refused(capsys, tmp_path):
    """A ZooKeeper-mode log dir: no metadata log, only data partitions; a usage error, not an empty dump."""
    zk = CORPUS / "real/iechenyb__data/kafka-logs"
    assert main(["dump", str(zk)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "outside its 3 data partition folders" in err


def test_stats_count_what_the_filters_keep(capsys, retained):
    kept = retained[1]
    _, rows, _ = _rows(capsys, str(kept), "--topic", "metrics", "--type", "PartitionChangeRecord")
    status, stats, err = _stats(capsys, str(kept), "--topic", "metrics", "--type", "PartitionChangeRecord")
    assert (status, err) == (0, "") and len(rows) > 10
    [s] = stats
    assert s["records"] == len(rows) and [t["type"] for t in s["types"]] == ["PARTITION_CHANGE_RECORD"]


def test_topic_filter_on_a_real_log_dir_after_retention(capsys):
    """FrankXu0908__data_enginnering: the segment starts before the snapshot that names sensor-data
    (kraftlog used to find 2 of its 31 records there, and no PartitionChangeRecord)."""
    root = CORPUS / "real/FrankXu0908__data_enginnering"
    _, everything, _ = _rows(capsys, str(root))
    ids = {r["metadata"]["data"]["topicId"] for r in everything
           if r.get("metadata", {}).get("type") == "TOPIC_RECORD" and r["metadata"]["data"]["name"] == "sensor-data"}

    def about(r: dict) -> bool:
        data = (r.get("metadata") or {}).get("data") or {}
        return data.get("topicId") in ids or (data.get("resourceType") == 2 and data.get("resourceName") == "sensor-data")

    expected = [(r["file"], r["offset"]) for r in everything if about(r)]
    status, rows, err = _rows(capsys, str(root), "--topic", "sensor-data")
    assert status == 0 and "cannot" not in err
    assert [(r["file"], r["offset"]) for r in rows] == expected and len(expected) == 31
    _, changes, _ = _rows(capsys, str(root), "--topic", "sensor-data", "--type", "PartitionChangeRecord")
    assert len(changes) == sum(r["metadata"]["type"] == "PARTITION_CHANGE_RECORD" for r in rows) > 0
