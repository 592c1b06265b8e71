#!/usr/bin/env bash
# Every test, as `make test` runs it: the website is built once (warnings are errors), then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

echo "== ruff"
ruff check .

echo "== website (jupyter-book build -W)"
jupyter-book build . --builder html -W --keep-going > _build.log 2>&1 || {
  tail -n 80 _build.log; echo "the website build failed (full log: _build.log)"; exit 1; }
echo "built in $((SECONDS - start)) s"

echo "== pytest"
COURSE_SKIP_BUILD=1 python -m pytest -q "$@"
echo "make test took $((SECONDS - start)) s"
