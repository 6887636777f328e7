"""Small leaderboards: the anchors' design chosen per scenario on out-of-fold error -- spread by difficulty inside
each subscenario (design "stratified", estimation/strata.py) or tinyBenchmarks' anchor points (design "kmeans":
KMeans over the items' answer columns of the training models, each anchor weighted by its cluster's mass).

Which design serves a board depends on its models and its pool: on the v2 board's mmlu_pro alone (18 models, 12,032
items) anchor points took the served leave-family-out MAE from 0.80x / 0.95x random items' (n = 30 / 100) to
0.66x / 0.53x, while on distinct openllm boards (100-249 items a scenario) they were worse on two seeds of three
(0.67x -> 0.78x). So, on scenarios of MIN_POOL items or more, both are fitted fold by fold and each scenario serves
the design whose served rule has the lower out-of-fold MAE (geometric mean over the budgets), the decision for fold
f read without fold f, as the guard's. (Requiring a one-standard-error gain for anchor points, as the gate and fill
do, kept the served mmlu_pro board at 0.98x random items at n = 100 instead of 0.53x: fold by fold it left some
folds on the stratified order.)

:func:`nested_kmeans` makes the anchor points of every budget nested (each smaller budget's anchors a subset of the
next larger one's, the order listing them budget by budget), as the stratified order is, so ``tinybench anchors
--n`` and a budget's answers carry over to the next budget. Pure numpy / scikit-learn.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from .anchors import _unique_nearest, item_features, select_anchors

__all__ = ["DESIGN_CHOICES", "nested_kmeans", "log_mae", "choose_designs", "design_note", "pick_designs"]

DESIGN_CHOICES = ("stratified", "kmeans")  # the first is kept on a tie
MIN_POOL = 1000  # anchor points are tried on scenarios of at least this many items: on the openllm dev boards (100-249
# items a scenario, where 30 anchors are an eighth to a third of the pool) the per-fold choice only added noise
# (openllm.s1 0.73x -> 0.79x random items); on v2's mmlu_pro (12,032 items) it took n = 100 from 0.95x to 0.53x
LARGE_POOL = 2000  # above this many items the top level's KMeans runs one k-means++ start, not n_init (a pool of
# 12,032 items, k = 200: 10.5 s against 1.3 s on the busy 2-core machine; every fold and both passes pay it)


def nested_kmeans(Ys: np.ndarray, ws: np.ndarray, ks, *, n_init: int = 10, seed: int = 0) -> tuple[dict, np.ndarray]:
    """Nested anchor points of one scenario: ({k: (local (k,), weights (k,))}, order (I_s,)).

    The largest k: KMeans over the items' correctness columns (anchors.select_anchors). Each smaller k: the anchors
    of the next larger k clustered again (KMeans weighted by their masses), each group's anchor the one nearest its
    centroid, its weight the group's mass. The order: the smallest k's anchors, then each larger k's new ones, then
    the other items in a seeded random order. Ys : (M, I_s) 0/1 (NaN: item mean); ws : (I_s,) balance weights."""
    ks = sorted({int(k) for k in ks})
    X = item_features("correctness", Ys)
    with warnings.catch_warnings():  # few models: fewer distinct correctness patterns than clusters is expected
        warnings.simplefilter("ignore", ConvergenceWarning)
        top_init = n_init if Ys.shape[1] <= LARGE_POOL else 1
        local, weights = select_anchors(Ys, ws, ks[-1], clustering="correctness", n_init=top_init, seed=seed)
        out = {ks[-1]: (np.asarray(local), np.asarray(weights, dtype=float))}
        for k in reversed(ks[:-1]):
            cur, mass = out[min(x for x in out if x > k)]
            if k >= len(cur):
                out[k] = (cur, mass)
                continue
            km = KMeans(k, n_init=n_init, random_state=seed).fit(X[cur], sample_weight=mass)
            pick = _unique_nearest(km.cluster_centers_, X[cur])
            out[k] = (cur[pick], np.bincount(km.labels_, weights=mass, minlength=k))
    order, seen = [], set()
    for k in ks:
        order += [int(j) for j in out[k][0] if int(j) not in seen]
        seen.update(order)
    rest = np.setdiff1d(np.arange(Ys.shape[1]), order)
    order = np.asarray(order + np.random.default_rng(seed + 13).permutation(rest).tolist(), dtype=int)
    rank = np.argsort(order)  # each budget's anchors listed in the order's order: its first k, as listed
    out = {k: (local[np.argsort(rank[local])], weights[np.argsort(rank[local])]) for k, (local, weights) in out.items()}
    return out, order


def log_mae(choices: dict, s: str, ns: list, truth: np.ndarray, rows: np.ndarray) -> float:
    """Mean over the budgets of log(out-of-fold MAE of the served rule) of scenario s on ``rows``."""
    logs = []
    for n in ns:
        x = choices[(s, n)].oof_served
        ok = rows & np.isfinite(x) & np.isfinite(truth)
        if ok.any():
            logs.append(np.log(max(float(np.mean(np.abs(x[ok] - truth[ok]))), 1e-12)))
    return float(np.mean(logs)) if logs else float("inf")


def choose_designs(by_design: dict, truth: np.ndarray, folds: np.ndarray, scenarios: list, ns: list) -> dict:
    """{None | fold: {scenario: design}}: per scenario the design of ``by_design`` ({design: {(s, n):
    ScenarioChoice}}, the default first: it wins ties) whose served rule has the lower :func:`log_mae`, read on every
    row (None: what is served) and without each fold. truth : (M, S) in ``scenarios`` order; folds : (M,)."""
    folds = np.asarray(folds)
    masks = {None: np.ones(len(folds), dtype=bool), **{f: folds != f for f in range(int(folds.max()) + 1)}}
    return {
        key: {
            s: min(by_design, key=lambda d, s=s, j=j: log_mae(by_design[d], s, ns, truth[:, j], rows))
            for j, s in enumerate(scenarios)
        }
        for key, rows in masks.items()
    }


def design_note(scenario: str, gain: float) -> str:
    """The predictor's note for a scenario served on anchor points (``gain``: the ratio of the out-of-fold MAEs,
    anchor points / anchors spread by difficulty, geometric mean over the budgets)."""
    return (
        f"scenario {scenario!r}: anchors are anchor points (KMeans over the board's answers): out-of-fold error "
        f"{gain:.2f}x that of anchors spread by difficulty"
    )


def pick_designs(p, Y, run, notes: list) -> dict:
    """Step 3a of SmallBoardPredictor ``p``'s fit (``run``: out_of_fold on its board): with design "stratified" and
    ``pick_design``, every fold refitted on anchor points too (design "kmeans", scenarios of MIN_POOL items or more
    only) and each such scenario given the design
    whose served rule has the lower out-of-fold MAE (:func:`choose_designs`), the decision for fold f made without
    it; the folds refitted with their designs and the choice made again. Returns {None | fold: {scenario: design}}."""
    L, folds = p.layout_, p.folds_
    keep = {key: dict.fromkeys(L.scenarios, p.design) for key in (None, *range(folds.n))}
    if not (p.pick_design and p.design == "stratified"):
        return keep
    big = [s for s in L.scenarios if len(L.cols[s]) >= MIN_POOL]
    if not big:
        return keep
    first, first_rules, first_notes = (p.oof_, p.choices_), p.board_rules_, list(p.notes_)
    trial = {s: ("kmeans" if s in big else p.design) for s in L.scenarios}
    p.oof_, p.notes_ = run(design={f: trial for f in range(folds.n)}), list(notes)
    alt = p._choose(Y)
    picks = choose_designs({p.design: first[1], "kmeans": alt}, p.truth_.t1, folds.ids, L.scenarios, p._ns())
    picks = {k: {s: (d if s in big else p.design) for s, d in v.items()} for k, v in picks.items()}
    if all(d == p.design for pick in picks.values() for d in pick.values()):
        (p.oof_, p.choices_), p.board_rules_, p.notes_ = first, first_rules, first_notes  # the first choice's notes
        return keep
    p.oof_, p.notes_ = run(design={f: picks[f] for f in range(folds.n)}), list(notes)
    p.choices_ = p._choose(Y)
    for j, s in enumerate(L.scenarios):  # the notes survive the guard's second choice (it restarts from notes)
        if picks[None][s] == "kmeans":
            t = p.truth_.t1[:, j]
            logs = [log_mae(c, s, p._ns(), t, np.isfinite(t)) for c in (alt, first[1])]
            notes.append(design_note(s, float(np.exp(logs[0] - logs[1]))))
            p.notes_.append(notes[-1])
    return picks
