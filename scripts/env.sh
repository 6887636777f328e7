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

# Debian packages a test needs, installed with apt-get when missing (as root, or with password-less sudo).
# _apt_install PACKAGE CHECK SKIP_VAR WHAT: CHECK is a command that succeeds once the package is there.
_apt_install() {
  local pkg="$1" check="$2" skip="$3" what="$4" _log
  local -a _apt=()
  if eval "$check" || [ "${!skip:-0}" = 1 ]; then return 0; fi
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then _apt=(sudo -n); else
      echo "ERROR: scripts/env.sh: $what is missing and cannot be installed: not root and no password-less sudo" >&2
      echo "       (as root: apt-get install $pkg; or set $skip=1 to go on without the tests that need it)" >&2
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "ERROR: scripts/env.sh: $what is missing and there is no apt-get to install Debian's $pkg package" >&2
    exit 1
  fi
  _log="$(mktemp)"
  echo "installing Debian's $pkg package (apt-get) for the tests that need $what ..." >&2
  if ! { "${_apt[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
         && "${_apt[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
              -o Dpkg::Use-Pty=0 "$pkg"; } >"$_log" 2>&1 || ! eval "$check"; then
    echo "ERROR: scripts/env.sh: apt-get could not install $pkg ($what still missing); its last output:" >&2
    tail -n 20 "$_log" >&2
    rm -f "$_log"
    exit 1
  fi
  rm -f "$_log"
}

# Headless Chromium for the browser test (tinybench_assets_tests/test_ui): Debian's package, driven by the
# Python playwright package with executable_path=/usr/bin/chromium (never `playwright install`, no browser download).
# TINYBENCH_SKIP_CHROMIUM=1 skips this step; the browser test then fails with the reason.
_apt_install chromium '[ -x /usr/bin/chromium ]' TINYBENCH_SKIP_CHROMIUM /usr/bin/chromium

# PostgreSQL server binaries for the scale-out profile's tests (tinybench_assets_tests/test_deploy: a throwaway server,
# initdb + pg_ctl on a temporary folder, no system service): Debian's postgresql package, whose binaries live in
# /usr/lib/postgresql/<version>/bin, off PATH. TINYBENCH_SKIP_POSTGRES=1 skips this step; those tests then fail with the
# reason.
_apt_install postgresql 'command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null' \
  TINYBENCH_SKIP_POSTGRES "PostgreSQL's initdb"

# Redis for the distributed profile's test (tinybench_assets_tests/test_deploy/test_celery.py: a throwaway broker,
# redis-server on a temporary folder and a free loopback port, no system service): Debian's redis-server package.
# TINYBENCH_SKIP_REDIS=1 skips this step; that test then fails with the reason.
_apt_install redis-server 'command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ]' \
  TINYBENCH_SKIP_REDIS "redis-server"
