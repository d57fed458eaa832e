"""Runs of NoOps (issue 18): what the columnar walk gives the commands (``records.iter_items``,
``Log.entries(runs="blocks")``, ``dump --stats``) is, record for record and problem for problem, what
the reader gives; replay over blocks reaches the images replay over entries reaches."""

import functools
import importlib
import io
import itertools
from pathlib import Path

import pytest
from test_cli_fast import _special_batches, quiet_log  # noqa: F401

from conftest import corpus_log_files
from kraftlog.cli import dump as dump_cli
from kraftlog.cli.dump import DumpOptions, Stats, dump_file
from kraftlog.files import records, walk
from kraftlog.files.copies import NO_END, Log, Piece
from kraftlog.files.logdir import find_nodes
from kraftlog.files.paths import classify
from kraftlog.files.reader import Limits
from kraftlog.files.records import Block, ReadProblems, iter_entries, iter_items
from kraftlog.report import write_report
from kraftlog.state.replay import replay


def _flat(items) -> list:
    out = []
    for x in items:
        out += list(x.entries()) if type(x) is Block else [x]
    return out


@pytest.fixture()
def small_walks(monkeypatch):
    """Walks of a few batches in windows of a KiB: runs end at chunk ends, windows cut batches, and
    the reader takes over in the middle of a file."""
    monkeypatch.setattr(records, "walk_file", functools.partial(walk.walk_file, chunk=5, window=1024))


@pytest.fixture(scope="module")
def files(quiet_log, tmp_path_factory) -> list[Path]:  # noqa: F811
    """The quiet log's segments and a snapshot, its damaged copy (a CRC failure), one cut short, one
    with garbage inside (a corrupt region), and batches of every kind."""
    tmp = tmp_path_factory.mktemp("runs")
    segs = sorted(quiet_log.glob("*.log"))
    buf = segs[0].read_bytes()
    middle = len(buf) // 2
    damaged = {"damaged": (quiet_log.parents[1] / "damaged" / segs[0].name).read_bytes(), "cut": buf[:-10],
               "garbage": buf[:middle] + b"\x07" * 300 + buf[middle:]}
    for name, data in damaged.items():
        (tmp / name / quiet_log.name).mkdir(parents=True)
        (tmp / name / quiet_log.name / segs[0].name).write_bytes(data)
    return [*segs, *sorted(quiet_log.glob("*.checkpoint"))[:1],
            *(tmp / name / quiet_log.name / segs[0].name for name in damaged), _special_batches(tmp)]


def _both(lf, **kw) -> tuple[list, ReadProblems, list, ReadProblems]:
    fast, slow = ReadProblems(), ReadProblems()
    items = list(iter_items(lf, Limits(), fast, **kw))
    return items, fast, list(iter_entries(lf, Limits(), slow, **kw)), slow


@pytest.mark.parametrize("walks", ["default", "small"])
def test_items_are_the_readers_entries(files, walks, request):
    if walks == "small":
        request.getfixturevalue("small_walks")
    runs = 0
    for path in files:
        lf = classify(path)
        entries = list(iter_entries(lf, Limits(), ReadProblems()))
        middle = entries[len(entries) // 2].offset
        for kw in ({}, {"stop_at_invalid": True}, {"start": middle}, {"until": middle, "stop_at_invalid": True},
                   {"start": middle - 3, "until": middle + 7}):
            items, fast, expected, slow = _both(lf, **kw)
            assert _flat(items) == expected, (path, kw)
            assert (fast.messages, fast.stopped_at) == (slow.messages, slow.stopped_at), (path, kw)
            runs += sum(type(x) is Block for x in items)
            assert all(len(x) and (x.offsets[1:] == x.offsets[:-1] + 1).all() for x in items if type(x) is Block)
            for x in items:  # a block's active records are its records that are not NoOps
                if type(x) is Block:
                    assert x.active.tolist() == [not records.is_no_op(e.record) for e in x.entries()]
            walks = {id(x.decoded): x.decoded for x in items if type(x) is Block}
            named = {}
            for x in items:  # a walk's decoded holds the values its records name, and nothing else
                if type(x) is Block:
                    named.setdefault(id(x.decoded), set()).update(x.kv.tolist())
            assert all(named[k] == set(range(len(d))) for k, d in walks.items()), (path, kw)
    assert runs > 10


def test_a_files_value_is_decoded_once_across_its_walks(files, small_walks, monkeypatch):
    """A file's walks (windows of a KiB here) share their values (``walk.Interned``): a value that comes
    again in a later walk is not decoded again, and the blocks still hold the reader's records."""
    lf = classify(files[0])
    expected = list(iter_entries(lf))
    decoded = []
    monkeypatch.setattr(records, "decode_metadata", lambda v: decoded.append(v) or records_decode(v))
    items = list(iter_items(lf))
    assert _flat(items) == expected
    assert len({id(x.decoded) for x in items if type(x) is Block}) > 5  # many walks
    assert sorted(decoded) == sorted(set(decoded)) and len(decoded) > 1


records_decode = records.decode_metadata


def test_damaged_files_take_the_readers_way_from_where_the_walk_was_clean(files, small_walks):
    for path in files[-4:-1]:
        items, fast, expected, slow = _both(classify(path))
        assert type(items[0]) is Block, path  # the walk began
        assert _flat(items) == expected and fast.messages == slow.messages and fast.messages, path


@pytest.mark.parametrize("path", corpus_log_files(metadata_only=True)[:30] or [None],
                         ids=lambda p: p.parent.parent.name + "/" + p.name if p else "none")
def test_items_on_the_real_corpus(path):
    if path is None:
        pytest.skip("the shared corpus (../shared/corpus) is absent")
    items, fast, expected, slow = _both(classify(path))
    assert _flat(items) == expected and fast.messages == slow.messages


def _gapped(quiet_log) -> tuple[Log, int, int]:  # noqa: F811
    """The quiet log read as two pieces with a gap between them (the first piece ends inside a run of
    NoOps)."""
    node = find_nodes(str(quiet_log))[0]
    entries = list(iter_entries(node.segments[0], Limits()))
    inside = [e.offset for e, f in itertools.pairwise(entries) if records.is_no_op(e.record) and records.is_no_op(f.record)]
    a, b = inside[len(inside) // 3], entries[len(entries) // 2].offset
    return Log(node.cluster_id, [node], [Piece(node, 0, a), Piece(node, b, NO_END)], []), a, b


def test_log_entries_in_blocks_are_its_entries(quiet_log, small_walks):  # noqa: F811
    log, a, b = _gapped(quiet_log)
    said = {}
    for start in (0, a - 3, a, b + 2):
        fast, slow = ReadProblems(), ReadProblems()
        items = list(log.entries(start, Limits(), fast, runs="blocks"))
        assert _flat(items) == list(log.entries(start, Limits(), slow))
        assert fast.messages == slow.messages
        assert any(type(x) is Block for x in items)
        said[start] = fast.messages
    assert said[0] == [f"offsets {a + 1}-{b - 1} are missing from the log"] and said[b + 2] == []


def test_a_piece_ending_inside_a_batch_of_noops_cuts_the_block(tmp_path):
    """Offsets 3 and 4 are one batch of two NoOps: a piece ending at 3 gives its first only."""
    _special_batches(tmp_path)
    node = find_nodes(str(tmp_path))[0]
    log = Log(None, [node], [Piece(node, 0, 3), Piece(node, 5, NO_END)], [])
    fast, slow = ReadProblems(), ReadProblems()
    items = list(log.entries(0, Limits(), fast, runs="blocks"))
    assert [x.offsets.tolist() for x in items if type(x) is Block][:2] == [[0, 1, 2, 3], [5, 6, 7, 8, 9, 10, 11]]
    assert _flat(items) == list(log.entries(0, Limits(), slow))
    assert fast.messages == slow.messages == ["offsets 4-4 are missing from the log"]


def test_log_entries_refuse_runs_other_than_blocks(tmp_path):
    _special_batches(tmp_path)
    log = Log.of(find_nodes(str(tmp_path))[0])
    for runs in (True, "noops", "Blocks"):
        with pytest.raises(ValueError, match="runs must be None or 'blocks'"):
            next(log.entries(0, Limits(), ReadProblems(), runs=runs))


def test_replay_over_blocks_is_replay_over_entries(quiet_log, small_walks):  # noqa: F811
    log, a, b = _gapped(quiet_log)
    entries = list(log.entries(0, Limits(), ReadProblems()))
    times = [e.timestamp for e in entries]
    points = [(None, None), (a, None), (a + 5, None), (b + 1, None), (entries[-1].offset + 10, None),
              (None, times[len(times) // 4]), (None, times[len(times) // 4] + 1), (b + 40, times[-1] - 1)]
    for until, until_time in points:
        fast = replay(log.entries(0, Limits(), ReadProblems(), runs="blocks"), until=until, until_time=until_time)
        slow = replay(iter(list(entries)), until=until, until_time=until_time)
        assert fast.image.to_json() == slow.image.to_json(), (until, until_time)
        assert (fast.records, fast.last_read, fast.image.provenance, fast.image.problems) == \
            (slow.records, slow.last_read, slow.image.provenance, slow.image.problems), (until, until_time)
        assert (fast.image.raft.leader_epoch, fast.image.raft.leader_id, fast.open_transaction) == \
            (slow.image.raft.leader_epoch, slow.image.raft.leader_id, slow.open_transaction)


def test_dump_stats_from_the_walk_are_the_readers(files, monkeypatch):
    walked = []
    real = dump_cli._stats_walked

    def spy(*args):
        walked.append(real(*args))
        return walked[-1]

    def stats(path, fast: bool):
        monkeypatch.setattr(dump_cli, "_stats_walked", spy if fast else lambda *a: False)
        st = Stats()
        s = dump_file(classify(path), io.StringIO(), DumpOptions(), st)
        return st.to_json(), s

    for path in [*files, *corpus_log_files(metadata_only=True)[:10]]:
        assert stats(path, True) == stats(path, False), path
    assert walked.count(True) >= 2 and walked.count(False) == 3  # the damaged, cut and garbled copies


def _odd_noops(tmp_path: Path) -> Path:
    """NoOps whose epoch rises inside a run, one without a timestamp, runs across weeks (the report's
    buckets widen inside a run), and NoOps inside a metadata transaction."""
    from kraftlog.schema import encode_metadata
    from kraftlog.wire.batch import Record, encode_batch

    day = 86_400_000
    start = 1_735_689_600_000
    noop = encode_metadata("NO_OP_RECORD", 0, {})
    plan = [(1, start), (1, start + 1000), (1, 0), (2, start + 2000), (2, start + 9 * day), (2, "BEGIN"),
            (2, start + 9 * day + 1), (2, start + 9 * day + 2), (2, "END")]
    plan += [(1, start + 9 * day + 3 + i * 3 * day) for i in range(12)] + [(3, start + 60 * day), (3, start + 61 * day)]
    parts = []
    for offset, (epoch, ts) in enumerate(plan):
        value = noop
        if ts in ("BEGIN", "END"):
            kind = "BEGIN_TRANSACTION_RECORD" if ts == "BEGIN" else "END_TRANSACTION_RECORD"
            value, ts = encode_metadata(kind, 0, {"name": "t"} if ts == "BEGIN" else {}), start + 9 * day
        parts.append(encode_batch([Record(0, 0, None, value)], base_offset=offset, base_timestamp=ts,
                                  partition_leader_epoch=epoch))
    log_dir = tmp_path / "node"
    (log_dir / "__cluster_metadata-0").mkdir(parents=True)
    (log_dir / "meta.properties").write_text("version=1\ncluster.id=odd\nnode.id=1\n")
    (log_dir / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"".join(parts))
    return log_dir


def test_report_and_replay_of_odd_noop_runs(tmp_path, monkeypatch, small_walks):
    collect_module = importlib.import_module("kraftlog.report.collect")

    log_dir = _odd_noops(tmp_path)
    node = find_nodes(str(log_dir))[0]
    pages = {}
    for fast in (True, False):
        monkeypatch.setattr(collect_module, "FAST_NOOPS", fast)
        model = collect_module.collect(node, max_buckets=10)
        write_report(model, tmp_path / f"{fast}.html")
        pages[fast] = (tmp_path / f"{fast}.html").read_bytes()
        assert [e.epoch for e in model.epochs] == [1, 2, 3] and model.untimed == 1 and model.records == 23
    assert pages[True] == pages[False]
    entries = list(Log.of(node).entries(0, Limits(), ReadProblems()))
    for until in range(len(entries) + 1):
        slow = replay(iter(entries), until=until)
        fast = replay(Log.of(node).entries(0, Limits(), ReadProblems(), runs="blocks"), until=until)
        assert (fast.image.to_json(), fast.image.provenance, fast.open_transaction, fast.image.raft.leader_epoch,
                fast.records, fast.last_read) == \
            (slow.image.to_json(), slow.image.provenance, slow.open_transaction, slow.image.raft.leader_epoch,
             slow.records, slow.last_read), until


def test_a_file_the_walk_cannot_open_is_the_readers_problem(tmp_path):
    """A folder named like a segment: the walk gives way and the reader says why it cannot be read."""
    seg = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    seg.mkdir(parents=True)
    items, fast, expected, slow = _both(classify(seg))
    assert items == expected == [] and fast.messages == slow.messages and "cannot read" in fast.messages[0]
