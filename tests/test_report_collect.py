"""The timeline model of a cluster with known events: what changed, where and when, within bounds."""

import pytest
from test_report_cluster import T0, LogWriter, change, partition, uuid, write_cluster, write_events

from kraftlog.files.logdir import find_nodes
from kraftlog.report import collect
from kraftlog.report.model import Capped


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    w = write_cluster(root)
    return collect(find_nodes(root)[0]), w.known


def test_leader_changes_are_real_changes_with_offsets(cluster):
    m, known = cluster
    moves = [(e.offset, e.time, e.subject, e.detail.split(",")[0]) for e in m.leader_events]
    assert moves == [
        (*known["orders-0 leader 1->2"], "orders-0", "leader 1 -> 2"),
        (*known["orders-2 leader 3->1"], "orders-2", "leader 3 -> 1"),
        (known["orders-2 leader 3->1"][0] + 1, known["orders-2 leader 3->1"][1], "payments-0", "leader 2 -> 1"),
        (*known["orders-0 leader 2->1"], "orders-0", "leader 2 -> 1"),
    ]
    orders0 = m.partitions[(uuid("orders"), 0)]
    assert (orders0.leader_changes, orders0.shrinks, orders0.expands, orders0.unclean) == (2, 1, 0, 0)
    orders1 = m.partitions[(uuid("orders"), 1)]
    assert (orders1.leader_changes, orders1.shrinks, orders1.isr) == (0, 1, (2, 3))
    cell = next(iter(orders1.cells.values()))
    assert (cell.first_offset, cell.isr, cell.min_isr) == (known["orders-1 isr shrink"][0], 2, 2)
    assert m.partitions[(uuid("payments"), 0)].removed_time == known["payments deleted"][1]


def test_brokers_epochs_topics_configs_features(cluster):
    m, known = cluster
    states = {b: [(e.kind, e.offset) for e in lane.events] for b, lane in m.brokers.items()}
    assert [s for s, _ in states[1]] == ["fenced", "active"]  # registered fenced, then unfenced
    assert states[3][-1] == ("fenced", known["broker 3 fenced"][0])
    assert states[2][-1] == ("shutdown", known["broker 2 shutdown"][0])
    assert [(e.epoch, e.leader, e.offset) for e in m.epochs] == [(1, 1, 0), (2, 2, known["epoch 2"][0])]
    assert [(e.kind, e.subject) for e in m.topic_events] == [
        ("created", "orders"), ("created", "payments"), ("deleted", "payments")]
    changes = {e.subject + " " + e.detail for e in m.changes}
    assert "TOPIC:orders sasl.jaas.config: (unset) -> [redacted]" in changes
    assert "BROKER:<default> log.retention.ms: (unset) -> 3600000" in changes
    assert "TOPIC:orders ALLOW User:alice READ from *" in changes
    assert [e.detail for e in m.feature_events] == ["unset -> 3.3-IV3 (level 7)", "3.3-IV3 -> 3.6-IV2 (level 14)"]
    assert not m.problems.total and m.type_totals["NO_OP_RECORD"] > 500


def test_buckets_widen_to_stay_under_the_cap_and_keep_every_count(tmp_path):
    write_cluster(tmp_path)
    node = find_nodes(tmp_path)[0]
    fine, coarse = collect(node), collect(node, max_buckets=7)
    assert len(coarse.buckets) <= 7 < len(fine.buckets) and coarse.width > fine.width
    for m in (fine, coarse):
        assert sum(b.records for b in m.buckets.values()) == m.records - m.untimed
        assert sum(b.leader_changes for b in m.buckets.values()) == m.leader_events.total
    cells = {k: sum(c.shrinks for c in t.cells.values()) for k, t in coarse.partitions.items()}
    assert cells == {k: t.shrinks for k, t in coarse.partitions.items()}


def test_aborted_transactions_change_nothing_and_committed_ones_count(tmp_path):
    w = LogWriter()
    write_events(w)
    at = w.last_ts + 1000
    w.records(at, ("BEGIN_TRANSACTION_RECORD", 0, {}), change("orders", 1, leader=3))
    w.records(at + 1, ("ABORT_TRANSACTION_RECORD", 0, {}))
    w.records(at + 2, ("BEGIN_TRANSACTION_RECORD", 0, {}), change("orders", 2, leader=2), name="txn change")
    w.records(at + 3, ("END_TRANSACTION_RECORD", 0, {}))
    write_cluster(tmp_path, w)
    m = collect(find_nodes(tmp_path)[0])
    assert m.aborted_records == 1
    last = list(m.leader_events)[-1]
    assert (last.subject, last.offset, last.detail.split(",")[0]) == ("orders-2", w.known["txn change"][0] + 1,
                                                                      "leader 1 -> 2")


def test_a_partition_record_after_its_topic_is_gone_is_a_problem_not_a_crash(tmp_path):
    w = LogWriter()
    w.records(T0, partition("ghost", 0, [1]))
    w.data += b"\x00" * 30  # a torn tail
    write_cluster(tmp_path, w)
    m = collect(find_nodes(tmp_path)[0])
    assert m.problems.total == 2 and not m.partitions


def test_capped_keeps_head_and_tail():
    c = Capped(4)
    for i in range(10):
        c.append(i)
    assert (list(c), c.total, c.omitted) == ([0, 1, 8, 9], 10, 6)


def test_capped_makes_only_the_items_it_keeps():
    made = []

    def items(base: int):
        def make(lo: int, hi: int) -> list[int]:
            made.extend(range(base + lo, base + hi))
            return list(range(base + lo, base + hi))
        return make

    c = Capped(6)
    c.add_many(2, items(0))
    c.add_many(4, items(2))
    c.append(6)
    c.add_many(5, items(7))
    c.add_many(1, items(12))
    assert made == [0, 1, 2]  # the head; the tail's are made when read, those it keeps only
    assert (list(c), c.total, c.omitted, len(c._waiting)) == ([0, 1, 2, 10, 11, 12], 13, 7, 0)
    assert made == [0, 1, 2, 10, 11, 12]
    one_by_one = Capped(6)
    for i in range(13):
        one_by_one.append(i)
    assert list(one_by_one) == list(c)
    c.append(13)
    assert list(c) == [0, 1, 2, 11, 12, 13]
