"""The router families that ``select_router`` (core/routing/select.py) cross-validates: their default grids, which
run by default, which sit out on small data, the tie-break order, and how one is built from its configuration.

Families and their grids (all configurable):

- ``best_single``: always the model with the best training accuracy;
- ``knn_vote``: k nearest training questions vote (k, weighting);
- ``knn_shrunk``: the vote shrunk toward each model's training accuracy (k, shrink);
- ``knn_irt``: the tutorial's KNN-imputed 2PL (D, k) -- one IRT fit per fold and D;
- ``logistic``: per-model logistic regression on embeddings (C);
- ``mf``: matrix factorization (rank, l2), offered, not a default;
- ``task_prior`` / ``knn_task`` (core/routing/task.py): the task recognised from the nearest training questions and
  each model's accuracy on it (alpha: the classifier's ridge), and the neighbour vote shrunk toward that prior (k,
  shrink). They need each
  training question's task (``groups``: a leaderboard's scenarios, a scenario's subscenarios) and sit out without two
  tasks or more;
- ``<family>_cal`` (default: ``knn_irt_cal``): the family's P through a per-model Platt calibration
  (core/routing/calibrated.py), same grid; in CV each fold is calibrated on the other folds' out-of-fold P, and the
  served router's calibrator is fitted on all of them.

Families that cannot run on the data sit out (``sit_out``): the KNN-IRT families below ``MIN_IRT_MODELS`` models (a
2PL needs at least three), the task families with fewer than two tasks.
"""

from __future__ import annotations

from .calibrated import CalibratedRouter
from .routers import BestSingleRouter, KNNIRTRouter, KNNVoteRouter, LogisticRouter, MFRouter
from .task import TaskRouter

DEFAULT_GRID = {
    "knn_vote": {"k": [5, 10, 20, 50, 100], "weighting": ["uniform", "similarity"]},
    "knn_shrunk": {"k": [10, 20, 50, 100], "shrink": [2.0, 5.0, 10.0, 20.0]},
    "knn_irt": {"dim": [1, 2, 5, 10], "k": [10, 20, 50]},
    "logistic": {"C": [0.1, 1.0, 10.0]},
    "mf": {"rank": [4, 16], "l2": [1e-3, 1e-2]},
    "task_prior": {"alpha": [0.03, 0.1, 0.3]},
    "knn_task": {"alpha": [0.1], "k": [20, 50, 100], "shrink": [5.0, 20.0, 50.0]},
}
# "mf" (matrix factorization) is offered, not a default: on RouterBench MBPP it was served for quality_at_min_cost
# by a training-cost margin and cost the router its AIQ gain on test (+0.95 [+0.17, +3.99] -> +2.06 [-0.77, ...]
# points, measured while routing priced each answer at its realized cost); on RouterDC it changed no choice
DEFAULT_FAMILIES = [
    "best_single",
    "task_prior",
    "knn_vote",
    "knn_shrunk",
    "knn_task",
    "knn_irt",
    "knn_irt_cal",
    "logistic",
]
SIMPLICITY = [
    "best_single",
    "task_prior",
    "knn_vote",
    "knn_shrunk",
    "knn_task",
    "knn_irt",
    "logistic",
    "mf",
    "ensemble",
]
CAL = "_cal"
FITTED = ("best_single", "task_prior", "knn_vote", "knn_shrunk", "knn_task", "knn_irt", "logistic", "mf")
TASK_FAMILIES = ("task_prior", "knn_task")
MIN_IRT_MODELS = 3  # a 2PL fit needs at least three models (defs/assets/irt.py's MIN_FIT_MODELS)


def sit_out(families, n_models: int, n_tasks: int) -> dict:
    """family -> why it cannot run on this data (KNN-IRT below MIN_IRT_MODELS models, task families without 2 tasks)."""
    out = {}
    for f in families:
        if base_family(f) == "knn_irt" and n_models < MIN_IRT_MODELS:
            out[f] = f"needs an IRT fit of at least {MIN_IRT_MODELS} models; this data has {n_models}"
        elif base_family(f) in TASK_FAMILIES and n_tasks < 2:
            out[f] = f"needs questions of at least two tasks (scenarios or subscenarios); this data has {n_tasks}"
    return out


def base_family(family: str) -> str:
    """The family a calibrated family (``<family>_cal``) calibrates; a plain family itself."""
    return family[: -len(CAL)] if family.endswith(CAL) else family


def router_config(config: dict) -> dict:
    """A family's configuration without its routing margin: what the router is built and fitted with."""
    return {k: v for k, v in config.items() if k != "margin"}


def same_config(a: dict, b: dict) -> bool:
    """Two families' configurations fit the same router (routing margins aside)."""
    return router_config(a) == router_config(b)


def simplicity(family: str) -> float:
    """Tie-break rank: simpler first; a calibrated family just after its base (unknown names last)."""
    base = base_family(family)
    rank = SIMPLICITY.index(base) if base in SIMPLICITY else 99
    return rank + (0.5 if family != base else 0.0)


def make_router(family: str, config: dict, device: str = "cpu", seed: int = 0):
    """An unfitted router of ``family`` built with ``config`` (a calibrated family: its base router with a Platt
    calibrator to fit)."""
    if family.endswith(CAL):
        return CalibratedRouter(make_router(base_family(family), config, device=device, seed=seed), seed=seed)
    if family == "best_single":
        return BestSingleRouter()
    if family in TASK_FAMILIES:
        return TaskRouter(alpha=config["alpha"], k=config.get("k", 0), shrink=config.get("shrink", 0.0))
    if family in ("knn_vote", "knn_shrunk"):
        r = KNNVoteRouter(k=config["k"], weighting=config.get("weighting", "uniform"), shrink=config.get("shrink", 0.0))
        r.name = family
        return r
    if family == "knn_irt":
        return KNNIRTRouter(dim=config["dim"], k=config["k"], seed=seed, device=device)
    if family == "logistic":
        return LogisticRouter(C=config["C"])
    if family == "mf":
        return MFRouter(rank=config["rank"], l2=config["l2"], seed=seed)
    raise ValueError(f"unknown router family {family!r}")
