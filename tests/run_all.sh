#!/usr/bin/env bash
# Every test, as `make test` runs it: the website is built once (warnings are errors), then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

echo "== ruff"
ruff check .

echo "== website (jupyter-book build -W)"
{ python book/_ext/prerun.py && jupyter-book build . --builder html -W --keep-going; } > _build.log 2>&1 || {
  tail -n 80 _build.log; echo "the website build failed (full log: _build.log)"; exit 1; }
echo "built in $((SECONDS - start)) s"

echo "== pytest"
# One pytest worker per core (at most 4; TEST_WORKERS=N to choose, 1 for a serial run), a test
# file's tests all on one worker (--dist loadfile) so that module fixtures are built once.
workers="${TEST_WORKERS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}"
COURSE_SKIP_BUILD=1 python -m pytest -q -n "$workers" --dist loadfile --durations=30 "$@"
echo "make test took $((SECONDS - start)) s"
