"""The report's partition health against known events: a log written by kraftlog's own encoder
where each state is entered and left at a known offset; a generated cluster and the three-nodes
fixture against their ground truth."""

import importlib
import itertools
import json
import re

import pytest
from test_report_cluster import (
    SECOND,
    T0,
    LogWriter,
    broker,
    config,
    partition,
    registration_change,
    uuid,
    write_cluster,
)
from test_report_generated import committed_at, partition_histories

from conftest import CORPUS, NO_CORPUS, REPO
from kraftlog.cli.main import main
from kraftlog.files.logdir import find_nodes
from kraftlog.report import collect
from kraftlog.report.model import HEALTH

collect_module = importlib.import_module("kraftlog.report.collect")

OFFLINE, UNAVAILABLE, UNDER_MIN, URP, ELR = range(len(HEALTH))


def elr_change(topic: str, pid: int, **fields) -> tuple[str, int, dict]:
    """A PartitionChangeRecord at version 2, the first that carries ELR (KIP-966)."""
    return ("PARTITION_CHANGE_RECORD", 2, {"partitionId": pid, "topicId": uuid(topic), **fields})


def _three_brokers() -> LogWriter:
    """A log of controller 1's epoch, then brokers 1-3 registered and unfenced."""
    w = LogWriter()
    w.last_ts = T0
    w.leader_change(T0, 1, [1, 2, 3])
    w.records(T0, ("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 25}))
    w.records(T0 + 100, broker(1, 10), broker(2, 11), broker(3, 12))
    w.records(T0 + 200, *(registration_change(b, 9 + b, fenced=-1) for b in (1, 2, 3)))
    return w


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    """Brokers 1-3; topic t (min.insync.replicas 2 on the topic) and topic u (no topic config)."""
    w = _three_brokers()
    w.records(T0 + 300, ("TOPIC_RECORD", 0, {"name": "t", "topicId": uuid("t")}),
              config(2, "t", "min.insync.replicas", "2"),
              *(partition("t", p, [1 + (p + i) % 3 for i in range(3)]) for p in range(3)),
              ("TOPIC_RECORD", 0, {"name": "u", "topicId": uuid("u")}), partition("u", 0, [1, 2, 3]))
    steps = [
        ("t-0 shrinks", [elr_change("t", 0, isr=[1, 2])], (0, 0, 0, 1, 0)),
        ("t-0 below min ISR", [elr_change("t", 0, isr=[1], eligibleLeaderReplicas=[2])], (0, 0, 1, 1, 1)),
        ("t-0 offline", [elr_change("t", 0, leader=-1, isr=[1])], (1, 0, 1, 1, 1)),
        ("u-0 shrinks", [elr_change("u", 0, isr=[1, 2])], (1, 0, 1, 2, 1)),  # Kafka's default min ISR 1
        ("cluster min ISR 3", [config(4, "", "min.insync.replicas", "3")], (1, 0, 2, 2, 1)),  # u-0 only
        ("broker 3 fenced", [registration_change(3, 12, fenced=1)], (1, 1, 2, 2, 1)),  # leads t-2
        ("t-2 moves to 1", [elr_change("t", 2, leader=1, isr=[1, 2])], (1, 0, 2, 3, 1)),
        ("t-0 back", [elr_change("t", 0, leader=1, isr=[1, 2, 3], eligibleLeaderReplicas=[])], (0, 0, 1, 2, 0)),
        ("u deleted", [("REMOVE_TOPIC_RECORD", 0, {"topicId": uuid("u")})], (0, 0, 0, 1, 0)),
    ]
    at = T0 + SECOND
    for name, records, _ in steps:
        w.noops_until(at)
        w.records(at, *records, name=name)
        at += 30 * SECOND
    w.noops_until(at)
    root = tmp_path_factory.mktemp("health") / "node"
    write_cluster(root, w)
    return collect(find_nodes(root)[0]), w, steps


def test_every_health_change_at_its_offset(scenario):
    m, w, steps = scenario
    assert m.start_health == (0, 0, 0, 0, 0) and not m.problems.total
    assert [(o, c) for o, _, c in m.health_changes] == [(w.known[name][0], counts) for name, _, counts in steps]


def test_the_end_of_the_log(scenario):
    m, _, _ = scenario
    assert {s: [(p.name, p.leader, p.isr, p.min_isr) for p in rows] for s, rows in m.end_health.items()} == {
        "offline": [], "leader unavailable": [], "under min ISR": [], "ELR": [],
        "under-replicated": [("t-2", 1, (1, 2), 2)]}


def test_buckets_keep_the_worst_moment(scenario):
    m, _, _ = scenario
    peaks = [b.health_peak for _, b in sorted(m.buckets.items()) if b.health_peak is not None]
    assert max(p[OFFLINE] for p in peaks) == 1 and max(p[UNDER_MIN] for p in peaks) == 2
    assert max(p[URP] for p in peaks) == 3 and max(p[UNAVAILABLE] for p in peaks) == 1


# -- against the ground truth of generated logs --------------------------------------------------


def expected_series(truth: dict) -> list[tuple[int, int, int]]:
    """(effective offset, offline, under-replicated) wherever either count changes."""
    effective = committed_at(truth)
    moves: dict[int, list[tuple[tuple, dict | None]]] = {}
    for key, rows in partition_histories(truth).items():
        for row in rows:
            moves.setdefault(effective.get(row["from"], row["from"]), []).append((key, row))
        last = rows[-1]
        if last["to"] is not None:
            moves.setdefault(effective.get(last["to"] + 1, last["to"] + 1), []).append((key, None))
    state: dict[tuple, dict] = {}
    out, counts = [], (0, 0)
    for offset in sorted(moves):
        for key, row in moves[offset]:
            if row is None:
                state.pop(key, None)
            else:
                state[key] = row
        now = (sum(r["leader"] < 0 for r in state.values()),
               sum(len(r["isr"]) < len(r["replicas"]) for r in state.values()))
        if now != counts:
            out.append((offset, *now))
            counts = now
    return out


def model_series(m) -> list[tuple[int, int, int]]:
    assert not m.health_changes.omitted
    rows = [(o, c[OFFLINE], c[URP]) for o, _, c in m.health_changes]
    return [next(g) for _, g in itertools.groupby(rows, key=lambda r: r[1:])]


def expected_end(truth: dict, min_isr: int) -> dict[str, list[str]]:
    """Partitions in each state at the end: the last rows of the truth, with the final brokers."""
    names = {t["topicId"]: t["name"] for t in truth["topics"]}
    final = {k: rows[-1] for k, rows in partition_histories(truth).items() if rows[-1]["to"] is None}
    brokers = truth["final"]["brokers"]
    configs = truth["final"]["configs"]

    def down(b: int) -> bool:
        return str(b) not in brokers or brokers[str(b)]["fenced"]

    def floor(topic: str) -> int:
        return int(configs.get(f"TOPIC:{topic}", {}).get("min.insync.replicas", min_isr))

    tests = {"offline": lambda r, t: r["leader"] < 0, "leader unavailable": lambda r, t: r["leader"] >= 0 and down(r["leader"]),
             "under min ISR": lambda r, t: len(r["isr"]) < floor(t), "under-replicated": lambda r, t: len(r["isr"]) < len(r["replicas"]),
             "ELR": lambda r, t: False}
    return {s: sorted(f"{names[tid]}-{pid}" for (tid, pid), r in final.items() if test(r, names[tid]))
            for s, test in tests.items()}


def test_three_nodes_fixture():
    root = REPO / "fixtures" / "three-nodes"
    truth = json.loads((root / "ground-truth.json").read_text())
    [node] = [n for n in find_nodes(root) if n.node_id == truth["cluster"]["primaryNode"]]
    m = collect(node)
    assert model_series(m) == expected_series(truth)
    cluster_min = int(truth["final"]["configs"]["BROKER:"]["min.insync.replicas"])
    assert {s: sorted(p.name for p in rows) for s, rows in m.end_health.items()} == expected_end(truth, cluster_min)
    assert any(s[2] for s in expected_series(truth))  # partitions were under-replicated at times


def test_generated_cluster(tmp_path):
    out = tmp_path / "node"
    assert main(["generate", str(out), "--duration", "2h", "--brokers", "5", "--topics", "8", "--seed", "11",
                 "--events-per-hour", "60"]) == 0
    truth = json.loads((out / "ground-truth.json").read_text())
    m = collect(find_nodes(out)[0])
    series = expected_series(truth)
    assert model_series(m) == series and len(series) > 100
    cluster_min = int(truth["final"]["configs"].get("BROKER:", {}).get("min.insync.replicas", 1))
    assert not any(k.startswith("BROKER:") and k != "BROKER:" and "min.insync.replicas" in v
                   for k, v in truth["final"]["configs"].items())
    assert {s: sorted(p.name for p in rows) for s, rows in m.end_health.items()} == expected_end(truth, cluster_min)


def test_a_real_fence_after_controlled_shutdown_reads_as_fenced():
    """greenlemonT__kafka-temp: each broker shuts down (controlled), is fenced seconds later and stays
    down for hours; the lane must say fenced, not a 4-hour controlled shutdown."""
    root = CORPUS / "real" / "greenlemonT__kafka-temp"
    if not root.is_dir():
        pytest.skip(NO_CORPUS)
    nodes = [n for n in find_nodes(root) if n.metadata_dir is not None]
    long_fences = 0
    for node in nodes:
        m = collect(node)
        pairs = [(a, b) for lane in m.brokers.values() for a, b in itertools.pairwise(list(lane.events))]
        shutdowns = [(a, b) for a, b in pairs if a.kind == "shutdown"]
        assert shutdowns and all(b.kind == "fenced" for _, b in shutdowns)
        assert max(b.time - a.time for a, b in shutdowns) < 60_000
        long_fences += sum(a.kind == "fenced" and b.time - a.time > 3 * 3600_000 for a, b in pairs)
    assert long_fences  # the long stretch is a fence


def test_the_page_shows_health_over_time_and_at_the_end(scenario):
    from kraftlog.report.html import render

    page = render(scenario[0])
    assert '<section id="health">' in page
    assert ('<tr data-health="under-replicated"><th>under-replicated</th><td>1</td>'
            "<td>t-2 (leader 1, ISR [1, 2] of 3, min ISR 2)</td></tr>") in page
    assert '<tr data-health="offline"><th>offline</th><td>0</td><td></td></tr>' in page
    marks = re.findall(r'class="hit health"[^>]*data-health="([^"]+)" data-most="(\d+)"', page)
    assert max(int(n) for state, n in marks if state == "under-replicated") == 3
    assert {state for state, _ in marks} == set(HEALTH)  # every state was entered once


def test_min_isr_follows_the_epoch_between_partition_records(tmp_path):
    """The active controller's node config sets min ISR only while its epoch lasts: a partition
    record of the next epoch (no LeaderChange yet, so no known leader) is judged by the cluster
    default, though nothing but partition records came between (min ISR is kept per topic)."""
    w = LogWriter()
    w.leader_change(T0, 1, [1, 2, 3])
    w.records(T0, ("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 25}))
    w.records(T0 + 100, broker(1, 10), broker(2, 11), broker(3, 12))
    w.records(T0 + 200, *(registration_change(b, 9 + b, fenced=-1) for b in (1, 2, 3)))
    w.records(T0 + 300, ("TOPIC_RECORD", 0, {"name": "u", "topicId": uuid("u")}), partition("u", 0, [1, 2, 3]),
              config(4, "1", "min.insync.replicas", "3"))
    w.records(T0 + 400, elr_change("u", 0, isr=[1, 2]), name="shrinks")
    w.records(T0 + 500, elr_change("u", 0, isr=[1, 2, 3]), name="expands")
    w.records(T0 + 600, elr_change("u", 0, isr=[1, 2]), name="shrinks again")
    w.epoch += 1
    w.records(T0 + 700, elr_change("u", 0, leader=2), name="next epoch")
    write_cluster(tmp_path, w)
    m = collect(find_nodes(tmp_path)[0])
    assert [(o, c) for o, _, c in m.health_changes] == [
        (w.known["shrinks"][0], (0, 0, 1, 1, 0)), (w.known["expands"][0], (0, 0, 0, 0, 0)),
        (w.known["shrinks again"][0], (0, 0, 1, 1, 0)), (w.known["next epoch"][0], (0, 0, 0, 1, 0))]


def _stepped(tmp_path, w: LogWriter, steps: list[tuple[str, list]]):
    """The timeline of ``w``'s log then each named step's records 30 s apart, NoOps between (no problems)."""
    at = T0 + SECOND
    for name, records in steps:
        w.noops_until(at)
        w.records(at, *records, name=name)
        at += 30 * SECOND
    w.noops_until(at)
    write_cluster(tmp_path, w)
    m = collect(find_nodes(tmp_path)[0])
    assert not m.problems
    return m


@pytest.mark.parametrize("fast", [True, False])
def test_min_isr_is_forgotten_for_the_topics_a_record_moves(tmp_path, monkeypatch, fast):
    """A topic's creation leaves the other topics' min ISRs known; a removal drops its name's topic config for every
    topic of that name (two ids named t: removing one leaves the other at the cluster default), and a topic's min
    ISR config moves those of its name, whether the changes that read them are folded or taken one by one."""
    monkeypatch.setattr(collect_module, "FAST_COLUMNS", fast)
    w = _three_brokers()
    w.records(T0 + 300, ("TOPIC_RECORD", 0, {"name": "t", "topicId": uuid("t")}),
              config(2, "t", "min.insync.replicas", "3"), partition("t", 0, [1, 2, 3]),
              ("TOPIC_RECORD", 0, {"name": "t", "topicId": uuid("t2")}), partition("t2", 0, [1, 2, 3]))
    steps = [
        ("t-0 shrinks", [elr_change("t", 0, isr=[1, 2])]),
        ("t2-0 shrinks", [elr_change("t2", 0, isr=[1, 2])]),
        ("v created", [("TOPIC_RECORD", 0, {"name": "v", "topicId": uuid("v")}), partition("v", 0, [1, 2, 3])]),
        ("t-0 to 2", [elr_change("t", 0, leader=2)]),
        ("t2 deleted", [("REMOVE_TOPIC_RECORD", 0, {"topicId": uuid("t2")})]),
        ("t-0 to 1", [elr_change("t", 0, leader=1)]),  # t's config went with t2: the cluster default, 1
        ("t min ISR 2", [config(2, "t", "min.insync.replicas", "2")]),
        ("t-0 shrinks again", [elr_change("t", 0, isr=[1])]),
    ]
    m = _stepped(tmp_path, w, steps)
    assert [(o, c) for o, _, c in m.health_changes] == [
        (w.known["t-0 shrinks"][0], (0, 0, 1, 1, 0)), (w.known["t2-0 shrinks"][0], (0, 0, 2, 2, 0)),
        (w.known["t2 deleted"][0], (0, 0, 1, 1, 0)), (w.known["t-0 to 1"][0], (0, 0, 0, 1, 0)),
        (w.known["t-0 shrinks again"][0], (0, 0, 1, 1, 0))]


@pytest.mark.parametrize("fast", [True, False])
def test_min_isr_of_a_transaction_counts_where_it_commits(tmp_path, monkeypatch, fast):
    """A min ISR config in a metadata transaction is held with it (the image shows no half transaction): aborted,
    t keeps min ISR 2; committed, t-0 (2 in sync) is below 3 from the End on."""
    monkeypatch.setattr(collect_module, "FAST_COLUMNS", fast)
    w = _three_brokers()
    w.records(T0 + 300, ("TOPIC_RECORD", 0, {"name": "t", "topicId": uuid("t")}),
              config(2, "t", "min.insync.replicas", "2"), partition("t", 0, [1, 2, 3]))
    begin = ("BEGIN_TRANSACTION_RECORD", 0, {"name": "x"})
    steps = [
        ("t-0 shrinks", [elr_change("t", 0, isr=[1, 2])]),
        ("aborted", [begin, config(2, "t", "min.insync.replicas", "3"), ("ABORT_TRANSACTION_RECORD", 0, {"reason": "x"})]),
        ("t-0 to 2", [elr_change("t", 0, leader=2)]),
        ("committed", [begin, config(2, "t", "min.insync.replicas", "3"), ("END_TRANSACTION_RECORD", 0, {})]),
        ("t-0 to 1", [elr_change("t", 0, leader=1)]),
    ]
    m = _stepped(tmp_path, w, steps)
    assert [(o, c) for o, _, c in m.health_changes] == [
        (w.known["t-0 shrinks"][0], (0, 0, 0, 1, 0)), (w.known["committed"][0] + 2, (0, 0, 1, 1, 0))]
