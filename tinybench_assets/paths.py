"""Default locations, each overridable by an environment variable."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _env_path(var: str, default: Path) -> str:
    value = os.environ.get(var)
    return str(Path(value).expanduser()) if value else str(default)


def duckdb_path() -> str:
    """TINYBENCH_DUCKDB, default data/tinybench.duckdb."""
    return _env_path("TINYBENCH_DUCKDB", PROJECT_ROOT / "data" / "tinybench.duckdb")


def store_target() -> str:
    """The results store: TINYBENCH_STORE (a ``postgresql://`` URL, or a DuckDB file path), else ``duckdb_path()``."""
    value = os.environ.get("TINYBENCH_STORE", "").strip()
    if not value:
        return duckdb_path()
    return value if value.lower().startswith(("postgresql://", "postgres://")) else str(Path(value).expanduser())


def incoming_dir() -> str:
    """TINYBENCH_INCOMING, default data/incoming (the landing folder)."""
    return _env_path("TINYBENCH_INCOMING", PROJECT_ROOT / "data" / "incoming")


def quarantine_dir() -> str:
    """TINYBENCH_QUARANTINE, default data/quarantine."""
    return _env_path("TINYBENCH_QUARANTINE", PROJECT_ROOT / "data" / "quarantine")


def artifacts_dir() -> str:
    """TINYBENCH_ARTIFACTS, default data/artifacts (exported tiny benchmarks, plots)."""
    return _env_path("TINYBENCH_ARTIFACTS", PROJECT_ROOT / "data" / "artifacts")


def default_data_dir() -> str:
    """TINYBENCH_DEFAULT_DATA, default ../shared/data (the real leaderboards)."""
    return _env_path("TINYBENCH_DEFAULT_DATA", PROJECT_ROOT.parent / "shared" / "data")


AGGREGATE_CSV = "leaderboard_aggregate_scores.csv"


def aggregate_csv(board: str, override: str = "", data_dir: str | Path | None = None) -> str:
    """A leaderboard's aggregate table (model families: arch, size, merged, ...): ``override`` when given, else
    <default data dir>/<board>/leaderboard_aggregate_scores.csv (the file may be absent: families then come
    from model names)."""
    return override or str(Path(data_dir or default_data_dir()) / board / AGGREGATE_CSV)
