"""What ``scripts/fuzz.py`` and the review around it found, each as a small constructed input (no
corpus bytes), plus bounded hypothesis properties that generalise them and a short run of every
fuzz target. The resynchronisation found quadratic is tested in ``test_limits.py``.
"""

import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlog.cli.main import main
from kraftlog.cli.render import iso_time
from kraftlog.files.logdir import find_nodes
from kraftlog.schema import decode_metadata, encode_metadata, entity_of
from kraftlog.state import ClusterImage, diff, metadata_response, render_tree
from kraftlog.state.image import Provenance
from kraftlog.state.tree import provenance_text
from kraftlog.wire.batch import Record, encode_batch

NOOP = encode_metadata("NO_OP_RECORD", 0, {})
TOPIC_ID = "3ql6QVjQQWKGtGd-HqfNxA"
SETTINGS = settings(max_examples=200, deadline=None)
FUZZ = Path(__file__).resolve().parent.parent / "scripts" / "fuzz.py"


def _batch(values: list[bytes], *, base_offset: int = 0, timestamp: int = 1_700_000_000_000) -> bytes:
    recs = [Record(0, 0, None, v, (), 0, 0, i) for i, v in enumerate(values)]
    return encode_batch(recs, base_offset=base_offset, base_timestamp=timestamp, partition_leader_epoch=1)


def _node_dir(tmp_path: Path, data: bytes) -> Path:
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir(exist_ok=True)
    (d / "00000000000000000000.log").write_bytes(data)
    return d


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        status = main(list(argv))
    return status, out.getvalue()


def _image(*values: bytes) -> ClusterImage:
    image = ClusterImage.empty()
    for offset, v in enumerate(values):
        image.apply(decode_metadata(v), offset)
    return image


def _render_all(image: ClusterImage) -> None:
    """Everything the replay, metadata and diff commands print of an image."""
    json.dumps(image.to_json(redact=False))
    json.dumps(image.to_json())
    render_tree(image)
    json.dumps(metadata_response(image))
    diff(ClusterImage.empty(), image)


# --- fuzz (cli target): a CRC-valid batch whose timestamp is past year 9999 -------------------------


def test_dump_stats_and_inspect_survive_a_timestamp_past_year_9999(tmp_path):
    """ValueError "year 289995635 is out of range" in ``render.iso_time`` (dump --stats, inspect)."""
    far = 9_151_314_442_816_847_871
    path = _node_dir(tmp_path, _batch([NOOP], timestamp=far)) / "00000000000000000000.log"
    for argv in (["dump", "--stats", str(path)], ["inspect", str(tmp_path)],
                 ["inspect", "--format", "json", str(tmp_path)]):
        status, out = _cli(*argv)
        assert status in (0, 1), argv
        assert f"{far} ms" in out, argv


# --- fuzz (replay target): a record time out of Python's date range ---------------------------------


def test_tree_prints_a_provenance_time_out_of_date_range():
    """OverflowError in ``tree.provenance_text`` for a record time near 2**63 ms."""
    for ms in (2**63 - 1, -(2**63), 253_402_300_800_000):
        assert provenance_text(Provenance(7, 1, ms)).endswith(f"time {ms} ms since the epoch")
    assert provenance_text(Provenance(7, 1, -1)).endswith("time 1969-12-31T23:59:59.999Z[UTC]")
    image = ClusterImage.empty()
    image.apply(decode_metadata(NOOP), 7, 2**63 - 1, 1)
    assert "ms since the epoch" in render_tree(image)


@SETTINGS
@given(st.integers(-(2**63), 2**63 - 1))
def test_any_timestamp_renders(ms):
    assert iso_time(ms) is None or str(ms) in iso_time(ms) or iso_time(ms).endswith("Z")
    assert provenance_text(Provenance(0, 0, ms)).startswith("offset 0, epoch 0, time ")


# --- review: names that look like numbers to str.isdigit but not to int() ---------------------------


@pytest.mark.parametrize("name", ["²", "--5", "1" * 5000, "-²"])
def test_a_config_resource_named_like_a_number_replays_and_renders(name):
    """ValueError from int() in ``ids.key_order`` (image to_json, diff) and ``entity_of`` (dump filters)."""
    value = encode_metadata("CONFIG_RECORD", 0, {"resourceType": 4, "resourceName": name, "name": "num.io.threads",
                                                 "value": "1"})
    assert entity_of(decode_metadata(value))["broker_id"] is None
    image = _image(value)
    _render_all(image)
    assert image.to_json()["configs"] == {f"BROKER:{name}": {"num.io.threads": "1"}}  # a config Kafka shows


def test_numeric_names_still_sort_as_numbers():
    values = [encode_metadata("CONFIG_RECORD", 0, {"resourceType": 4, "resourceName": n, "name": "x", "value": "1"})
              for n in ("10", "2", "²", "-1")]
    assert list(_image(*values).to_json()["configs"]) == ["BROKER:-1", "BROKER:2", "BROKER:10", "BROKER:²"]
    assert entity_of(decode_metadata(values[0]))["broker_id"] == 10


_TEXT = st.text(max_size=8) | st.sampled_from(["²", "--5", "-", "1" * 30, "٣", "NaN", " 1"])


@SETTINGS
@given(_TEXT, _TEXT, _TEXT, st.integers(0, 40), st.floats())
def test_any_names_replay_and_render(topic, resource, user, resource_type, quota):
    image = _image(
        encode_metadata("TOPIC_RECORD", 0, {"name": topic, "topicId": TOPIC_ID}),
        encode_metadata("PARTITION_RECORD", 0, {"partitionId": 0, "topicId": TOPIC_ID, "replicas": [1], "isr": [1]}),
        encode_metadata("CONFIG_RECORD", 0, {"resourceType": resource_type, "resourceName": resource,
                                             "name": user, "value": topic}),
        encode_metadata("CLIENT_QUOTA_RECORD", 0, {"entity": [{"entityType": user, "entityName": resource}],
                                                   "key": topic, "value": quota}),
        encode_metadata("USER_SCRAM_CREDENTIAL_RECORD", 0, {"name": user, "mechanism": resource_type % 4}),
        encode_metadata("FEATURE_LEVEL_RECORD", 0, {"name": resource, "featureLevel": resource_type}),
    )
    assert image.problems == []
    _render_all(image)


# --- review: a topic id re-created under a new name, then removed ------------------------------------


def test_a_renamed_then_removed_topic_leaves_no_dangling_name():
    """KeyError in to_json, the tree, the metadata view and diff: the old name still pointed at the id."""
    image = _image(encode_metadata("TOPIC_RECORD", 0, {"name": "a", "topicId": TOPIC_ID}),
                   encode_metadata("TOPIC_RECORD", 0, {"name": "b", "topicId": TOPIC_ID}))
    assert list(image.to_json()["topics"]) == ["b"]
    image.apply(decode_metadata(encode_metadata("REMOVE_TOPIC_RECORD", 0, {"topicId": TOPIC_ID})), 2)
    assert image.problems == [] and image.to_json()["topics"] == {}
    _render_all(image)


_IDS = st.sampled_from([TOPIC_ID, "AAAAAAAAAAAAAAAAAAAAAQ"])
_NAMES = st.sampled_from(["a", "b", ""])
_NODES = st.integers(-1, 2)
_LISTS = st.none() | st.lists(_NODES, max_size=3)
_RECORDS = st.one_of(
    st.builds(lambda n, t: ("TOPIC_RECORD", 0, {"name": n, "topicId": t}), _NAMES, _IDS),
    st.builds(lambda v, p, t, r, i, elr: ("PARTITION_RECORD", v, {
        "partitionId": p, "topicId": t, "replicas": r, "isr": i, "leader": r[0] if r else -1,
        **({"eligibleLeaderReplicas": elr} if v == 2 else {})}),
        st.integers(0, 2), st.integers(0, 1), _IDS, st.lists(_NODES, max_size=3), st.lists(_NODES, max_size=3),
        _LISTS),
    st.builds(lambda p, t, i, r, leader, dirs: ("PARTITION_CHANGE_RECORD", 1, {
        "partitionId": p, "topicId": t, "isr": i, "replicas": r, "leader": leader,
        "directories": [TOPIC_ID] * len(r or []) if dirs else None}),
        st.integers(0, 1), _IDS, _LISTS, _LISTS, st.integers(-2, 2), st.booleans()),
    st.builds(lambda t: ("REMOVE_TOPIC_RECORD", 0, {"topicId": t}), _IDS),
    st.builds(lambda n: ("CLEAR_ELR_RECORD", 0, {"topicName": n}), _NAMES),
    st.builds(lambda b, e: ("REGISTER_BROKER_RECORD", 3, {"brokerId": b, "brokerEpoch": e, "fenced": False,
                                                         "endPoints": [{"name": "L", "host": "h", "port": 1}]}),
              _NODES, st.integers(0, 1)),
    st.builds(lambda b, e, f: ("BROKER_REGISTRATION_CHANGE_RECORD", 2, {"brokerId": b, "brokerEpoch": e,
                                                                        "fenced": f, "logDirs": [TOPIC_ID]}),
              _NODES, st.integers(0, 1), st.integers(-1, 1)),
    st.builds(lambda b: ("UNREGISTER_BROKER_RECORD", 0, {"brokerId": b}), _NODES),
    st.sampled_from([("BEGIN_TRANSACTION_RECORD", 0, {"name": "t"}), ("END_TRANSACTION_RECORD", 0, {}),
                     ("ABORT_TRANSACTION_RECORD", 0, {})]),
)


@SETTINGS
@given(st.lists(_RECORDS, max_size=16))
def test_any_sequence_of_topic_broker_and_transaction_records_replays_and_renders(records):
    image = _image(*(encode_metadata(*r) for r in records))
    _render_all(image)
    ids = [topic["topicId"] for topic in image.to_json()["topics"].values()]
    assert len(ids) == len(set(ids)) and set(ids) <= set(image.topics.by_id)  # one name per id, none dangling


# --- review: hostile text files beside the segments ---------------------------------------------------


@pytest.mark.parametrize(("quorum_state", "problem"), [
    ("[" * 100_000, "quorum-state is not JSON: maximum recursion depth"),
    ("[1]", "quorum-state is JSON but not an object: list"),
    ("\xff", "quorum-state is not JSON"),
])
def test_a_hostile_quorum_state_is_a_problem_not_a_crash(tmp_path, quorum_state, problem):
    """RecursionError (deep nesting) and AttributeError (not an object) out of ``inspect``."""
    d = _node_dir(tmp_path, _batch([NOOP]))
    (d / "quorum-state").write_text(quorum_state, encoding="latin-1")
    [node] = find_nodes(tmp_path)
    assert node.quorum_state is None and any(p.startswith(problem) for p in node.problems), node.problems
    status, out = _cli("inspect", str(tmp_path))
    assert status == 0 and f"problem: {problem}" in out


def test_a_hostile_leader_epoch_checkpoint_keeps_its_good_lines(tmp_path):
    """ValueError from int() on "²", "--5" and 5000-digit numbers in ``read_leader_epoch_checkpoint``."""
    d = _node_dir(tmp_path, _batch([NOOP]))
    (d / "leader-epoch-checkpoint").write_text("0\n5\n² 1\n--5 2\n" + "9" * 5000 + " 3\n1 0\n 2  7 \n")
    [node] = find_nodes(tmp_path)
    assert node.leader_epochs == [(1, 0), (2, 7)]
    status, out = _cli("inspect", "--format", "json", str(tmp_path))
    assert json.loads(out)["nodes"][0]["leaderEpochs"] == [{"epoch": 1, "startOffset": 0},
                                                           {"epoch": 2, "startOffset": 7}]


# --- the harness itself: a short run of every target finds nothing -----------------------------------


@pytest.mark.parametrize(("target", "runs"), [("record", 2000), ("reader", 300), ("replay", 150), ("cli", 20)])
def test_each_fuzz_target_runs_clean_on_generated_seeds(tmp_path, target, runs):
    """In its own process, as it is run (its RSS budget is checked on its own peak, not the session's)."""
    proc = subprocess.run(
        [sys.executable, str(FUZZ), "--target", target, "--runs", str(runs), "--engine", "loop",
         "--max-len", "16384", "--corpus-dir", str(tmp_path / "no-corpus"), "--crash-dir", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120, check=False)
    report = json.loads(proc.stdout.splitlines()[-1])
    assert proc.returncode == 0 and report["crashes"] == 0, report["findings"]
    assert report["runs"] == runs and report["seeds"] > 0 and report["own_peak_rss_mb"] < 300
