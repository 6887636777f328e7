# Sourced by the other scripts: a project-local venv (.venv) and Dagster instance (.dagster_home).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export DAGSTER_HOME="${DAGSTER_HOME:-$ROOT/.dagster_home}"
mkdir -p "$DAGSTER_HOME"
[ -f "$DAGSTER_HOME/dagster.yaml" ] || cp "$ROOT/dagster.yaml.template" "$DAGSTER_HOME/dagster.yaml"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PY=python3.11
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.tinybench-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  # torch first and pinned: 2.13.0 installs from the machine's local CPU wheel, not a multi-GB CUDA build.
  .venv/bin/python -m pip install -q "torch==2.13.0"
  .venv/bin/python -m pip install -q -e ".[dev]"
  touch "$stamp"
fi

# Headless Chromium for the browser test (tinybench_assets_tests/test_ui): Debian's package, driven by the
# Python playwright package with executable_path=/usr/bin/chromium (never `playwright install`, no browser download).
# TINYBENCH_SKIP_CHROMIUM=1 skips this step; the browser test then fails with the reason.
if [ ! -x /usr/bin/chromium ] && [ "${TINYBENCH_SKIP_CHROMIUM:-0}" != 1 ]; then
  _apt=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then _apt=(sudo -n); else
      echo "ERROR: scripts/env.sh: /usr/bin/chromium is missing and cannot be installed: not root and no password-less sudo" >&2
      echo "       (as root: apt-get install chromium; or set TINYBENCH_SKIP_CHROMIUM=1 to go on without the browser test)" >&2
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "ERROR: scripts/env.sh: /usr/bin/chromium is missing and there is no apt-get to install Debian's chromium package" >&2
    exit 1
  fi
  _log="$(mktemp)"
  echo "installing Debian's chromium package (apt-get) for the browser test ..." >&2
  if ! { "${_apt[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
         && "${_apt[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
              -o Dpkg::Use-Pty=0 chromium; } >"$_log" 2>&1 || [ ! -x /usr/bin/chromium ]; then
    echo "ERROR: scripts/env.sh: apt-get could not install chromium (/usr/bin/chromium missing); its last output:" >&2
    tail -n 20 "$_log" >&2
    rm -f "$_log"
    exit 1
  fi
  rm -f "$_log"
fi

# PostgreSQL server binaries for the scale-out profile's tests (tinybench_assets_tests/test_deploy: a throwaway server,
# initdb + pg_ctl on a temporary folder, no system service): Debian's postgresql package, whose binaries live in
# /usr/lib/postgresql/<version>/bin, off PATH. TINYBENCH_SKIP_POSTGRES=1 skips this step; those tests then fail with the
# reason.
_have_initdb() {
  command -v initdb >/dev/null 2>&1 && return 0
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}
if ! _have_initdb && [ "${TINYBENCH_SKIP_POSTGRES:-0}" != 1 ]; then
  _apt=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then _apt=(sudo -n); else
      echo "ERROR: scripts/env.sh: PostgreSQL's initdb is missing and cannot be installed: not root and no password-less sudo" >&2
      echo "       (as root: apt-get install postgresql; or set TINYBENCH_SKIP_POSTGRES=1 to go on without the PostgreSQL tests)" >&2
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "ERROR: scripts/env.sh: PostgreSQL's initdb is missing and there is no apt-get to install Debian's postgresql package" >&2
    exit 1
  fi
  _log="$(mktemp)"
  echo "installing Debian's postgresql package (apt-get) for the PostgreSQL tests ..." >&2
  if ! { "${_apt[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
         && "${_apt[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
              -o Dpkg::Use-Pty=0 postgresql; } >"$_log" 2>&1 || ! _have_initdb; then
    echo "ERROR: scripts/env.sh: apt-get could not install postgresql (no initdb on PATH or in /usr/lib/postgresql/*/bin); its last output:" >&2
    tail -n 20 "$_log" >&2
    rm -f "$_log"
    exit 1
  fi
  rm -f "$_log"
fi
