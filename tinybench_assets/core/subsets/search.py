"""MAGI per ranking method: the rankings (voter-based, IRT from fits on the tune models, top discrimination), each
searched by the seeded multi-objective optimizer of core/subsets/optimizer.py (objectives, Pareto front and
:class:`Scalarization`) over deletion fraction, padding range and counts (and top-k), on the tune models and voters
only; ``run_magi`` measures each chosen subset on the tune and eval models.

Validity guard (``run_magi(min_validity=0.0, validity_top=100)``): every ranking deletes first the items of the
scenarios whose pool score correlates <= ``min_validity`` with the real full-benchmark score among the
``validity_top`` best tune non-guessers (``setup.scenario_validity``). On openllm, TruthfulQA and the ARC sample
trade off against GSM8K and MMLU at the top, and subsets made of them ranked the top models against the full
score. ``min_validity=None`` turns the guard off.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np

from tinybench_assets.core.subsets.optimizer import MethodResult, Scalarization, SearchSpace, search_method
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
from tinybench_assets.core.subsets.setup import MagiSetup, measure, scenario_validity

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
    # lazy: loads torch (~1.1 s)
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
    irt_seconds, fitted = 0.0, None
    if any(m.startswith("irt") for m in methods):
        _, fitted, irt_seconds = irt_rankings(
            setup, [], dim=irt_dim, seed=seed, device=device, irt_params=irt_params, scope=irt_scope
        )
    direction, info_params, info_seconds = _information_direction(
        setup, methods, information, info_params, validity_top, seed, device
    )
    irt_seconds += info_seconds
    validity = scenario_validity(setup, validity_top)
    invalid = (
        np.zeros(len(setup.items), bool)
        if min_validity is None
        else np.array([validity[str(g)] <= min_validity for g in setup.scenarios])
    )
    rankings = _Rankings(setup, seed, fitted, info_params, direction, invalid)
    search = {"n_trials": n_trials, "seed": seed, "space": space, "scalar": scalar, "stratify": stratify}
    out = {method: _search(setup, method, rankings, irt_seconds, search) for method in methods}
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


def _search(setup: MagiSetup, method: str, rankings: _Rankings, irt_seconds: float, search: dict) -> MethodResult:
    """One method's search (``search``: search_method's options) with its seconds (the IRT fit's included for an IRT
    method), its ranking options and the chosen subset's figures on the eval models."""
    t_m = time.perf_counter()
    res = search_method(setup, method, rankings.for_method(method), **search)
    res.seconds = time.perf_counter() - t_m + (irt_seconds if method.startswith("irt") else 0.0)
    direction = rankings.direction
    res.ranking_options = (
        {"direction": direction.tolist()} if method == "irt_information" and direction is not None else {}
    )
    res.eval_metrics = measure(setup, res.chosen.mask, res.chosen.penalty_after, group="eval")
    return res


def _information_direction(setup: MagiSetup, methods, information: str, info_params, validity_top: int, seed, device):
    """(direction, info_params, seconds): with irt_information among ``methods`` and ``information`` "full_direction",
    the direction in which the full score rises among the top ``validity_top`` tune non-guessers, in the 2-D pooled
    fit ``info_params`` (fitted here when None); else no direction. An unknown ``information`` is a ValueError."""
    if "irt_information" in methods and information == "full_direction":
        t_i = time.perf_counter()
        info_params = info_params or fit_irt_models(setup, dim=2, seed=seed, device=device, scope="pooled")
        fit_rows = np.flatnonzero(setup.role == "tune")
        top = setup.top((setup.role == "tune") & ~setup.guesser, validity_top, fair_only=False)
        direction = full_score_direction(
            np.asarray(info_params.theta)[np.searchsorted(fit_rows, top)], setup.full_score[top]
        )
        return direction, info_params, time.perf_counter() - t_i
    if information not in ("raw", "full_direction"):
        raise ValueError(f"unknown information {information!r} (raw | full_direction)")
    return None, info_params, 0.0


@dataclass
class _Rankings:
    """Each method's ranking as the search asks for it, the invalid scenarios' items (``invalid``) deleted first:
    ``for_method(method)`` is the search's ``ranking_for(top_k)``. IRT and top-k rankings are cached per (method,
    top_k) across the methods; ``fitted``: the irt_scope fit, ``info_params`` / ``direction``: irt_information's
    2-D pooled fit and full-score direction (None: information as fitted)."""

    setup: MagiSetup
    seed: int
    fitted: object
    info_params: object
    direction: np.ndarray | None
    invalid: np.ndarray
    cache: dict = field(default_factory=dict)

    def for_method(self, method: str):
        setup = self.setup
        if method in ("mean_score", "ref_vs_voters"):
            r = demote(voter_ranking(setup, method, self.seed), self.invalid, setup.scenarios)
            return lambda k: r
        if method == "top_discrimination" or (method == "irt_information" and self.direction is not None):
            return lambda k: self._top(method, int(k))
        return lambda k: self._irt(method, k)

    def _top(self, method: str, k: int) -> Ranking:
        if (method, k) not in self.cache:
            self.cache[(method, k)] = demote(
                _top_ranking(self.setup, method, k, self.info_params, self.direction, self.seed),
                self.invalid,
                self.setup.scenarios,
            )
        return self.cache[(method, k)]

    def _irt(self, method: str, k) -> Ranking:
        key = (method, int(k) if method in TOP_K_METHODS else 0)
        if key not in self.cache:
            fresh = irt_rankings(self.setup, [method], seed=self.seed, irt_params=self.fitted, top_k_values=(key[1],))
            self.cache.update({kk: demote(r, self.invalid, self.setup.scenarios) for kk, r in fresh[0].items()})
        return self.cache[key]


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
