"""Which copy's records the first pass decodes is a guess (``copies.likely_first``); the tables
must not depend on it. Three copies of one log, one with an uncommitted tail: run once as the job
guesses, once with the guess forced onto the copy that loses."""

import pytest

from kraftlog.spark import copies
from kraftlog.spark.job import Options, run
from spark_support import table

pytestmark = pytest.mark.spark
COMPARED = ("records", "divergence", "problems", "topic_history", "partition_history", "config_history",
            "broker_history", "controller_history")


def _rows(out, name) -> list:
    return sorted(tuple(sorted((k, repr(v)) for k, v in r.items() if k != "run_id")) for r in table(out, name))


def test_tables_do_not_depend_on_the_copy_decoded_first(spark, fixtures, tmp_path, monkeypatch):
    inputs = [str(fixtures / "three-nodes")]
    guessed = run(spark, Options(inputs=inputs, output=str(tmp_path / "guessed")))
    chosen = {c["node_id"] for c in guessed["clusters"][next(iter(guessed["clusters"]))]["copies"] if c["rank"] == 0}
    assert chosen != {3}
    monkeypatch.setattr(copies, "likely_first", lambda inv: {c.copy_id for c in inv.copies if c.node_id == 3})
    forced = run(spark, Options(inputs=inputs, output=str(tmp_path / "forced")))
    assert forced["counts"] == guessed["counts"]
    for name in COMPARED:
        assert _rows(tmp_path / "forced", name) == _rows(tmp_path / "guessed", name), name
    assert table(tmp_path / "forced", "divergence"), "node 3's tail diverges"


def test_two_clusters_sharing_a_cluster_id_are_kept_apart(spark, tmp_path):
    """Cluster b's copies rewritten to claim cluster a's id (and holding the same node ids): a
    problems row per copy of b, and the tables are a's alone."""
    from kraftlog.cli.main import main

    for seed in "ab":
        assert main(["generate", str(tmp_path / "in" / seed), "--nodes", "3", "--duration", "5m", "--seed", seed]) == 0
    claimed = (tmp_path / "in/a/node-1/meta.properties").read_text().split("cluster.id=")[1].split()[0]
    for n in (1, 2, 3):
        meta = tmp_path / f"in/b/node-{n}/meta.properties"
        meta.write_text(meta.read_text().replace(meta.read_text().split("cluster.id=")[1].split()[0], claimed))
    both = run(spark, Options(inputs=[str(tmp_path / "in")], output=str(tmp_path / "both")))
    alone = run(spark, Options(inputs=[str(tmp_path / "in/a")], output=str(tmp_path / "alone")))
    apart = [p for p in table(tmp_path / "both", "problems") if "another log" in (p["detail"] or "")]
    assert sorted(p["log_dir"].split("/")[-2:][0] + str(p["node_id"]) for p in apart) == ["b1", "b2", "b3"]
    assert sum("and the same node id" in p["detail"] for p in apart) == 1  # b's copy of a's best node
    assert both["counts"]["records"] == alone["counts"]["records"]
    for name in ("records", "topic_history", "partition_history", "config_history", "broker_history"):
        assert _rows(tmp_path / "both", name) == _rows(tmp_path / "alone", name), name
