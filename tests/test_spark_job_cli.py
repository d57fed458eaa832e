"""The job's command line on wrong input: a precise usage error (exit 2), no traceback, no output."""

import pytest

from spark_support import kraft_metadata

pytestmark = pytest.mark.spark


def test_a_time_that_is_no_time_is_refused_before_spark_starts(fixtures, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(kraft_metadata, "session", lambda *_, **__: pytest.fail("a session was started"))
    with pytest.raises(SystemExit) as exit_:
        kraft_metadata.main(["--input", str(fixtures / "fleet"), "--output", str(tmp_path / "out"),
                             "--at-time", "yesterday"])
    assert exit_.value.code == 2
    assert "--at-time: not an ISO-8601 time or epoch milliseconds: 'yesterday'" in capsys.readouterr().err


@pytest.mark.parametrize("size,says", [("lots", "not a size: 'lots'"),
                                       ("256MiB", "'256MiB' is less than a Python worker needs besides its events "
                                        "(at least 768MiB)")])
def test_a_worker_memory_too_small_or_no_size_is_refused_before_spark_starts(fixtures, tmp_path, monkeypatch,
                                                                            capsys, size, says):
    monkeypatch.setattr(kraft_metadata, "session", lambda *_, **__: pytest.fail("a session was started"))
    with pytest.raises(SystemExit) as exit_:
        kraft_metadata.main(["--input", str(fixtures / "fleet"), "--output", str(tmp_path / "out"),
                             "--worker-memory", size])
    assert exit_.value.code == 2
    assert f"--worker-memory: {says}" in capsys.readouterr().err


@pytest.mark.parametrize("wrong,says", [("missing", "no such directory"), ("empty", "no KRaft log dir below it")])
def test_an_input_without_log_dirs_is_an_error_not_an_empty_cluster(spark, fixtures, tmp_path, monkeypatch,
                                                                    capsys, wrong, says):
    (tmp_path / "empty").mkdir()
    monkeypatch.setattr(kraft_metadata, "session", lambda *_, **__: spark)
    code = kraft_metadata.main(["--input", str(fixtures / "fleet"), str(tmp_path / wrong),
                                "--output", str(tmp_path / "out")])
    assert code == 2
    assert f"error: --input {tmp_path / wrong}: {says}" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]  # no output, no staging left behind
