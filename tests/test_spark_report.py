"""The job's ``--report FILE``: each cluster's ``kraftlog report`` page of the copy the job ranked
first, written on the driver; FILE itself for one cluster, FILE's stem plus the cluster id beside it
for several; inside OUT, published with the tables; refused inside an input before any Spark work."""

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from test_report_html import FETCHES

from kraftlog.spark import job
from kraftlog.spark.discover import discover
from spark_support import kraft_metadata

pytestmark = pytest.mark.spark


def _submit(argv: list[str]) -> tuple[int, dict, str]:
    """The job's exit code, the JSON it prints and its stderr, run in this process's Spark session."""
    with redirect_stdout(io.StringIO()) as out, redirect_stderr(io.StringIO()) as err:
        code = kraft_metadata.main(argv)
    return code, json.loads(out.getvalue()), err.getvalue()


def _run(inputs: Path, folder: Path, report: str) -> tuple[int, dict, str, dict, Path]:
    folder.mkdir()
    code, printed, err = _submit(["--input", str(inputs), "--output", str(folder / "tables"),
                                  "--report", str(folder / report)])
    return code, printed, err, json.loads((folder / "tables" / "_manifest.json").read_text()), folder / report


@pytest.fixture(scope="module")
def fleet(spark, fixtures, tmp_path_factory):
    """Reports into a folder that does not exist yet."""
    return _run(fixtures / "fleet", tmp_path_factory.mktemp("fleet-report") / "out", "reports/report.html")


@pytest.fixture(scope="module")
def three_nodes(spark, fixtures, tmp_path_factory):
    """The report inside the job's output folder: publishing replaces that folder, and must carry it."""
    return _run(fixtures / "three-nodes", tmp_path_factory.mktemp("three-nodes-report") / "out", "tables/report.html")


def test_several_clusters_one_self_contained_page_each(fleet):
    code, printed, err, manifest, report = fleet
    assert code == 0, err
    clusters = set(manifest["clusters"])
    assert len(clusters) == 3 and set(manifest["reports"]) == clusters
    assert printed["reports"] == manifest["reports"]
    assert not report.exists()
    for cluster, entry in manifest["reports"].items():
        path = report.with_name(f"report-{cluster}.html")
        assert entry["path"] == str(path) and "error" not in entry
        page = path.read_text()
        assert entry["bytes"] == path.stat().st_size > 100_000
        assert not FETCHES.search(page)
        assert cluster in page and not any(other in page for other in clusters - {cluster})
        assert entry["node_id"] == manifest["clusters"][cluster]["copies"][0]["node_id"]
    assert list(manifest["stage_seconds"])[-1] == "report"  # after every table is staged
    assert sorted(p.name for p in report.parent.iterdir()) == sorted(f"report-{c}.html" for c in clusters)


def test_one_cluster_writes_file_itself_from_the_first_ranked_copy(three_nodes):
    code, printed, err, manifest, report = three_nodes
    assert code == 0, err
    [(cluster, entry)] = manifest["reports"].items()
    assert entry["path"] == str(report) and entry["bytes"] == report.stat().st_size
    assert (report.parent / "_manifest.json").is_file() and not list(report.parent.parent.glob(".tables.*"))
    first = manifest["clusters"][cluster]["copies"][0]
    assert (entry["node_id"], entry["log_dir"]) == (first["node_id"], first["log_dir"])
    assert entry["node_id"] != 3  # node 3 keeps an uncommitted tail: reaching furthest, it is not Raft's copy
    page = report.read_text()
    assert cluster in page and not FETCHES.search(page)
    assert "[redacted]" in page  # redacted by default, as the tables are


@pytest.mark.parametrize("inside", ["fleet/cluster-3.7/report.html",
                                    "fleet/cluster-3.7/__cluster_metadata-0/report.html"])
@pytest.mark.parametrize("given", ["fleet", "fleet/cluster-3.7/__cluster_metadata-0"])
def test_report_inside_an_input_is_refused_before_any_spark_work(fixtures, tmp_path, monkeypatch,
                                                                  capsys, given, inside):
    def no_spark(*_):
        raise AssertionError("a session was started")

    monkeypatch.setattr(kraft_metadata, "session", no_spark)
    with pytest.raises(SystemExit) as exit_:
        kraft_metadata.main(["--input", str(fixtures / given), "--output", str(tmp_path / "tables"),
                             "--report", str(fixtures / inside)])
    assert exit_.value.code == 2
    assert "reading never writes into an input" in capsys.readouterr().err
    assert not (fixtures / inside).exists() and not (tmp_path / "tables").exists()


def test_a_failing_report_is_named_and_the_others_still_written(fixtures, tmp_path, monkeypatch):
    inv = discover([str(fixtures / "fleet")])
    rank = {c.copy_id: 0 for c in inv.copies}
    failing = inv.copies[0].cluster_id
    collect = job.collect

    def broken(node, **kw):
        if node.cluster_id == failing:
            raise OSError("disk gone")
        return collect(node, **kw)

    monkeypatch.setattr(job, "collect", broken)
    opts = job.Options([str(fixtures / "fleet")], str(tmp_path / "tables"), report=str(tmp_path / "r.html"))
    reports = job._reports(opts, inv, rank)
    assert reports[failing]["error"] == "OSError: disk gone" and "bytes" not in reports[failing]
    written = {c: r for c, r in reports.items() if c != failing}
    assert len(written) == 2 and all(Path(r["path"]).stat().st_size == r["bytes"] for r in written.values())

    manifest = {"run_id": "r", "counts": {}, "stage_seconds": {}, "reports": reports}
    monkeypatch.setattr(kraft_metadata, "session", lambda *_, **__: None)
    monkeypatch.setattr(kraft_metadata, "run", lambda session, opts: manifest)
    code, printed, err = _submit(["--input", str(fixtures / "fleet"), "--output", str(tmp_path / "tables"),
                                  "--report", str(tmp_path / "r.html")])
    assert code == 1 and printed["reports"] == reports
    assert f"no report for cluster {failing} (OSError: disk gone); the tables are published in" in err


def test_no_redact_shows_secrets_in_the_report(fixtures, tmp_path):
    inv = discover([str(fixtures / "three-nodes")])
    rank = {c.copy_id: c.node_id - 1 for c in inv.copies}
    pages = {}
    for redact in (True, False):
        opts = job.Options([], "", redact=redact, report=str(tmp_path / f"{redact}.html"))
        [entry] = job._reports(opts, inv, rank).values()
        pages[redact] = Path(entry["path"]).read_text()
    assert "[redacted]" in pages[True] and "[redacted]" not in pages[False]


def test_cluster_ids_name_no_other_folder():
    assert job.report_file("out/r.html", "unknown:/data/../x", 2) == Path("out/r-unknown__data____x.html").absolute()
    assert job.report_file("out/r.html", "w3_SdNBGSe2BMoJvVz_GBA", 1) == Path("out/r.html").absolute()
