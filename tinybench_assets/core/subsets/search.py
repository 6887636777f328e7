"""Search over deletion fraction, padding range and counts (and top-k for irt_information) per ranking, with a
seeded multi-objective optimizer (optuna TPE), on the tune models and voters only.

Objectives (all measured on the tune non-voters and the voters; eval models never enter):
top-10 std (maximize), mean |voter penalty| (minimize), guesser advantage (minimize; <= 0 means the weakest
non-guesser scores at least chance), subset size as a fraction of the pool (minimize).

The chosen point is the trial of the Pareto front that maximizes the documented scalarization
(:class:`Scalarization`); users change it in config.

Validity guard (``run_magi(min_validity=0.0, validity_top=100)``): every ranking deletes first the items of the
scenarios whose pool score correlates <= ``min_validity`` with the real full-benchmark score among the
``validity_top`` best tune non-guessers (``setup.scenario_validity``). On openllm, TruthfulQA and the ARC sample
trade off against GSM8K and MMLU at the top, and subsets made of them ranked the top models against the full
score. ``min_validity=None`` turns the guard off. ``Scalarization.min_kendall_tau`` (off by default) adds the
tune top-50 Kendall tau as a constraint.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tinybench_assets.core.subsets.rankings import (
    METHODS,
    Ranking,
    demote,
    full_score_direction,
    orient_irt,
    rank_irt,
    rank_irt_by_group,
    rank_mean_score,
    rank_ref_vs_voters,
    rank_top_discrimination,
)
from tinybench_assets.core.subsets.setup import (
    MagiSetup,
    SubsetEval,
    SubsetParams,
    build_subset,
    measure,
    scenario_validity,
)

# the product defaults, chosen on openllm by VARIANT_RULE (choose_variant) over the grid of benchmarks/magi.py
# --variants, on tune models and voters only (docs/magi.md, "Choosing the default")
# information: "raw" (a^2 p (1 - p) in the irt_scope fit) | "full_direction" (a 2-D pooled fit, information along
# the direction in which the full score rises among the top validity_top tune models)
DEFAULTS = {
    "balanced": False,
    "stratify": False,
    "irt_scope": "scenario",
    "validity_top": 100,
    "min_validity": 0.0,
    "information": "full_direction",
}
NO_REFERENCE_METHODS = ("mean_score", "irt", "irt_discrimination", "irt_information", "top_discrimination")
TOP_K_METHODS = ("irt_information", "top_discrimination")
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
    method: str
    ranking: Ranking
    params: SubsetParams
    chosen: SubsetEval
    trials: pd.DataFrame
    seconds: float
    eval_metrics: dict = field(default_factory=dict)
    ranking_options: dict = field(default_factory=dict)  # irt_information along a direction: {"direction": [...]}


@dataclass
class ScenarioIRT:
    """One 1-D 2PL per scenario, fitted on the tune models: a (I, 1), b (I,) item parameters from their
    scenario's fit; theta {scenario: (n_fit_rows, 1)} abilities in each fit; seconds: all fits."""

    a: np.ndarray
    b: np.ndarray
    theta: dict
    seconds: float


def fit_irt_models(setup: MagiSetup, *, dim: int = 1, seed: int = 0, device: str = "cpu", scope: str = "pooled"):
    """The project's 2PL fitted on the tune non-voters (voters and eval models excluded), oriented so that
    ability correlates positively with accuracy. scope "pooled": one fit over the pool (IRTParams);
    "scenario": one 1-D fit per scenario (ScenarioIRT)."""
    from tinybench_assets.core.irt import fit_irt

    t0 = time.perf_counter()
    rows = np.flatnonzero(setup.role == "tune")
    if scope == "pooled":
        p = fit_irt(setup.Y[rows], dim=dim, seed=seed, device=device)
        p.a, p.b, p.theta = orient_irt(p.a, p.b, p.theta, np.nanmean(setup.Y[rows], axis=1))
        return p
    if scope != "scenario":
        raise ValueError(f"unknown IRT scope {scope!r} (pooled | scenario)")
    scen = np.asarray(setup.scenarios).astype(str)
    a, b, theta = np.zeros((len(scen), 1)), np.zeros(len(scen)), {}
    for g in np.unique(scen):
        cols = np.flatnonzero(scen == g)
        Yg = setup.Y[np.ix_(rows, cols)]
        p = fit_irt(Yg, dim=1, seed=seed, device=device)
        ag, bg, tg = orient_irt(p.a, p.b, p.theta, np.nanmean(Yg, axis=1))
        a[cols], b[cols], theta[g] = ag.reshape(-1, 1), bg, tg
    return ScenarioIRT(a, b, theta, time.perf_counter() - t0)


def irt_rankings(
    setup: MagiSetup,
    methods,
    *,
    dim: int = 1,
    seed: int = 0,
    device: str = "cpu",
    irt_params=None,
    top_k_values=(10,),
    scope: str = "pooled",
) -> tuple[dict, object, float]:
    """IRT rankings from ``irt_params`` (fit_irt_models' result for ``scope``; fitted here when None).
    irt_information averages the information over the abilities of the top-k tune models by full score (per
    scenario, in that scenario's fit, when the scope is "scenario"). Returns ({(method, top_k): Ranking},
    params, seconds)."""
    t0 = time.perf_counter()
    fit_rows = np.flatnonzero(setup.role == "tune")
    if irt_params is None:
        irt_params = fit_irt_models(setup, dim=dim, seed=seed, device=device, scope=scope)
    by_scenario = isinstance(irt_params, ScenarioIRT)
    out = {}
    for method in methods:
        for k in top_k_values if method == "irt_information" else (0,):
            theta_top = None
            if method == "irt_information":
                pos = np.searchsorted(fit_rows, setup.top_tune(int(k)))
                theta_top = (
                    {g: t[pos] for g, t in irt_params.theta.items()}
                    if by_scenario
                    else np.asarray(irt_params.theta)[pos]
                )
            if by_scenario:
                out[(method, int(k))] = rank_irt_by_group(
                    irt_params.a, irt_params.b, setup.scenarios, method, theta_top, seed=seed
                )
            else:
                out[(method, int(k))] = rank_irt(irt_params.a, irt_params.b, method, theta_top, seed=seed)
    return out, irt_params, time.perf_counter() - t0


def voter_ranking(setup: MagiSetup, method: str, seed: int = 0) -> Ranking:
    if method == "mean_score":
        return rank_mean_score(setup.Yv, seed)
    if method == "ref_vs_voters":
        return rank_ref_vs_voters(setup.Yv, setup.Y[setup.reference], seed)
    raise ValueError(method)


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
        rows.append({"trial": trial.number, **p.as_dict(), **ev.metrics})
        return tuple(ev.metrics[o] for o in OBJECTIVES)

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
    trials["pareto"] = pareto_mask(trials[list(OBJECTIVES)].to_numpy(dtype=float))
    trials["utility"] = [scalar.utility(r) for r in trials.to_dict("records")]
    trials["violation"] = [scalar.violation(r) for r in trials.to_dict("records")]
    front = trials[trials.pareto]
    feasible = front[front.violation <= 0]
    best = (
        feasible.sort_values(["utility", "trial"], ascending=[False, True])
        if len(feasible)
        else front.sort_values(["violation", "trial"])
    ).iloc[0]
    trials["chosen"] = trials.trial == best.trial
    params, ev = evals[int(best.trial)]
    return MethodResult(method, ranking_for(params.top_k), params, ev, trials, time.perf_counter() - t0)


@dataclass
class MagiResult:
    setup: MagiSetup
    methods: dict[str, MethodResult]
    full_metrics: dict
    full_eval_metrics: dict
    irt_seconds: float
    seconds: float
    irt_params: object = None
    validity: dict = field(default_factory=dict)  # scenario -> validity among the top tune models
    demoted: tuple = ()  # scenarios deleted first (validity <= min_validity)
    options: dict = field(default_factory=dict)  # balanced, stratify, irt_scope, validity_top, min_validity


def run_magi(
    setup: MagiSetup,
    *,
    methods=METHODS,
    n_trials: int = 60,
    seed: int = 0,
    irt_dim: int = 1,
    irt_params=None,
    device: str = "cpu",
    space: SearchSpace | None = None,
    scalar: Scalarization | None = None,
    stratify: bool = DEFAULTS["stratify"],
    validity_top: int = DEFAULTS["validity_top"],
    min_validity: float | None = DEFAULTS["min_validity"],
    balanced: bool | None = None,
    irt_scope: str = DEFAULTS["irt_scope"],
    information: str = DEFAULTS["information"],
    info_params=None,
) -> MagiResult:
    """Rank, search and choose a subset per ranking method; measure each chosen subset on tune and eval models.

    balanced: scenario-balanced subset scores (None: the setup's own ``balanced``); stratify: every scenario
    not demoted by the guard keeps its share of the pool; irt_scope: "pooled" (one 1-D fit) or "scenario"
    (one fit per scenario; information at the top models' abilities within the scenario); information:
    "raw" or "full_direction" (irt_information from a 2-D pooled fit, along the full-score direction among the
    top ``validity_top`` tune models; ``info_params``: that fit, fitted here when None). Defaults: DEFAULTS.
    Each method's ``seconds`` includes its share of the IRT fit (the whole fit for every IRT method).
    """
    t0 = time.perf_counter()
    if balanced is not None and balanced != setup.balanced:
        setup = dataclasses.replace(setup, balanced=balanced)
    space = space or SearchSpace()
    irt_methods = [m for m in methods if m.startswith("irt")]
    irt_cache, irt_seconds = {}, 0.0
    fitted = None
    if irt_methods:
        _, fitted, irt_seconds = irt_rankings(
            setup, [], dim=irt_dim, seed=seed, device=device, irt_params=irt_params, scope=irt_scope
        )
    direction = None
    if "irt_information" in methods and information == "full_direction":
        t_i = time.perf_counter()
        info_params = info_params or fit_irt_models(setup, dim=2, seed=seed, device=device, scope="pooled")
        fit_rows = np.flatnonzero(setup.role == "tune")
        top = setup.top((setup.role == "tune") & ~setup.guesser, validity_top, fair_only=False)
        direction = full_score_direction(
            np.asarray(info_params.theta)[np.searchsorted(fit_rows, top)], setup.full_score[top]
        )
        irt_seconds += time.perf_counter() - t_i
    elif information not in ("raw", "full_direction"):
        raise ValueError(f"unknown information {information!r} (raw | full_direction)")
    validity = scenario_validity(setup, validity_top)
    invalid = (
        np.zeros(len(setup.items), bool)
        if min_validity is None
        else np.array([validity[str(g)] <= min_validity for g in setup.scenarios])
    )
    out = {}
    for method in methods:
        t_m = time.perf_counter()
        if method in ("mean_score", "ref_vs_voters"):
            r = demote(voter_ranking(setup, method, seed), invalid, setup.scenarios)
            ranking_for = lambda k, r=r: r  # noqa: E731
        elif method == "top_discrimination" or (method == "irt_information" and direction is not None):

            def ranking_for(k, method=method):
                if (method, int(k)) not in irt_cache:
                    irt_cache[(method, int(k))] = demote(
                        _top_ranking(setup, method, int(k), info_params, direction, seed), invalid, setup.scenarios
                    )
                return irt_cache[(method, int(k))]
        else:

            def ranking_for(k, method=method):
                key = (method, int(k) if method in TOP_K_METHODS else 0)
                if key not in irt_cache:
                    fresh = irt_rankings(setup, [method], seed=seed, irt_params=fitted, top_k_values=(key[1],))[0]
                    irt_cache.update({kk: demote(r, invalid, setup.scenarios) for kk, r in fresh.items()})
                return irt_cache[key]

        res = search_method(
            setup, method, ranking_for, n_trials=n_trials, seed=seed, space=space, scalar=scalar, stratify=stratify
        )
        res.seconds = time.perf_counter() - t_m + (irt_seconds if method.startswith("irt") else 0.0)
        res.ranking_options = (
            {"direction": direction.tolist()} if method == "irt_information" and direction is not None else {}
        )
        res.eval_metrics = measure(setup, res.chosen.mask, res.chosen.penalty_after, group="eval")
        out[method] = res
    full = np.ones(setup.Y.shape[1], dtype=bool)
    return MagiResult(
        setup,
        out,
        measure(setup, full, None, "tune"),
        measure(setup, full, None, "eval"),
        irt_seconds,
        time.perf_counter() - t0,
        fitted,
        validity,
        tuple(g for g, v in validity.items() if min_validity is not None and v <= min_validity),
        {
            "balanced": setup.balanced,
            "stratify": stratify,
            "irt_scope": irt_scope,
            "validity_top": validity_top,
            "min_validity": min_validity,
            "information": information,
        },
    )


def _top_ranking(setup: MagiSetup, method: str, k: int, info_params, direction, seed: int) -> Ranking:
    """top_discrimination over the top-k tune non-guessers, or irt_information along ``direction`` at the
    abilities of the top-k tune models in the 2-D pooled fit ``info_params`` (fitted on the tune models)."""
    if method == "top_discrimination":
        rows = setup.top((setup.role == "tune") & ~setup.guesser, k, fair_only=False)
        return rank_top_discrimination(setup.Y[rows], setup.full_score[rows], seed)
    pos = np.searchsorted(np.flatnonzero(setup.role == "tune"), setup.top_tune(k))
    return rank_irt(
        info_params.a, info_params.b, "irt_information", np.asarray(info_params.theta)[pos], seed, direction
    )
