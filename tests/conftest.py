"""Shared test fixtures: where the shared corpus lives, and how to read its golden decodings."""

import gzip
import importlib.util
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests draw the same examples on every run (a seed per test, from its name): a run passes or
# fails on the code, not on the draw. ``pytest --hypothesis-profile=explore`` draws new ones (to look for
# bugs, not to gate a change). Neither has a deadline or the too_slow health check: both time examples, and a
# loaded machine or a full collection makes a run slow, not wrong. A test's own ``settings(...)`` inherits
# the profile (conftest is imported before the test modules; the option's profile is loaded before them too).
_untimed = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("kraftlog", derandomize=True, **_untimed)
settings.register_profile("explore", **_untimed)
settings.load_profile("kraftlog")

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
GOLDEN = CORPUS / "golden"
NO_CORPUS = "the shared corpus (../shared/corpus beside the repo) is absent, as on a user's machine"


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(NO_CORPUS)
    return CORPUS


def golden_files() -> list[tuple[Path, Path]]:
    """(raw file, its golden decoding) for every golden decoding in the corpus."""
    if not GOLDEN.is_dir():
        return []
    return [
        (CORPUS / g.relative_to(GOLDEN).with_suffix("").with_suffix(""), g)
        for g in sorted(GOLDEN.rglob("*.jsonl.gz"))
    ]


def read_golden(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def corpus_log_files(*, metadata_only: bool = False) -> list[Path]:
    """Every segment and checkpoint of the real corpus (``.deleted`` and ``.part`` left out)."""
    if not CORPUS.is_dir():
        return []
    from kraftlog.files.paths import classify

    files = [classify(p) for p in sorted((CORPUS / "real").rglob("*")) if p.is_file()]
    return [f.path for f in files if f.kind != "other" and (f.is_metadata or not metadata_only)]


# The real parts, started once per test session for every module. A session fixture imported into
# a test module is that module's own (pytest caches a fixture per module that defines it): modules
# that imported these started a cluster, an S3 server and a Connect server each, kept until the end.
if importlib.util.find_spec("pyspark") is not None:  # else the Spark tests' modules fail to import anyway
    from cluster_support import s3, spark_cluster, spark_connect, spark_s3  # noqa: E402,F401
    from spark_support import fixtures, local_run_three, spark  # noqa: E402,F401
