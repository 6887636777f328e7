#!/usr/bin/env bash
# Set up (venv, dependencies) and run the test suite. pytest's exit 5 (no tests collected) is a failure here.
source "$(dirname "$0")/env.sh"
export DAGSTER_HOME="$(mktemp -d)"   # tests never touch the project's instance
cp "$ROOT/dagster.yaml.template" "$DAGSTER_HOME/dagster.yaml"
# the linter and the formatter first (pyproject's [tool.ruff]: pyflakes, pycodestyle's errors, bugbear, import order;
# ruff's format): a second
.venv/bin/ruff check "$ROOT"
.venv/bin/ruff format --check "$ROOT"
set +e
# two pytest workers (pytest-xdist): the suite's time is half waiting (subprocesses, servers, Dagster's overhead), so two
# workers on 2 cores took 423 s where one took 736 s; TINYBENCH_TEST_WORKERS=0 runs in one process
# --dist loadgroup: tests marked with one xdist_group share a worker (the docs examples build their project home once;
# conftest.py groups the tests of a module-scoped fixture); --no-loadscope-reorder keeps conftest.py's order (the
# longest tests first) instead of putting the largest groups first; --durations=15 lists where the time went
.venv/bin/python -m pytest -p no:cacheprovider -n "${TINYBENCH_TEST_WORKERS:-2}" --dist loadgroup --no-loadscope-reorder --durations=15 "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi
exit "$rc"
