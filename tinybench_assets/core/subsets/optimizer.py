"""The seeded multi-objective optimizer (optuna TPE) that searches deletion fraction, padding range and counts (and
top-k for irt_information and top_discrimination) for one ranking, on the tune models and voters only.

Objectives (all measured on the tune non-voters and the voters; eval models never enter):
top-10 std (maximize), mean |voter penalty| (minimize), guesser advantage (minimize; <= 0 means the weakest
non-guesser scores at least chance), subset size as a fraction of the pool (minimize).

The chosen point is the trial of the Pareto front that maximizes the documented scalarization
(:class:`Scalarization`); users change it in config. ``Scalarization.min_kendall_tau`` (off by default) adds the
tune top-50 Kendall tau as a constraint.

A trial whose objectives are not all finite cannot be scored (``top10_std`` is NaN when the tune models hold no fair
model, ``guesser_advantage`` when every tune model and voter is a guesser): it is pruned (``optuna.TrialPruned``:
optuna records it as pruned, not failed, and TPE ranks pruned trials after the scored ones; no NaN reaches optuna),
kept in the trials with ``scored`` False, and never on the Pareto front. When no trial of a method can be scored,
its first enqueued trial (the plain MAGI point) is chosen.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tinybench_assets.core.subsets.rankings import Ranking
from tinybench_assets.core.subsets.setup import MagiSetup, SubsetEval, SubsetParams, build_subset

OBJECTIVES = ("top10_std", "mean_abs_voter_penalty", "guesser_advantage", "fraction_of_pool")
DIRECTIONS = ("maximize", "minimize", "minimize", "minimize")


@dataclass
class Scalarization:
    """How one point is chosen from the Pareto front.

    Feasible: fraction_of_pool <= max_fraction, mean |penalty| <= max_mean_penalty (points),
    guesser_advantage <= max_guesser_advantage. Among feasible trials the largest
    utility = top10_std - penalty_weight * mean|penalty| / 100 - guesser_weight * max(guesser_adv, 0)
    - size_weight * fraction wins; with none feasible, the smallest total constraint violation.
    """

    max_fraction: float = 0.2
    max_mean_penalty: float = 0.5
    max_guesser_advantage: float = 0.0
    penalty_weight: float = 0.05
    guesser_weight: float = 0.5
    size_weight: float = 0.01
    min_kendall_tau: float | None = None

    def utility(self, m: dict) -> float:
        return (
            m["top10_std"]
            - self.penalty_weight * m["mean_abs_voter_penalty"] / 100
            - self.guesser_weight * max(m["guesser_advantage"], 0.0)
            - self.size_weight * m["fraction_of_pool"]
        )

    def violation(self, m: dict) -> float:
        return (
            max(0.0, m["fraction_of_pool"] - self.max_fraction) / max(self.max_fraction, 1e-9)
            + max(0.0, m["mean_abs_voter_penalty"] - self.max_mean_penalty) / max(self.max_mean_penalty, 1e-9)
            + max(0.0, m["guesser_advantage"] - self.max_guesser_advantage) * 10
            + (
                0.0
                if self.min_kendall_tau is None
                else max(0.0, self.min_kendall_tau - np.nan_to_num(m["kendall_tau_nonvoters"], nan=-1.0))
            )
        )


@dataclass
class SearchSpace:
    """Ranges of the search; irt_information also searches top_k."""

    keep_fraction: tuple[float, float] = (0.08, 0.2)  # below ~50 items the top-10 std is mostly sampling noise
    pad_base: tuple[int, int] = (0, 3)
    pad_per_point: tuple[float, float] = (0.0, 6.0)
    pad_acc_low: tuple[float, float] = (0.2, 0.95)
    pad_width: tuple[float, float] = (0.05, 0.8)
    top_k: tuple[int, int] = (3, 50)
    disc_top: tuple[int, int] = (30, 200)  # top_discrimination: the top-K tune models the covariance is taken over


@dataclass
class MethodResult:
    """One ranking method's search: its ranking (at the chosen top-k), the chosen parameters and subset, every trial
    (with ``pareto``, ``utility``, ``violation``, ``chosen``) and the seconds; ``run_magi`` adds the chosen subset's
    eval figures and the ranking's options."""

    method: str
    ranking: Ranking
    params: SubsetParams
    chosen: SubsetEval
    trials: pd.DataFrame  # one row per trial: parameters, tune metrics, scored, pareto, utility, violation, chosen
    seconds: float
    eval_metrics: dict = field(default_factory=dict)
    ranking_options: dict = field(default_factory=dict)  # irt_information along a direction: {"direction": [...]}


def _params_from_trial(trial, space: SearchSpace, method: str, stratify: bool = False) -> SubsetParams:
    low = trial.suggest_float("pad_acc_low", *space.pad_acc_low)
    width = trial.suggest_float("pad_width", *space.pad_width)
    return SubsetParams(
        keep_fraction=trial.suggest_float("keep_fraction", *space.keep_fraction),
        pad_base=trial.suggest_int("pad_base", *space.pad_base),
        pad_per_point=trial.suggest_float("pad_per_point", *space.pad_per_point),
        pad_acc_low=low,
        pad_acc_high=min(1.0, low + width),
        top_k=(
            trial.suggest_int("top_k", *space.top_k)
            if method == "irt_information"
            else trial.suggest_int("top_k", *space.disc_top)
            if method == "top_discrimination"
            else 0
        ),
        stratify=stratify,
    )


def pareto_mask(values: np.ndarray, directions=DIRECTIONS) -> np.ndarray:
    """Non-dominated rows of ``values`` (n_trials, n_objectives)."""
    sign = np.array([-1.0 if d == "maximize" else 1.0 for d in directions])
    v = np.nan_to_num(values * sign, nan=np.inf)
    keep = np.ones(len(v), dtype=bool)
    for i in range(len(v)):
        dominated = np.all(v <= v[i], axis=1) & np.any(v < v[i], axis=1)
        keep[i] = not dominated.any()
    return keep


def search_method(
    setup: MagiSetup,
    method: str,
    ranking_for,
    *,
    n_trials: int = 60,
    seed: int = 0,
    space: SearchSpace | None = None,
    scalar: Scalarization | None = None,
    stratify: bool = False,
) -> MethodResult:
    """Seeded optuna TPE (multi-objective) over the space; ``ranking_for(top_k) -> Ranking``."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space, scalar = space or SearchSpace(), scalar or Scalarization()
    t0 = time.perf_counter()
    rows, evals = [], {}

    def objective(trial):
        p = _params_from_trial(trial, space, method, stratify)
        ev = build_subset(setup, ranking_for(p.top_k), p, seed=seed)
        evals[trial.number] = (p, ev)
        values = tuple(float(ev.metrics[o]) for o in OBJECTIVES)
        scored = bool(np.isfinite(values).all())
        rows.append({"trial": trial.number, **p.as_dict(), **ev.metrics, "scored": scored})
        if not scored:
            bad = [o for o, v in zip(OBJECTIVES, values) if not np.isfinite(v)]
            raise optuna.TrialPruned(f"objectives not finite: {', '.join(bad)}")
        return values

    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(15, n_trials), multivariate=True)
    study = optuna.create_study(directions=list(DIRECTIONS), sampler=sampler)
    # a deterministic start: the plain MAGI point (the largest allowed subset, no padding) and a padded one
    k0 = {"irt_information": {"top_k": 10}, "top_discrimination": {"top_k": 100}}.get(method, {})
    study.enqueue_trial(
        {
            "keep_fraction": space.keep_fraction[1],
            "pad_base": 0,
            "pad_per_point": 0.0,
            "pad_acc_low": 0.5,
            "pad_width": 0.5,
            **k0,
        }
    )
    study.enqueue_trial(
        {"keep_fraction": 0.15, "pad_base": 1, "pad_per_point": 2.0, "pad_acc_low": 0.5, "pad_width": 0.5, **k0}
    )
    study.optimize(objective, n_trials=n_trials)
    trials = pd.DataFrame(rows).sort_values("trial").reset_index(drop=True)
    trials["pareto"] = False
    scored = trials["scored"].to_numpy(dtype=bool)
    trials.loc[scored, "pareto"] = pareto_mask(trials.loc[scored, list(OBJECTIVES)].to_numpy(dtype=float))
    trials["utility"] = [scalar.utility(r) for r in trials.to_dict("records")]
    trials["violation"] = [scalar.violation(r) for r in trials.to_dict("records")]
    best = _choose(trials)
    trials["chosen"] = trials.trial == best.trial
    params, ev = evals[int(best.trial)]
    return MethodResult(method, ranking_for(params.top_k), params, ev, trials, time.perf_counter() - t0)


def _choose(trials: pd.DataFrame) -> pd.Series:
    """The chosen trial: the feasible Pareto point of the largest utility, else the Pareto point of the smallest
    violation; with no scored trial (no Pareto front), the first trial."""
    front = trials[trials.pareto]
    if not len(front):
        return trials.iloc[0]
    feasible = front[front.violation <= 0]
    return (
        feasible.sort_values(["utility", "trial"], ascending=[False, True])
        if len(feasible)
        else front.sort_values(["violation", "trial"])
    ).iloc[0]


UNSCORED_NOTE = (
    "search trials whose objectives were not all finite (no fair tune model for the top-10 spread, or every tune model "
    "and voter a guesser) were pruned and kept in magi_search with scored = false; a method none of whose trials "
    "scored keeps its first trial, the plain MAGI point"
)


def unscored_trials(methods: dict) -> dict:
    """{method: its trials that could not be scored (pruned)} over ``methods`` ({method: MethodResult}), methods
    whose trials all scored left out."""
    out = {m: int((~r.trials["scored"].astype(bool)).sum()) for m, r in methods.items() if "scored" in r.trials}
    return {m: n for m, n in out.items() if n}
