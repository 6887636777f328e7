#!/usr/bin/env bash
# Set up (venv, dependencies, Dagster instance) and materialize every asset on the real default data.
source "$(dirname "$0")/env.sh"
exec .venv/bin/tinybench run-all "$@"
