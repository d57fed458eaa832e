#!/usr/bin/env bash
# Install everything kraftlog needs into ./.venv (Python >= 3.11; Java 17+ for Spark).
# Safe to run again: it only adds what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "setup: kraftlog needs Python 3.11 or newer (found: $("$PYTHON" --version 2>&1))" >&2
    exit 1
fi

java_ok() { java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])'; }
if ! java_ok; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing Java 17 (needed by Spark) with apt-get" >&2
        apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null
    fi
    java_ok || { echo "setup: Spark needs Java 17 or newer on PATH; install it (e.g. openjdk-17-jre-headless) and rerun" >&2; exit 1; }
fi

# Optional: headless Chromium for the report's browser test (skipped without it). Set
# KRAFTLOG_SKIP_BROWSER=1 to leave it out; a failed install is only a note.
if [ -z "${KRAFTLOG_SKIP_BROWSER:-}" ] && ! command -v chromium >/dev/null \
        && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing Chromium (for the report's browser test) with apt-get" >&2
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null; } \
        || echo "setup: note: Chromium was not installed; the report's browser test will be skipped" >&2
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[spark,test]' 2>&1 | grep -v '^WARNING: Location' || true
.venv/bin/python -c 'import kraftlog, pyspark; from kraftlog.wire.crc import IMPLEMENTATION as crc; print("setup: ok, kraftlog", kraftlog.__version__, "pyspark", pyspark.__version__, "CRC-32C:", crc)'
# Spark 3.5, the oldest Spark the job supports, in a second venv (same Python): the suite runs the job
# there too and checks that it gives Spark 4's tables (tests/test_spark_fixtures.py). Set
# KRAFTLOG_SKIP_SPARK35=1 (here and for the tests) to leave it out; those tests then skip.
if [ -z "${KRAFTLOG_SKIP_SPARK35:-}" ]; then
    [ -x .venv-spark35/bin/python ] || "$PYTHON" -m venv .venv-spark35
    .venv-spark35/bin/python -m pip install -q --disable-pip-version-check -e '.[spark]' 'pyspark>=3.5,<3.6' 2>&1 \
        | grep -v '^WARNING: Location' || true
    .venv-spark35/bin/python -c 'import pyspark; print("setup: ok, .venv-spark35 with pyspark", pyspark.__version__)'
fi
# The Spark driver's class archive (112 MiB in ~/.cache/kraftlog, one per pyspark and Java) makes
# each embedded session start sooner, but writing it costs a run of the job (20-45 s on two cores):
# about four sessions' gain (scripts/bench_class_archive.py), more than the tests start. So it is
# written only when asked: KRAFTLOG_CLASS_ARCHIVE=1 ./scripts/setup.sh, or at any time
# .venv/bin/python -m kraftlog.spark.classes (--remove deletes it).
if [ -n "${KRAFTLOG_CLASS_ARCHIVE:-}" ]; then
    .venv/bin/python -m kraftlog.spark.classes 2>/dev/null | sed 's/^kraftlog.spark.classes/setup/' \
        || echo "setup: note: no Spark class archive written (run .venv/bin/python -m kraftlog.spark.classes to see why)" >&2
fi
