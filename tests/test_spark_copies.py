"""Which copy's records the first pass decodes is a guess (``copies.likely_first``); the tables
must not depend on it. Three copies of one log, one with an uncommitted tail: run once as the job
guesses, once with the guess forced onto the copy that loses."""

import pytest

from kraftlog.spark import copies
from kraftlog.spark.job import Options, run
from spark_support import fixtures, spark, table  # noqa: F401

pytestmark = pytest.mark.spark
COMPARED = ("records", "divergence", "problems", "topic_history", "partition_history", "config_history",
            "broker_history", "controller_history")


def _rows(out, name) -> list:
    return sorted(tuple(sorted((k, repr(v)) for k, v in r.items() if k != "run_id")) for r in table(out, name))


def test_tables_do_not_depend_on_the_copy_decoded_first(spark, fixtures, tmp_path, monkeypatch):  # noqa: F811
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
