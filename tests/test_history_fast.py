"""``history``'s cheaper paths (issue 18) give what the general ones give: a block applied at once with
``after`` called at its marked records (``ClusterImage.apply_block``'s marks, not the block cut at each
change), and a held topic's text built from its partitions' kept texts (``history._Texts``)."""

import json

import pytest
from test_cli_fast import quiet_log  # noqa: F401
from test_replay_fast import T, _block, _block_records, _General, _held, _nodes, _rec, _topics

from kraftlog.cli import history
from kraftlog.cli.main import main
from kraftlog.cli.render import dumps
from kraftlog.files.records import is_no_op
from kraftlog.state.image import ClusterImage
from kraftlog.state.topics import new_partition, topic_held_json


def _seen(image: ClusterImage):
    """Everything a record can change, the open transaction's held records too."""
    return (json.dumps(image.to_json(redact=False)), image.provenance, list(image.problems), image.raft.leader_epoch,
            image.raft.leader_id, json.dumps(image.raft.to_json()), _held(image))


def _one_by_one(recs, epochs, upto: int) -> ClusterImage:
    image = _General()
    for i in range(upto + 1):
        image.apply(recs[i], 10 + i, 2000 + i, epochs[i])
    return image


def test_a_mark_sees_the_image_applying_each_record_in_turn_leaves():
    recs, epochs = _block_records()
    active = [i for i, r in enumerate(recs) if not is_no_op(r)]
    for marks in [[i] for i in active] + [active, active[1::3]]:
        image, seen = ClusterImage.empty(), {}
        image.apply_block(_block(recs, epochs), marks, lambda i, image=image, seen=seen: seen.setdefault(i, _seen(image)))
        assert list(seen) == marks
        for i in marks:
            assert seen[i] == _seen(_one_by_one(recs, epochs, i)), (marks, i)
        assert _seen(image) == _seen(_one_by_one(recs, epochs, len(recs) - 1)), marks


def test_a_mark_gives_the_literal_image():
    recs, epochs = _block_records()
    image, seen = ClusterImage.empty(), {}
    # records 3 and 4: the ISR shrinks to [1, 2], then the leader moves to 2; 11: a Begin (its image the one before)
    image.apply_block(_block(recs, epochs), [3, 4, 11],
                      lambda i: seen.setdefault(i, (image.to_json()["topics"]["t"]["partitions"]["0"],
                                                    image.provenance.to_json(), image.transaction)))
    partition = {"replicas": [1, 2, 3], "directories": ["AAAAAAAAAAAAAAAAAAAAAA"] * 3, "isr": [1, 2],
                 "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderRecoveryState": 0,
                 "leaderEpoch": 5, "partitionEpoch": 8, "eligibleLeaderReplicas": [], "lastKnownElr": []}
    assert seen[3] == (partition, {"offset": 13, "epoch": 3, "timestamp": 2003}, None)
    assert seen[4] == ({**partition, "leader": 2, "leaderEpoch": 6, "partitionEpoch": 9},
                       {"offset": 14, "epoch": 3, "timestamp": 2004}, None)
    assert seen[11][1] == {"offset": 20, "epoch": 5, "timestamp": 2010} and seen[11][2].begin_offset == 21


@pytest.mark.parametrize("marks", [[0], [3, 3], [4, 3], [3, 40], [-1], [7]], ids=str)
def test_marks_other_than_increasing_records_that_are_not_noops_are_refused(marks):
    recs, epochs = _block_records()
    image = ClusterImage.empty()
    with pytest.raises(ValueError, match="not increasing indices"):
        image.apply_block(_block(recs, epochs), marks, lambda i: None)
    assert _seen(image) == _seen(ClusterImage.empty())  # refused before anything is applied


def _history(path, *args) -> tuple[int, str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["history", str(path), *args])
    return code, out.getvalue()


def _histories(path, topics: list[str]) -> list[tuple[int, str]]:
    return [_history(path, "--topic", t, *more, *form) for t in topics
            for more, form in (((), ()), ((), ("--format", "jsonl")), (("--partition", "1"), ("--format", "jsonl")),
                               (("--no-redact",), ()))]


def _kept_texts_are_whole_texts(path, monkeypatch, most: int | None = None) -> int:
    """Histories of every topic of ``path`` (the ``most`` first and last by name) with texts kept and encoded
    whole, the same; the texts built."""
    topics = _topics(path)
    if most is not None and len(topics) > most:
        topics = topics[:most // 2] + topics[-(most - most // 2):]
    built = []
    topic = history._Texts._topic
    monkeypatch.setattr(history._Texts, "_topic", lambda self, held: built.append(held) or topic(self, held))
    fast = _histories(path, topics)
    monkeypatch.setattr(history, "FAST_TEXT", False)
    general = _histories(path, topics)
    assert fast == general
    assert any(out for _, out in fast) or not topics
    return len(built)


def test_kept_texts_are_whole_texts_on_a_generated_log(quiet_log, monkeypatch):  # noqa: F811
    assert _kept_texts_are_whole_texts(quiet_log, monkeypatch) > 100


@pytest.mark.parametrize("node", _nodes(), ids=lambda n: str(n.log_dir))
def test_kept_texts_are_whole_texts_on_fixtures_and_the_real_corpus(node, monkeypatch):
    """Four topics a log (each history replays the whole log, eight times a topic: a corpus log of 63 topics
    took 10 s)."""
    _kept_texts_are_whole_texts(node.metadata_dir, monkeypatch, most=4)


def test_blocks_with_marks_are_records_one_by_one_in_history(quiet_log, monkeypatch):  # noqa: F811
    """The whole of ``history`` over blocks and over the reader's entries, one record at a time."""
    topics = _topics(quiet_log)
    blocks = _histories(quiet_log, topics)
    entries = history.log_entries
    monkeypatch.setattr(history, "log_entries", lambda *a, runs=None: entries(*a))
    assert _histories(quiet_log, topics) == blocks
    assert any("aborted" in out for _, out in blocks) and any("inTransaction" in out for _, out in blocks)


def _state(leader: int) -> dict:
    return new_partition({"partitionId": 0, "topicId": T, "replicas": [1, 2], "isr": [1, 2], "leader": leader,
                          "leaderEpoch": 3, "partitionEpoch": 4})


def test_a_held_topic_gives_the_literal_texts():
    held = (T, {10: _state(2), 2: _state(1)})
    state = ('"replicas":[1,2],"isr":[1,2],"removingReplicas":[],"addingReplicas":[],"leader":{},'
             '"leaderRecoveryState":0,"leaderEpoch":3,"partitionEpoch":4,"directories":'
             '["AAAAAAAAAAAAAAAAAAAAAA","AAAAAAAAAAAAAAAAAAAAAA"],"eligibleLeaderReplicas":[],"lastKnownElr":[]')
    texts = history._Texts("jsonl")
    assert texts._topic(held) == ('{"topicId":"AAAAAAAAAAAAAAAAAAAAAQ","partitions":{"2":{' + state.format(1)
                                  + '},"10":{' + state.format(2) + '}}}')
    assert texts._topic(held) == dumps(topic_held_json(held))  # kept: the same text again
    changed = (T, {**held[1], 2: _state(3)})
    assert texts._topic(changed) == dumps(topic_held_json(changed)) and '"leader":3' in texts._topic(changed)
    spaced = history._Texts("text")
    assert spaced._topic(held) == json.dumps(topic_held_json(held)) and '"partitions": {"2": {"replicas": [1, 2]' \
        in spaced._topic(held)


def test_what_kept_texts_were_not_built_for_is_encoded_whole_or_refused():
    texts = history._Texts("jsonl")
    odd = (T, {"x": _state(1), 1: _state(2)})  # a partition id that is not a number: the general path
    assert texts._topic(odd) == dumps(topic_held_json(odd))
    with pytest.raises(TypeError, match="text keys only"):
        texts.extended({1: "a"}, {1: "b"})  # a key the row's JSON would write otherwise
    with pytest.raises(TypeError):
        json.dumps({"after": history._Text("{}")})  # a kept text never reaches json as a string
    assert texts.extended({"offset": 1}, {"offset": 2, "after": history._Text("[1]")}) == '{"offset":2,"after":[1]}'
    assert _rec("TOPIC_RECORD", 0, name="t", topicId=T).to_json().keys() & {"after", "inTransaction"} == set()


def _changes(topic: str | None = None, **entity):
    from argparse import Namespace

    args = Namespace(**{"topic": topic, "partition": None, "broker": None, "config": None, **entity}, format="jsonl",
                     no_redact=False)
    image = ClusterImage.empty()
    return history._Changes(args, image, history._Matcher(args, image), None)


@pytest.mark.parametrize("fast", [True, False])
def test_a_topic_created_inside_a_walk_is_followed_from_its_record_on(fast, monkeypatch):
    """Topic id T is first another topic's, then re-created as "t": only what comes after the TopicRecord of
    "t" is its history, also when the walk's records are told apart at once (the walk is then read in order)."""
    monkeypatch.setattr(history, "FAST_MARKS", fast)
    part = _rec("PARTITION_RECORD", 1, partitionId=0, topicId=T, replicas=[1], isr=[1], leader=1, leaderEpoch=0,
                partitionEpoch=0)
    recs = [_rec("TOPIC_RECORD", 0, name="other", topicId=T), part,
            _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, isr=[1]), _rec("NO_OP_RECORD", 0),
            _rec("TOPIC_RECORD", 0, name="t", topicId=T), part, _rec("BEGIN_TRANSACTION_RECORD", 0, name="b")]
    block = _block(recs, [1] * len(recs))
    changes = _changes("t")
    assert changes.marked(block.part(0, 3)) == [] and changes.marked(block) == [4, 5, 6]
    assert changes.marked(block.part(0, 3)) == [0, 1, 2]  # now the topic's: its records of either name match
    again = _changes("t")
    assert again.marked(block.part(4)) == [0, 1, 2] and again.marked(block) == [0, 1, 2, 4, 5, 6]


def _entities(path) -> list[dict]:
    """Every topic of the log (and one it does not hold), its partition 1, brokers 0 to 3, and configs: the
    cluster default broker's, broker 1's, each topic's and one of its keys."""
    topics = _topics(path)
    return [*({"topic": t} for t in [*topics, "absent"]), *({"topic": t, "partition": 1} for t in topics),
            *({"broker": b} for b in range(4)),
            *({"config": c} for t in topics for c in ("BROKER:", "BROKER:1", f"TOPIC:{t}", f"TOPIC:{t}:retention.ms"))]


def _marks_both_ways(path) -> int:
    """Every block's marks told apart per walk and record by record, by matchers of every entity alike."""
    from kraftlog.files.copies import Log
    from kraftlog.files.logdir import find_nodes
    from kraftlog.files.reader import Limits
    from kraftlog.files.records import Block, ReadProblems

    marked = 0
    blocks = [b for b in Log.of(find_nodes(path)[0]).entries(0, Limits(), ReadProblems(), runs="blocks")
              if type(b) is Block]
    for entity in _entities(path):
        fast, general = _changes(**entity), _changes(**entity)
        for b in blocks:
            history.FAST_MARKS = True
            marks = fast.marked(b)
            history.FAST_MARKS = False
            assert marks == general.marked(b), (entity, b.offsets[0])
            marked += len(marks)
        history.FAST_MARKS = True
    return marked


def test_marks_per_walk_are_marks_record_by_record_on_a_generated_log(quiet_log, monkeypatch):  # noqa: F811
    monkeypatch.setattr(history, "FAST_MARKS", True)
    assert _marks_both_ways(quiet_log) > 100


@pytest.mark.parametrize("node", _nodes(), ids=lambda n: str(n.log_dir))
def test_marks_per_walk_are_marks_record_by_record_on_fixtures_and_the_real_corpus(node, monkeypatch):
    monkeypatch.setattr(history, "FAST_MARKS", True)
    _marks_both_ways(node.metadata_dir)


def test_answers_remembered_across_walks_follow_the_topic_ids():
    """One record (``decode_metadata``'s cache) in three walks: before its topic is created, and after."""
    change = _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, isr=[1])
    walks = [_block([change], [1]), _block([_rec("TOPIC_RECORD", 0, name="t", topicId=T)], [1]), _block([change], [1])]
    changes = _changes("t")
    assert [changes.marked(w) for w in walks] == [[], [0], [0]]


def test_records_without_their_value_are_told_apart():
    """Records built without their value (no ``raw``), of one kind and version, are told apart by their fields."""
    from kraftlog.schema import MetadataRecord

    change = _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, isr=[1])
    mine, other = (MetadataRecord(change.api_key, change.version, {**change.data, "topicId": t}) for t in (T, "x" * 22))
    changes = _changes("t")
    assert changes.marked(_block([_rec("TOPIC_RECORD", 0, name="t", topicId=T)], [1])) == [0]
    assert changes.marked(_block([other, mine, other, change], [1] * 4)) == [1, 3]
    assert changes.marked(_block([mine, other], [1] * 2)) == [0]


def test_candidates_are_told_by_kind_and_by_the_topic_ids_followed_or_created_in_the_walk():
    """The records ``marked`` tells apart: of the kinds told by name and the transaction markers, and of topic T,
    whose TopicRecord of "t" comes later in the walk; not another topic's change, nor a NoOp."""
    other = "AAAAAAAAAAAAAAAAAAAAAg"
    recs = [_rec("TOPIC_RECORD", 0, name="other", topicId=other),
            _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=other, isr=[1]),
            _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, isr=[1]),
            _rec("CONFIG_RECORD", 0, resourceType=4, resourceName="1", name="x", value="y"), _rec("NO_OP_RECORD", 0),
            _rec("TOPIC_RECORD", 0, name="t", topicId=T), _rec("BEGIN_TRANSACTION_RECORD", 0, name="b")]
    assert _changes("t").match.walk(recs)[0].tolist() == [True, False, True, True, False, True, True]
    assert _changes("other").match.walk(recs)[0].tolist() == [True, True, False, True, False, True, True]
    assert _changes(broker=1).match.walk(recs)[0].tolist() == [False, False, False, True, False, False, True]
    assert _changes(config="BROKER:1").match.walk(recs)[0].tolist() == [False] * 3 + [True, False, False, True]


def test_a_change_row_gives_the_literal_text_its_record_kept_by_the_identity_of_what_is_shown():
    from kraftlog.schema.redact import redact

    change = _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, isr=[1])
    texts = history._Texts("jsonl")
    row = ('{"offset":5,"time":null,"epoch":2,"type":"PARTITION_CHANGE_RECORD","version":1,"data":{"partitionId":0,'
           '"topicId":"AAAAAAAAAAAAAAAAAAAAAQ","isr":[1]},"after":{},"inTransaction":3}')
    for _ in range(2):  # built, then kept
        assert texts.row({"offset": 5, "time": None, "epoch": 2}, change, {"after": history._Text("{}"),
                                                                           "inTransaction": 3}) == row
    secret = _rec("CONFIG_RECORD", 0, resourceType=4, resourceName="1", name="ssl.keystore.password", value="s3cret")
    spaced = history._Texts("text")
    data = 'CONFIG_RECORD v0 {"resourceType":4,"resourceName":"1","name":"ssl.keystore.password","value":"%s"}'
    for _ in range(2):
        assert spaced.record(secret, redact(secret)) == data % "[redacted]"
        assert spaced.record(secret, secret) == data % "s3cret"
    assert [texts.time(1735689600123), texts.time(1735689600123), texts.time(-1)] == [
        "2025-01-01T00:00:00.123Z"] * 2 + [None]
    with pytest.raises(TypeError, match="members beside its own"):
        texts.record(change, type("Odd", (), {"to_json": lambda self: {"offset": 1}})())


def _freezes(path, monkeypatch) -> tuple[int, int, str]:
    """(``gc.freeze`` calls during ``history --topic`` of the log's first topic, changes shown, objects frozen after)."""
    import contextlib
    import gc
    import io

    calls = []
    freeze = gc.freeze
    monkeypatch.setattr(gc, "freeze", lambda: calls.append(1) or freeze())
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            assert main(["history", str(path), "--topic", _topics(path)[0]]) == 0
    finally:
        monkeypatch.undo()
    shown = int(err.getvalue().rsplit("kraftlog: ", 1)[1].split()[0])
    return len(calls), shown, gc.get_freeze_count()


def test_history_freezes_the_heap_at_each_change_and_thaws_it_at_the_end(quiet_log, monkeypatch):  # noqa: F811
    import gc

    # What an earlier test froze in this process (``spark.passes.freeze_imports`` run in it) would make history
    # leave the heap as it is (the next test): this one starts from nothing frozen, whatever ran before.
    gc.unfreeze()
    calls, shown, frozen = _freezes(quiet_log, monkeypatch)
    assert calls == shown > 10 and frozen == 0


def test_history_leaves_what_something_else_froze_as_it_is(quiet_log, monkeypatch):  # noqa: F811
    import gc

    gc.freeze()
    try:
        # Frozen objects that die leave the permanent generation, so the count may fall a little during the run;
        # ``gc.unfreeze`` would empty it. A count still above half says history thawed nothing of another's.
        before = gc.get_freeze_count()
        calls, shown, frozen = _freezes(quiet_log, monkeypatch)
        assert calls == 0 and shown > 10 and before >= frozen > before // 2 > 0
    finally:
        gc.unfreeze()


def test_a_record_text_is_kept_by_the_value_decoded_and_without_one_by_identity(monkeypatch):
    from kraftlog.schema.records import _decode_metadata
    from kraftlog.schema.redact import redact

    texts, built = history._Texts("jsonl"), []
    record = history._Texts._record
    monkeypatch.setattr(history._Texts, "_record", lambda self, *a: built.append(a) or record(self, *a))
    value = _rec("PARTITION_CHANGE_RECORD", 1, partitionId=0, topicId=T, isr=[1]).raw
    once, again = _decode_metadata(value), _decode_metadata(value)  # two records of one value
    assert once is not again
    text = '"type":"PARTITION_CHANGE_RECORD","version":1,"data":{"partitionId":0,"topicId":"AAAAAAAAAAAAAAAAAAAAAQ","isr":[1]}'
    assert texts.record(once, once) == texts.record(again, again) == text and len(built) == 1
    secret = _rec("CONFIG_RECORD", 0, resourceType=4, resourceName="1", name="ssl.keystore.password", value="s3cret")
    shown = redact(secret)
    assert shown.raw == b"" and texts.record(secret, shown) == texts.record(secret, shown) and len(built) == 2
    assert '"value":"[redacted]"' in texts.record(secret, redact(secret)) and len(built) == 3  # another copy
