"""Small leaderboards, part 1: leave-family-out folds and what each fold fits on its training models only.

The response matrix ``Y`` (M models x I items, 0/1, NaN = not answered) flows like this::

    family_folds(groups)                 every family goes whole to one of K <= max_folds folds
    for each fold f:
        fit_scenario(Y[rows not in f])   per scenario: a 2PL per D (irt.fit_irt) and the anchors per n: the
                                         prefixes of one nested stratified order (estimation/strata.py: by
                                         subscenario and training difficulty, or at random inside each
                                         subscenario: design "random", where small_guard.py switches a scenario),
                                         or nested anchor points, KMeans on the training rows' correctness
                                         (design="kmeans", small_design.nested_kmeans)
        base_estimates(Y[rows in f] on the anchors only)
                                         anchor / irt / pirt of the held-out rows: the formulas ArtifactModel
                                         runs (estimation/base_estimates.py), so cross-validated and served
                                         estimates are the same computation
        half_item_error(Y[rows in f])    the tutorial's IRT bias b: abilities from half the items, error on the rest
        build_bank(Y[rows not in f])     per n: the answer bank of bank_joint (estimation/bank.py) -- the TRAINING
                                         rows' soft answers at every scenario's fold anchors and their accuracy on
                                         each scenario's other items
        bank_estimates(Y[rows in f])     bank_joint of the held-out rows for every eps in BANK_EPS, by the very
                                         bank.bank_estimates that ArtifactModel runs
        fills(Y[rows in f])              fill of the held-out rows for every lam in FILL_LAMBDAS (the ridge
                                         fill-in on the same bank, estimation/fill.py)
        ShrinkagePrior.fit(rows not in f) per n: the training rows' accuracies and anchor estimates give the prior
                                         and noise of shrunk / shrunk_joint (estimation/shrinkage.py); the
                                         held-out rows' anchor estimates are shrunk with it
    -> OutOfFold: per (scenario, n, D) every model's out-of-fold candidate estimates; per (scenario, n) its
       bank_joint estimate per eps and its shrunk / shrunk_joint estimates

A held-out row is read only on the fold's anchors (and, for b, on the seeded half of the items); no held-out
family's answer enters the fold's IRT fit or anchor choice. Pure numpy / torch / scikit-learn.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..irt import IRTParams, estimate_ability, fit_irt, item_curve
from . import estimators as est
from .bank import BANK_EPS
from .fill import FILL_LAMBDAS
from .shrinkage import SHRINKAGE
from .small_banks import CLUSTERING, anchor_matrix, bank_estimates, build_bank, fills, fit_prior
from .small_design import nested_kmeans
from .strata import nested_order, prefix_anchors

__all__ = [
    "family_folds",
    "ScenarioFit",
    "fit_scenario",
    "scenario_truth",
    "anchor_matrix",
    "fit_prior",
    "DESIGNS",
    "base_estimates",
    "half_item_error",
    "half_split",
    "build_bank",
    "bank_estimates",
    "fills",
    "OutOfFold",
    "out_of_fold",
    "BANK_EPS",
    "CLUSTERING",
]

DESIGNS = ("stratified", "random", "kmeans")

BASE = ("anchor", "irt", "pirt")


def family_folds(groups, max_folds: int = 10, seed: int = 0) -> np.ndarray:
    """Grouped K-fold: fold id per model, every family whole in one fold, K = min(max_folds, families).

    Parameters
    ----------
    groups : array-like, shape (M,), a family label per model.
    max_folds : int, K at most.
    seed : int, shuffles the families before they are dealt (largest first, to the fold with the fewest models,
        ties to the lowest fold id), so folds are balanced and the same seed gives the same folds.

    Returns
    -------
    ndarray of int, shape (M,), values in [0, K).
    """
    g = np.asarray(groups, dtype=object).astype(str)
    uniq, inv, size = np.unique(g, return_inverse=True, return_counts=True)
    k = int(min(max_folds, len(uniq)))
    if k < 2:
        raise ValueError(f"grouped cross-validation needs at least 2 families, got {len(uniq)}")
    order = np.random.default_rng(seed).permutation(len(uniq))
    order = order[np.argsort(-size[order], kind="stable")]
    fold_of, load = np.empty(len(uniq), dtype=int), np.zeros(k, dtype=int)
    for fam in order:
        f = int(np.argmin(load))
        fold_of[fam], load[f] = f, load[f] + size[fam]
    return fold_of[inv]


@dataclass
class ScenarioFit:
    """What one set of training models gives one scenario.

    Attributes
    ----------
    irt : {D: IRTParams} -- 2PL per dimension, ``a`` (I_s, D), ``b`` (I_s,).
    anchors : {n: (local (k,), weights (k,))} -- anchors per budget n (k = n capped at the pool), local
        indices into the scenario's items, weights summing to 1.
    order : (I_s,) the nested order (the anchors of n are its first k; design "kmeans": nested_kmeans'), or None.
    v : float -- the tutorial's v: mean over the training models of their across-item variance.
    n_models : int -- training models that answered the scenario.
    """

    irt: dict
    anchors: dict
    v: float
    n_models: int
    order: np.ndarray | None = None


def fit_scenario(
    Ys: np.ndarray,
    ws: np.ndarray,
    counts: dict,
    dims,
    *,
    seed: int = 0,
    device: str = "cpu",
    n_init: int = 10,
    subscenarios=None,
    design: str = "stratified",
    irt: dict | None = None,
) -> ScenarioFit:
    """2PLs and anchors of one scenario from training rows only.

    Parameters
    ----------
    Ys : ndarray, shape (M_train, I_s) -- training models' 0/1 answers (NaN = missing; all-NaN rows are dropped).
    ws : ndarray, shape (I_s,) -- the scenario's balance weights.
    counts : {n: k} -- anchor count k per budget n (k <= I_s).
    dims : iterable of int -- IRT dimensions to fit.
    subscenarios : (I_s,) subscenario per item (None: one stratum); design : "stratified" (spread over the
        training models' difficulty inside each subscenario), "random" (at random inside each subscenario: the
        stratified random items of the baseline, seeded, the same whatever the training rows) or "kmeans".
    irt : {D: IRTParams} already fitted on these very rows (the guard's second pass reuses them), or None.
    """
    Ys = np.asarray(Ys, dtype=float)
    Ys = Ys[~np.isnan(Ys).all(1)]
    irt = dict(irt or {})
    irt = {int(d): irt[int(d)] if int(d) in irt else fit_irt(Ys, dim=int(d), seed=seed, device=device) for d in dims}
    if design in ("stratified", "random"):
        subs = np.zeros(Ys.shape[1], dtype=int) if subscenarios is None else np.asarray(subscenarios)
        rank = np.nanmean(Ys, axis=0) if design == "stratified" else np.random.default_rng(seed + 7).random(Ys.shape[1])
        order = nested_order(rank, subs, ws, seed=seed)
        anchors = {n: prefix_anchors(order, k, subs, ws) for n, k in counts.items()}
        return ScenarioFit(irt, anchors, est.mean_item_variance(Ys), len(Ys), order)
    if design != "kmeans":
        raise ValueError(f"design must be one of {DESIGNS}, got {design!r}")
    by_k, order = nested_kmeans(Ys, ws, counts.values(), n_init=n_init, seed=seed)
    anchors = {n: by_k[k] for n, k in counts.items()}
    return ScenarioFit(irt, anchors, est.mean_item_variance(Ys), len(Ys), order)


def base_estimates(
    Ya: np.ndarray, local: np.ndarray, weights: np.ndarray, params: IRTParams, ws: np.ndarray, device: str = "cpu"
) -> dict:
    """The JSON-evaluable base estimates of one scenario from anchor answers only.

    Exactly the per-scenario steps of ``base_estimates.features`` (which ArtifactModel runs): abilities by
    MAP on the answered anchors, anchor-weighted mean, IRT mean and p-IRT (unanswered anchors scored 0 in p-IRT's
    seen part, as there).

    Ya : (M, k) answers to the anchors ``local`` (k,) with ``weights`` (k,); ws : (I_s,).
    Returns {"anchor", "irt", "pirt": (M,)}, NaN where a row answered no anchor.
    """
    Ya = np.atleast_2d(np.asarray(Ya, dtype=float))
    has = ~np.isnan(Ya).all(1)
    th = estimate_ability(Ya, params.a[local], params.b[local], device=device)
    P = item_curve(th, params.a, params.b)
    vals = {
        "anchor": est.anchor_estimate(Ya, weights),
        "irt": est.irt_estimate(P, ws),
        "pirt": est.pirt_estimate(np.where(np.isnan(Ya), 0.0, Ya), P, local, ws),
    }
    return {k: np.where(has, v, np.nan) for k, v in vals.items()}


def half_split(n_items: int, seed: int) -> np.ndarray:
    """A seeded random half of a scenario's items (sorted local indices): the items b's abilities are read from."""
    return np.sort(np.random.default_rng(seed + 11).permutation(n_items)[: n_items // 2])


def half_item_error(
    Ys: np.ndarray, params: IRTParams, ws: np.ndarray, seen: np.ndarray, device: str = "cpu"
) -> np.ndarray:
    """Per row, |IRT-predicted - actual| balance-weighted accuracy on the unseen half of the items, abilities
    fitted on the ``seen`` half (the tutorial's b is its mean over held-out models).

    Ys : (M, I_s); seen : local indices. Returns (M,), NaN for rows without answers.
    """
    Ys = np.atleast_2d(np.asarray(Ys, dtype=float))
    unseen = np.setdiff1d(np.arange(Ys.shape[1]), seen)
    out = np.full(len(Ys), np.nan)
    has = ~np.isnan(Ys[:, seen]).all(1) & ~np.isnan(Ys[:, unseen]).all(1)
    if has.any():
        th = estimate_ability(Ys[has][:, seen], params.a[seen], params.b[seen], device=device)
        pred = est.irt_estimate(item_curve(th, params.a[unseen], params.b[unseen]), ws[unseen])
        out[has] = np.abs(pred - est.weighted_accuracy(Ys[has][:, unseen], ws[unseen]))
    return out


def scenario_truth(Y: np.ndarray, w: np.ndarray, cols: dict) -> np.ndarray:
    """(M, S) each row's balance-weighted accuracy per scenario (NaN where it answered none of its items)."""
    out = np.full((len(Y), len(cols)), np.nan)
    for j, c in enumerate(cols.values()):
        has = ~np.isnan(Y[:, c]).all(1)
        if has.any():
            out[has, j] = est.weighted_accuracy(Y[has][:, c], w[c])
    return out


@dataclass
class OutOfFold:
    """Out-of-fold results of the candidates for every model.

    Attributes
    ----------
    folds : (M,) fold id per model.
    base : {(scenario, n, D): {"anchor", "irt", "pirt": (M,)}} -- each row's estimate from the fold that held it out.
    bias : {(scenario, D): (M,)} -- each row's half-item IRT error (tutorial b) under that fold's 2PL.
    bank : {(scenario, n): {eps: (M,)}} -- each row's bank_joint from the bank of the fold that held it out.
    shrink : {(scenario, n): {"shrunk", "shrunk_joint": (M,)}} -- each row's shrunk anchor estimate under the
        prior of the fold that held it out.
    fill : {(scenario, n): {lam: (M,)}} -- each row's fill (estimation/fill.py) from the bank of the fold that
        held it out, for every lam in FILL_LAMBDAS.
    fits : [{scenario: ScenarioFit}] -- per fold, what its training models gave (for inspection and the tests).
    banks : [{n: build_bank dict}] -- per fold, its answer bank (training rows only).
    train_rows : [(M_train,)] -- per fold, the rows it was fitted on.
    """

    folds: np.ndarray
    base: dict = field(default_factory=dict)
    bias: dict = field(default_factory=dict)
    bank: dict = field(default_factory=dict)
    shrink: dict = field(default_factory=dict)
    fill: dict = field(default_factory=dict)
    banks: list = field(default_factory=list)
    fits: list = field(default_factory=list)
    train_rows: list = field(default_factory=list)


def out_of_fold(
    Y: np.ndarray,
    w: np.ndarray,
    cols: dict,
    folds: np.ndarray,
    counts: dict,
    dims,
    *,
    seed: int = 0,
    device: str = "cpu",
    n_init: int = 10,
    subscenarios: dict | None = None,
    design: str | dict = "stratified",
    fit_cache: dict | None = None,
) -> OutOfFold:
    """Fit every fold on its training rows and estimate its held-out rows from their anchor answers.

    Parameters
    ----------
    Y : (M, I) 0/1 with NaN; w : (I,) balance weights (mean 1 per scenario); cols : {scenario: (I_s,) columns};
    folds : (M,) from :func:`family_folds`; counts : {(scenario, n): anchor count}; dims : IRT dimensions;
    subscenarios : {scenario: (I_s,)} (None: one stratum each); design : the anchors' design (:func:`fit_scenario`),
    one for every fold and scenario or {fold: {scenario: design}}; fit_cache : filled with every fold's 2PLs,
    {(fold, scenario): {D: IRTParams}} (they do not depend on the design), and its whole fits, {(fold, scenario,
    design): ScenarioFit}, and read back by a later call on the same folds (the design choice and the guard re-run
    the folds with other designs: a fold's fit on a design it was fitted on before is not fitted again), or None.

    Returns
    -------
    OutOfFold
    """
    out = _empty_out_of_fold(len(Y), cols, folds, counts, dims)
    ns = sorted({n for (_, n) in counts})
    fit_kw = dict(seed=seed, device=device, n_init=n_init)
    seen = {s: half_split(len(c), seed) for s, c in cols.items()}
    truth = scenario_truth(Y, w, cols)
    cache = {} if fit_cache is None else fit_cache
    for f in range(int(out.folds.max()) + 1):
        test = np.flatnonzero(out.folds == f)
        train = np.flatnonzero(out.folds != f)
        designs = {s: design if isinstance(design, str) else design[f][s] for s in cols}
        cached = {s: cache.get((f, s, designs[s])) or cache.get((f, s)) for s in cols}
        fits = _fold_scenarios(out, Y, w, cols, counts, dims, train, test, seen, designs, cached, subscenarios, fit_kw)
        cache.update({(f, s): fit.irt for s, fit in fits.items()})
        cache.update({(f, s, designs[s]): fit for s, fit in fits.items()})
        out.banks.append(_fold_banks(out, Y, w, cols, ns, fits, truth, train, test))
        out.fits.append(fits)
        out.train_rows.append(train)
    return out


def _empty_out_of_fold(M: int, cols: dict, folds: np.ndarray, counts: dict, dims) -> OutOfFold:
    """An OutOfFold whose every entry is NaN for all M rows (each fold fills in its held-out rows)."""
    out = OutOfFold(folds=np.asarray(folds))
    for s in cols:
        for D in dims:
            out.bias[(s, D)] = np.full(M, np.nan)
            for s2, n in counts:
                if s2 == s:
                    out.base[(s, n, D)] = {k: np.full(M, np.nan) for k in BASE}
                    out.bank[(s, n)] = {e: np.full(M, np.nan) for e in BANK_EPS}
                    out.shrink[(s, n)] = {e: np.full(M, np.nan) for e in SHRINKAGE}
                    out.fill[(s, n)] = {lam: np.full(M, np.nan) for lam in FILL_LAMBDAS}
    return out


def _fold_scenarios(
    out: OutOfFold, Y, w, cols, counts, dims, train, test, seen, designs, cached, subscenarios, fit_kw
) -> dict:
    """One fold, scenario by scenario: :func:`fit_scenario` on the ``train`` rows (``designs`` {s: design}, ``cached``
    {s: its ScenarioFit or its 2PLs from an earlier call, or None}), and into ``out`` the ``test`` rows' base
    estimates from the anchors of each n and D and their half-item IRT errors. Returns {scenario: ScenarioFit}."""
    fits, subscenarios, device = {}, subscenarios or {}, fit_kw["device"]
    for s, c in cols.items():
        mine = {n: k for (s2, n), k in counts.items() if s2 == s}
        fit = fits[s] = (
            cached[s]
            if isinstance(cached[s], ScenarioFit)
            else fit_scenario(
                Y[np.ix_(train, c)],
                w[c],
                mine,
                dims,
                subscenarios=subscenarios.get(s),
                design=designs[s],
                irt=cached[s],
                **fit_kw,
            )
        )
        Yt = Y[np.ix_(test, c)]  # the held-out rows, read below only on anchors (and b's half)
        for D, params in fit.irt.items():
            for n, (local, weights) in fit.anchors.items():
                for k, v in base_estimates(Yt[:, local], local, weights, params, w[c], device).items():
                    out.base[(s, n, D)][k][test] = v
            out.bias[(s, D)][test] = half_item_error(Yt, params, w[c], seen[s], device)
    return fits


def _fold_banks(out: OutOfFold, Y, w, cols, ns, fits, truth, train, test) -> dict:
    """One fold, budget by budget: the answer bank and the shrinkage prior of its ``train`` rows at the fold's
    anchors, and into ``out`` the ``test`` rows' bank_joint (every eps) and shrunk estimates, read on those anchors
    only. Returns {n: bank}."""
    banks = {}
    for n in ns:
        anchors = {s: fits[s].anchors[n] for s in cols}
        bank = banks[n] = build_bank(Y[train], cols, w, anchors)
        for e in BANK_EPS:
            for s, v in bank_estimates(Y[test], cols, w, anchors, bank, dict.fromkeys(cols, e)).items():
                out.bank[(s, n)][e][test] = v
        for lam in FILL_LAMBDAS:
            for s, v in fills(Y[test], cols, w, anchors, bank, dict.fromkeys(cols, lam)).items():
                out.fill[(s, n)][lam][test] = v
        prior = fit_prior(Y[train], truth[train], w, cols, anchors)  # training rows only
        shrunk = prior.estimate(anchor_matrix(Y[test], w, cols, anchors))
        for j, s in enumerate(cols):
            for e in SHRINKAGE:
                out.shrink[(s, n)][e][test] = shrunk[e][:, j]
    return banks
