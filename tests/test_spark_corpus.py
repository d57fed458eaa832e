"""The Spark job over the whole real corpus (../shared/corpus/real): one run, then what it wrote.

The views at every checkpoint's last offset equal the checkpoint and the local replay; ``records``
holds one row per (cluster, offset) and, for a cluster copied once, every record Kafka decodes in
its segments; copies of one cluster that disagree give divergence rows and the Raft-newer copy wins.
"""

import gzip
import json
import uuid
from collections import Counter, defaultdict

import pytest

from conftest import CORPUS, GOLDEN
from kraftlog.files.logdir import find_nodes, scan_file
from kraftlog.spark.discover import cluster_of
from kraftlog.spark.job import TABLES, Options, run
from kraftlog.state.rebuild import load_checkpoint, rebuild
from spark_support import Views, compared, table

REAL = CORPUS / "real"
pytestmark = [pytest.mark.spark, pytest.mark.corpus,
              pytest.mark.skipif(not REAL.is_dir(), reason="the shared corpus (../shared/corpus) is absent")]


@pytest.fixture(scope="module")
def job(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("spark-corpus") / "out"
    manifest = run(spark, Options(inputs=[str(REAL)], output=str(out), every_checkpoint=True, redact=False))
    return out, manifest


@pytest.fixture(scope="module")
def nodes():
    return find_nodes(REAL)


def test_views_at_every_checkpoint_equal_the_checkpoint_and_replay(job, nodes):
    out, _ = job
    views = Views(out)
    compared_with_log = 0
    checkpoints = [(node, snap) for node in nodes for snap in node.snapshots]
    for node, snap in checkpoints:
        got = views.image(cluster_of(node), snap.offset - 1)
        assert got == compared(load_checkpoint(snap).to_json(redact=False)), snap.path
        first = node.segments[0].offset if node.segments else None
        last = scan_file(node.segments[-1]).last_offset if node.segments else -1
        if first == 0 and snap.offset - 1 <= last:  # the log reaches it: replay from offset 0 too
            built = rebuild(node, offset=snap.offset - 1, base="none")
            assert got == compared(built.image.to_json(redact=False)), snap.path
            compared_with_log += 1
    assert len(checkpoints) >= 100 and compared_with_log >= 9


def _kafka_record_count(segment) -> int:
    """Records Kafka's own decoder printed for the segment (golden), else what the reader counts."""
    golden = GOLDEN / segment.path.relative_to(CORPUS).with_name(segment.path.name + ".jsonl.gz")
    if golden.exists():
        with gzip.open(golden, "rt") as f:
            return sum(json.loads(line)["kind"] == "record" for line in f)
    return scan_file(segment).records


def test_records_one_row_per_offset_and_every_record_of_a_single_copy(job, nodes):
    out, _ = job
    rows = table(out, "records")
    per_offset = Counter((r["cluster_id"], r["offset"]) for r in rows)
    assert max(per_offset.values()) == 1
    per_cluster = Counter(r["cluster_id"] for r in rows)
    copies = defaultdict(list)
    for n in nodes:
        copies[cluster_of(n)].append(n)
    single = [c for c, ns in copies.items() if len(ns) == 1 and ns[0].segments]
    assert len(single) >= 5
    for c in single:
        assert per_cluster[c] == sum(_kafka_record_count(s) for s in copies[c][0].segments), c


def test_diverging_copies_give_divergence_rows_and_the_newer_lineage_wins(job):
    # greenlemonT: data/kafka (epochs 1-4) was an earlier cluster with the same id as kafka1-3
    # (epochs 3-190); at offsets 0-6012 the copies disagree, and kafka1's copy (epoch 190) is kept.
    out, _ = job
    cluster = "EpwKlK0lR6qKZW0cGwZz8w"
    div = [d for d in table(out, "divergence") if d["cluster_id"] == cluster]
    assert sorted(d["offset"] for d in div) == list(range(6013))
    for d in div:
        assert d["chosen_log_dir"].endswith("kafka1") and d["chosen_node_id"] == 1
        assert {c["log_dir"].rsplit("/", 1)[-1]: c["agrees"] for c in d["copies"]}["kafka"] is False
    kept = {r["offset"]: r for r in table(out, "records") if r["cluster_id"] == cluster}
    assert len(kept) == 30638 and all(kept[o]["log_dir"].endswith(("kafka1", "kafka2", "kafka3")) for o in range(6013))


def test_a_log_that_starts_after_its_snapshot_is_seeded_from_it(job):
    out, manifest = job
    cluster = "L44pgypeTtCc97sEvUm2mw"  # FrankXu: log 63287-83010, snapshot 70531
    assert manifest["clusters"][cluster]["seeds"] == [70530]
    assert manifest["clusters"][cluster]["unreplayable_offsets"] == [[63287, 70530]]
    problems = [p for p in table(out, "problems") if p["cluster_id"] == cluster]
    assert [(p["kind"], p["offset"]) for p in problems] == [("unreplayable", 63287)]
    history = [h for h in table(out, "partition_history") if h["cluster_id"] == cluster]
    assert min(h["valid_from_offset"] for h in history) == 70530
    assert all(h["change"] == "snapshot" for h in history if h["valid_from_offset"] == 70530)


def test_run_id_manifest_and_counts(job):
    out, manifest = job
    run_id = uuid.UUID(manifest["run_id"])
    assert run_id.version == 7
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".out.")], "staging left behind"
    assert json.loads((out / "_manifest.json").read_text()) == json.loads(json.dumps(manifest, default=str))
    for name in TABLES:
        rows = table(out, name)
        assert len(rows) == manifest["counts"][name], name
        assert {r["run_id"] for r in rows} <= {manifest["run_id"]}
    assert manifest["counts"]["records"] == 121479
