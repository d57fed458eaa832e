#!/usr/bin/env bash
# Build kraftlog's sdist and wheel (python -m build) and install them as users would, in fresh venvs
# on each Python given (default: 3.11, 3.12, 3.13 from pyenv), outside the source tree:
#   1. `pip install kraftlog-*.whl`: the CLI alone; pyspark must not be there; `kraftlog dump` of a
#      fixture equals the source tree's;
#   2. `pip install 'kraftlog-*.whl[spark]'`: `kraftlog-spark` and `python -m kraftlog.spark` run the
#      job on fixtures/three-nodes on local[1];
#   3. on the first Python, `pip install kraftlog-*.tar.gz` (the sdist, built on the spot) and dump.
# Prints one line per step: seconds, venv size. Needs PyPI (or a pip cache) and Java 17+ for step 2.
#
#   scripts/check_wheel.sh [PYTHON...]      KEEP=1 keeps the work folder; SKIP_SPARK=1 skips step 2
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
BUILD_PYTHON=${BUILD_PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
if [ $# -eq 0 ]; then
    set -- /root/.pyenv/versions/3.11.*/bin/python /root/.pyenv/versions/3.12.*/bin/python \
        /root/.pyenv/versions/3.13.*/bin/python
fi
WORK=$(mktemp -d /tmp/kraftlog-check-wheel-XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
FIXTURE=$REPO/fixtures/single-node/__cluster_metadata-0/00000000000000007414.log

# pip's warnings about find-links folders that this machine's pip.conf names but lacks
quiet() { "$@" 2> >(grep -v '^WARNING: Location' >&2); }
step() { printf '%-8s %-34s %s\n' "$1" "$2" "$3"; }
mib() { du -sm "$1" | cut -f1; }
timed() { local t0=$SECONDS; quiet "$@"; T=$((SECONDS - t0)); }  # seconds in T

# sources copied, so that the build writes nothing into the worktree
mkdir -p "$WORK/src" && cp -r kraftlog pyproject.toml README.md "$WORK/src/"
find "$WORK/src" -name __pycache__ -prune -exec rm -rf {} +
timed "$BUILD_PYTHON" -m build -q --outdir "$WORK/dist" "$WORK/src" >"$WORK/build.log" 2>&1 \
    || { cat "$WORK/build.log" >&2; exit 1; }
WHEEL=$(ls "$WORK"/dist/kraftlog-*.whl) SDIST=$(ls "$WORK"/dist/kraftlog-*.tar.gz)
step build "sdist + wheel" "${T}s $(du -k "$WHEEL" | cut -f1) KiB wheel, $(du -k "$SDIST" | cut -f1) KiB sdist"
PYTHONPATH=$REPO "$BUILD_PYTHON" -m kraftlog.cli.main dump --format jsonl "$FIXTURE" >"$WORK/expected.jsonl"

first=1
for py in "$@"; do
    v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    venv=$WORK/py$v
    "$py" -m venv "$venv"
    quiet "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
    timed "$venv/bin/pip" install -q --disable-pip-version-check "$WHEEL"
    (cd "$WORK" && ! "$venv/bin/python" -c 'import pyspark' 2>/dev/null) || { echo "pyspark in the CLI's venv" >&2; exit 1; }
    (cd "$WORK" && env -u PYTHONPATH "$venv/bin/kraftlog" dump --format jsonl "$FIXTURE" >"$WORK/got.jsonl")
    cmp -s "$WORK/expected.jsonl" "$WORK/got.jsonl" || { echo "py$v: dump differs" >&2; exit 1; }
    step "py$v" "pip install kraftlog (CLI)" "${T}s, venv $(mib "$venv") MiB, dump ok, $(cd "$WORK" && "$venv/bin/kraftlog" --version)"
    if [ -z "${SKIP_SPARK:-}" ]; then
        timed "$venv/bin/pip" install -q --disable-pip-version-check "$WHEEL[spark]"
        t=$T out=$WORK/out$v
        (cd "$WORK" && timed env -u PYTHONPATH "$venv/bin/kraftlog-spark" --master 'local[1]' \
            --input "$REPO/fixtures/three-nodes" --output "$out" --at-offset 1000 >"$WORK/job$v.log" 2>&1 \
            && echo $T >"$WORK/t") || { tail -20 "$WORK/job$v.log" >&2; exit 1; }
        t2=$(cat "$WORK/t")
        records=$("$venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["counts"]["records"])' \
            "$out/_manifest.json")
        (cd "$WORK" && timed env -u PYTHONPATH "$venv/bin/python" -m kraftlog.spark --master 'local[1]' \
            --input "$REPO/fixtures/three-nodes" --output "$out" >"$WORK/job$v.log" 2>&1 \
            && echo $T >"$WORK/t") || { tail -20 "$WORK/job$v.log" >&2; exit 1; }
        t3=$(cat "$WORK/t")
        step "py$v" "pip install 'kraftlog[spark]'" "${t}s more, venv $(mib "$venv") MiB; kraftlog-spark ${t2}s ($records records), python -m kraftlog.spark ${t3}s"
    fi
    if [ -n "$first" ]; then
        first=
        sv=$WORK/sdist$v
        "$py" -m venv "$sv"
        timed "$sv/bin/pip" install -q --disable-pip-version-check "$SDIST"
        (cd "$WORK" && env -u PYTHONPATH "$sv/bin/kraftlog" dump --format jsonl "$FIXTURE" >"$WORK/got.jsonl")
        cmp -s "$WORK/expected.jsonl" "$WORK/got.jsonl" || { echo "py$v sdist: dump differs" >&2; exit 1; }
        step "py$v" "pip install kraftlog.tar.gz (sdist)" "${T}s, venv $(mib "$sv") MiB, dump ok"
    fi
done
echo "check_wheel: ok"
