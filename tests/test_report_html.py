"""The report page: self-contained, bounded in size, and the ``report`` command that writes it."""

import re
from collections import Counter

import pytest
from test_report_cluster import T0, write_cluster

from kraftlog.cli.main import main
from kraftlog.report import render
from kraftlog.report.collect import LANE_EVENTS, MAX_BUCKETS
from kraftlog.report.html import SECTIONS
from kraftlog.report.model import BrokerLane, Bucket, Capped, Cell, Epoch, Event, PartitionTrack, Timeline
from kraftlog.report.partitions import short
from kraftlog.report.svg import duration

#: What a page must not hold to be self-contained: external scripts, styles, images, fonts or links.
FETCHES = re.compile(r"""(src|href)=["']?(https?:|//)|url\(|@import""", re.I)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    write_cluster(root)
    out = tmp_path_factory.mktemp("report") / "report.html"
    return root, out, main(["report", str(root), "-o", str(out)])


def test_command_writes_a_self_contained_page(report, capsys):
    root, out, code = report
    page = out.read_text()
    assert code == 0
    for anchor, *_ in SECTIONS:
        assert f'<section id="{anchor}">' in page
    assert page.count("<svg") == len(SECTIONS)
    assert not FETCHES.search(page)
    assert "[redacted]" in page and "hunter2" not in page


def test_no_redact_shows_secrets(report, tmp_path):
    root, *_ = report
    out = tmp_path / "open.html"
    assert main(["report", str(root), "-o", str(out), "--no-redact"]) == 0
    assert "hunter2-secret" in out.read_text()


def test_usage_errors(report, tmp_path, capsys):
    root, *_ = report
    assert main(["report", str(root), "-o", str(tmp_path / "x.html"), "--buckets", "3"]) == 2
    assert main(["report", str(tmp_path / "missing"), "-o", str(tmp_path / "x.html")]) == 2
    capsys.readouterr()
    metadata = next(root.rglob("__cluster_metadata-0"))
    for given, inside in ((root, root / "r.html"), (metadata, metadata.parent / "r.html"),
                          (metadata / "00000000000000000000.log", metadata / "r.html")):
        assert main(["report", str(given), "-o", str(inside)]) == 2
        assert "reading never writes into an input" in capsys.readouterr().err
        assert not inside.exists()


def full_model() -> Timeline:
    """A model holding as much as the caps let it, whatever the log's size: the page's worst case."""
    m = Timeline("/data/node-1/__cluster_metadata-0", "C" * 22, 1, "the log from offset 0", width=3_600_000)
    base = T0 // m.width
    types = [f"TYPE_{i}_RECORD" for i in range(25)] + ["NO_OP_RECORD"]
    for i in range(MAX_BUCKETS):
        m.buckets[base + i] = Bucket(i * 10_000, i * 10_000 + 9_999, 10_000, Counter(dict.fromkeys(types, 384)),
                                     50, 900, 900)
    m.type_totals = Counter(dict.fromkeys(types, 10_000_000))
    m.records, m.first_offset = sum(m.type_totals.values()), 0
    m.last_offset = 240 * 10_000

    def fill(capped: Capped, make) -> Capped:
        for i in range(capped.half * 2 + 50):
            capped.append(make(i))
        return capped

    def at(i: int) -> int:
        return T0 + i * 60_000

    def event(kind: str, subject: str):
        return lambda i: Event(i, at(i), kind, f"{subject}-{i % 999}", f"a long enough detail text number {i}" * 2,
                               i % 17, ("t" * 22, i % 40))

    fill(m.epochs, lambda i: Epoch(i, i, at(i), i % 3, "1,2,3"))
    fill(m.controller_events, event("voters", "voters"))
    fill(m.leader_events, event("leader", "topic-with-a-long-name"))
    fill(m.topic_events, event("created", "topic"))
    fill(m.changes, event("config", "TOPIC:orders"))
    fill(m.feature_events, event("feature", "group.version"))
    fill(m.problems, lambda i: f"offset {i}: a problem described at some length " * 3)
    for b in range(100):
        m.brokers[b] = BrokerLane("active", fill(Capped(LANE_EVENTS), event("fenced" if b % 2 else "active", f"broker {b}")))
    for p in range(200):
        track = PartitionTrack("topic-with-a-long-name", "t" * 22, p, 3, 1, (1, 2, 3), None, 3, None, 9, 9, 9)
        track.cells = {base + i: Cell(i, at(i), i, at(i), 2, 1, 1, 3, 3, 3) for i in range(MAX_BUCKETS)}
        m.partitions[("t" * 22, p)] = track
    return m


def test_page_size_is_bounded_whatever_the_log():
    page = render(full_model())
    assert len(page.encode()) < 10 * 2**20


def test_labels_people_read():
    assert [duration(ms) for ms in (200, 2_000, 1_200_000, 43_200_000)] == ["200 ms", "2 s", "20 min", "12 h"]
    assert short("__consumer_offsets-30") == "__consum\u2026_offsets-30" and short("orders-0") == "orders-0"
