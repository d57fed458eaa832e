"""The job on inputs in object storage (a local moto S3 server) gives the tables it gives on the same
files on disk; a file that changes between discovery and the read is a problem row, not a silent
loss or a crashed worker."""

import os
import shutil

import pytest

from cluster_support import tables
from kraftlog.spark import job as job_module
from kraftlog.spark.job import Options, run
from spark_support import table

pytestmark = pytest.mark.spark


def test_the_job_on_s3_gives_the_tables_it_gives_on_disk(s3, spark, spark_s3, fixtures, tmp_path):
    local = fixtures / "three-nodes"
    uri = s3.upload(local, s3.bucket("job-input") + "/archive/three-nodes")
    run(spark, Options(inputs=[str(local)], output=str(tmp_path / "local"), at_offsets=[1000],
                       report=str(tmp_path / "local.html")))
    run(spark_s3, Options(inputs=["s3a" + uri[2:]], output=str(tmp_path / "s3"), at_offsets=[1000],
                          report=str(tmp_path / "s3.html")))
    # the report is of the same log (its page names where it was read, so sizes differ by that alone)
    sizes = [(tmp_path / f"{name}.html").stat().st_size for name in ("local", "s3")]
    assert abs(sizes[0] - sizes[1]) < 2000 and sizes[0] > 50_000, sizes
    here = tables(tmp_path / "local", {"ROOT": str(local.resolve())})
    there = tables(tmp_path / "s3", {"ROOT": "s3a" + uri[2:]})
    assert sorted(here) == sorted(there) and len(here) > 10
    for name in here:
        assert here[name] == there[name], name
    assert len(here["records"]) > 2000 and len(here["batches"]) > 2000
    assert any("s3a://job-input/archive/three-nodes/node-1/__cluster_metadata-0/" in str(r)
               for r in table(tmp_path / "s3", "files"))


def test_a_segment_truncated_after_discovery_is_a_problem_row_not_lost_in_silence(spark, fixtures, tmp_path,
                                                                                  monkeypatch):
    copy = tmp_path / "in"
    shutil.copytree(fixtures / "single-node", copy)
    segment = max((copy.rglob("*.log")), key=lambda p: p.stat().st_size)
    size = segment.stat().st_size
    discover = job_module.discover

    def then_truncate(inputs):
        inv = discover(inputs)
        os.truncate(segment, size // 2)  # as retention or a broker's recovery would, between the passes
        return inv

    monkeypatch.setattr(job_module, "discover", then_truncate)
    run(spark, Options(inputs=[str(copy)], output=str(tmp_path / "out")))
    problems = [p for p in table(tmp_path / "out", "problems") if p["kind"] == "unreadable"]
    assert [(p["file"], p["detail"]) for p in problems] == [
        (str(segment), f"is not the file that was listed: {size} bytes when listed, {size // 2} now")]
    assert not [b for b in table(tmp_path / "out", "batches") if b["file"] == str(segment)]
