"""The report's model of a ``kraftlog generate`` cluster against the simulation's own ground truth:
Raft epochs, topic lifetimes, every leader change and ISR shrink, and each broker's states."""

import importlib
import itertools
import json
import re

import pytest

from kraftlog.cli.main import main
from kraftlog.files.logdir import find_nodes
from kraftlog.report import collect, render

collect_module = importlib.import_module("kraftlog.report.collect")


@pytest.fixture(scope="module")
def generated_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("generated") / "node"
    assert main(["generate", str(out), "--duration", "6h", "--brokers", "5", "--topics", "12", "--seed", "7",
                 "--events-per-hour", "60"]) == 0
    return out


@pytest.fixture(scope="module")
def generated(generated_dir):
    out = generated_dir
    truth = json.loads((out / "ground-truth.json").read_text())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(collect_module, "REMOVED_KEPT", None)  # every partition, to check each against the truth
        return collect(find_nodes(out)[0]), truth


def committed_at(truth: dict) -> dict[int, int]:
    """Offset of a record inside a committed transaction -> the offset where it took effect."""
    return {o: t["end"] for t in truth["transactions"] if t["outcome"] == "committed"
            for o in range(t["begin"], t["end"])}


def partition_histories(truth: dict) -> dict[tuple[str, int], list[dict]]:
    rows = [dict(zip(truth["partitionColumns"], r, strict=True)) for r in truth["partitions"]]
    rows.sort(key=lambda r: (r["topicId"], r["partition"], r["from"]))
    return {k: list(g) for k, g in itertools.groupby(rows, key=lambda r: (r["topicId"], r["partition"]))}


def test_epochs_and_topics_match_the_truth(generated):
    m, truth = generated
    assert [(e.epoch, e.leader, e.offset) for e in m.epochs] == [
        (e["epoch"], e["leaderId"], e["startOffset"]) for e in truth["epochs"]]
    effective = committed_at(truth)
    created = sorted((effective.get(e.offset, e.offset), e.subject) for e in m.topic_events if e.kind == "created")
    deleted = sorted((e.offset - 1, e.subject) for e in m.topic_events if e.kind == "deleted")
    assert created == sorted((t["from"], t["name"]) for t in truth["topics"])
    assert deleted == sorted((t["to"], t["name"]) for t in truth["topics"] if t["to"] is not None)
    assert not m.problems.total


def test_every_leader_change_and_isr_shrink_is_counted(generated):
    m, truth = generated
    histories = partition_histories(truth)
    changes = {k: sum(a["leader"] != b["leader"] for a, b in itertools.pairwise(h)) for k, h in histories.items()}
    shrinks = {k: sum(not set(a["isr"]) <= set(b["isr"]) for a, b in itertools.pairwise(h))
               for k, h in histories.items()}
    assert {k: t.leader_changes for k, t in m.partitions.items()} == changes
    assert {k: t.shrinks for k, t in m.partitions.items()} == shrinks
    assert sum(changes.values()) > 50 and sum(shrinks.values()) > 50  # the scenario did churn
    assert sum(b.leader_changes for b in m.buckets.values()) == sum(changes.values())


def test_broker_lanes_follow_the_truth(generated):
    """Each lane's states and the offsets they begin at; a broker fenced at the end of its controlled
    shutdown (both flags set, as Kafka leaves them) is fenced from that offset on."""
    m, truth = generated

    def state(row: dict) -> str:
        return "fenced" if row["fenced"] else "shutdown" if row["inControlledShutdown"] else "active"

    def collapsed(seq: list[tuple[str, int]]) -> list[tuple[str, int]]:
        return [next(g) for _, g in itertools.groupby(seq, key=lambda s: s[0])]

    expected: dict[int, list[tuple[str, int]]] = {}
    rows = sorted(truth["brokers"], key=lambda r: (r["brokerId"], r["from"]))
    for bid, group in itertools.groupby(rows, key=lambda r: r["brokerId"]):
        seq, last_to = [], None
        for row in group:
            if last_to is not None and row["from"] > last_to + 1:
                seq.append(("absent", last_to + 1))  # unregistered in between
            seq.append((state(row), row["from"]))
            last_to = row["to"] if row["to"] is not None else float("inf")
        if last_to != float("inf"):
            seq.append(("absent", last_to + 1))
        expected[bid] = collapsed(seq)
    lanes = {bid: collapsed([(e.kind, e.offset) for e in lane.events]) for bid, lane in m.brokers.items()}
    assert lanes == expected
    assert any(r["fenced"] and r["inControlledShutdown"] for r in truth["brokers"])  # the case is there


def test_removed_partitions_beyond_those_drawn_are_dropped_and_the_page_is_the_same(generated, generated_dir):
    """The model keeps the removed partitions the page can draw (a removed one's churn is final), so it
    does not grow with the topics deleted over the log; the page is byte for byte the one drawn from all."""
    everything, _ = generated
    m = collect(find_nodes(generated_dir)[0])
    assert m.partitions_dropped > 0 and len(m.partitions) + m.partitions_dropped == len(everything.partitions)
    assert sum(t.removed_time is not None for t in m.partitions.values()) <= 2 * collect_module.REMOVED_KEPT

    def page(model) -> str:
        return re.sub(r" on \d{4}-\d\d-\d\d \d\d:\d\d UTC;", "", render(model))

    assert page(m) == page(everything)
