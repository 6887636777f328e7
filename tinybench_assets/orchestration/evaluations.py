"""Evaluations in the refresh decision: the ``evaluations`` dynamic partitions (one per file in the evaluations
landing folder, ``io/evaluation_files.py``) and run-all's pass over them (:func:`refresh_evaluations`, after every
leaderboard, as the refresh sensor's decision orders them: ``refresh_plan.decide``). When an evaluation is stale
(its answers file changed, its leaderboard's tiny benchmark changed) is ``refresh.assess``'s answer."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from tinybench_assets.io.evaluation_files import evaluation_files
from tinybench_assets.orchestration.refresh import refresh

EVALUATION_JOB = "refresh_evaluation"
EVALUATION_PARTITIONS = "evaluations"


def register_evaluations(instance: dg.DagsterInstance, keys) -> list[str]:
    """Add evaluation keys (``<leaderboard>/<model>``) that the instance does not know yet; returns the new ones."""
    known = set(instance.get_dynamic_partitions(EVALUATION_PARTITIONS))
    new = sorted(set(keys) - known)
    if new:
        instance.add_dynamic_partitions(EVALUATION_PARTITIONS, new)
    return new


def refresh_evaluations(
    defs, instance: dg.DagsterInstance, incoming: Path | str, *, skip_boards=(), log=None, **kw
) -> tuple[int, list[str]]:
    """run-all's pass: every evaluation file's partition registered, and each refreshed where stale or missing
    (its answers changed, its leaderboard's tiny benchmark changed); leaderboards in ``skip_boards`` (failed) are
    left alone. ``kw``: :func:`~tinybench_assets.orchestration.refresh.refresh`'s run options. Returns
    (materializations, failed keys)."""
    files = [e for e in evaluation_files(incoming) if e.leaderboard not in set(skip_boards)]
    register_evaluations(instance, [e.partition for e in files])
    done, failed = 0, []
    for ev in files:
        res = refresh(defs, instance, EVALUATION_JOB, ev.partition, **kw)
        done += len(res.materialized)
        if not res.success:
            failed.append(ev.partition)
        if log:
            what = "fresh, nothing to do" if res.fresh else ("ok" if res.success else "FAILED")
            log(f"  evaluation {ev.partition:<26} {what} in {res.seconds:6.1f} s")
    return done, failed
