"""Code and data versions, so Dagster knows what is stale and a run with nothing new refits nothing.

* Code versions: every asset's ``code_version`` is a hash of the source files its result depends on (its asset
  module and the core modules it calls). Editing one of them marks that asset stale in the UI, and ``tinybench
  run-all`` re-materializes it. A pattern that matches no file fails at load, so a moved module is not forgotten.
* Data versions: the roots report content hashes: ``landing_ingest`` the set of active drops, ``raw_responses``
  the active drops (in landing order) that touch its partition, ``model_prices`` its leaderboard's active prices
  drops (a prices file touches no partition, so a changed price leaves ``raw_responses`` and every fit on it as they
  are, and refreshes only what reads the prices). Every other asset leaves its data version to
  Dagster, which derives it from the code version and the upstream data versions: a re-run on unchanged inputs
  yields the same version, and nothing downstream turns stale.
Config is not part of a version: after changing an asset's config, re-materialize it (``run-all --force``).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent

SOURCES = {
    "ingest": (
        "defs/assets/responses.py",
        "defs/assets/prices.py",
        "io/drops.py",
        "io/drop_types.py",
        "io/*_drops.py",
        "io/landing.py",
        "io/connection.py",
        "io/store*.py",
        "io/queries.py",
        "io/matrix_queries.py",
        "io/table_layout.py",
        "io/wide_rows.py",
        "io/wide_responses.py",
        "io/cost_queries.py",
        "core/responses.py",
        "core/response_tables.py",
    ),
    "irt": (
        "defs/assets/irt.py",
        "core/irt/*.py",
        "core/irt_tables.py",
        "core/estimation/splits.py",
        "core/responses.py",
    ),
    "estimation": (
        "defs/assets/estimation.py",
        "defs/estimation_*.py",
        "core/estimation/*.py",  # the predictor and its steps, estimators, anchors, calibration, backtests, splits
        "core/tiny_benchmark/*.py",
        "core/irt/*.py",
        "core/subsets/voters.py",
        "core/responses.py",
    ),
    "router": (
        "defs/assets/routing.py",
        "defs/assets/router_eval.py",
        "defs/assets/router_board.py",
        "defs/settings.py",
        "defs/router_report.py",
        "defs/router_cost_report.py",
        "defs/board_router_report.py",
        "core/routing/*.py",
        "io/routing_reads.py",
        "io/embeddings.py",
        "io/static_encoder.py",
        "defs/encoder_pick.py",
        "io/cost_queries.py",
        "io/price_drops.py",
        "core/irt/*.py",
    ),
    "encoder": ("defs/assets/encoders.py", "io/static_encoder.py"),
    "evaluations": (
        "defs/assets/evaluations.py",
        "defs/evaluation_report.py",
        "io/evaluation_*.py",
        "cli/answers.py",
        "io/harness_drops.py",
        "core/tiny_benchmark/*.py",
    ),
    "magi": (
        "defs/assets/subsets.py",
        "defs/magi_report.py",
        "core/subsets/*.py",
        "core/irt/*.py",
        "core/responses.py",
    ),
}


@lru_cache(maxsize=None)
def code_version(domain: str) -> str:
    """sha256 (12 hex digits) over the source files of a domain, in a stable order."""
    if domain not in SOURCES:
        raise KeyError(f"unknown code-version domain {domain!r}; known: {sorted(SOURCES)}")
    h = hashlib.sha256()
    for pattern in SOURCES[domain]:
        files = sorted(PACKAGE.glob(pattern))
        if not files:
            raise FileNotFoundError(f"code version {domain!r}: no file matches {pattern!r} under {PACKAGE}")
        for f in files:
            h.update(str(f.relative_to(PACKAGE)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


def _digest(rows) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update("|".join(map(str, row)).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def landing_version(store) -> str:
    """Content version of everything landed: the active drops (their ids: the sha256 of their bytes, bound to the
    leaderboard where another landed them first) in landing order."""
    df = store.active_drops()[["drop_id", "seq"]]
    return _digest(df.itertuples(index=False))


def partition_version(store, key: str) -> str:
    """Content version of one scenario partition: the active drops that touch it, in landing order (later wins)."""
    df = store.active_drops()
    rows = [(d, s) for d, s, parts in df.itertuples(index=False) if key in str(parts).split(",")]
    return _digest(rows)


def prices_version(store, leaderboard: str) -> str:
    """Content version of a leaderboard's prices: its active prices drops in landing order (the same for every
    leaderboard without a prices file)."""
    return _digest(store.price_drops(leaderboard).itertuples(index=False))
