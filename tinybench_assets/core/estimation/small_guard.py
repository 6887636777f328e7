"""Small leaderboards, the guard: no scenario keeps anchors whose served error is worse than random items'.

Anchors spread over the training models' difficulty inside each subscenario (design "stratified") serve the
model-based estimators where a few dozen models' difficulties carry over to a new model. Where they do not, every
rule on them can be worse than asking stratified random items (the v2 board's math_hard at n = 30, seeds 0-2:
served out-of-fold MAE 3.24 / 3.65 / 3.47 points, against 2.92 expected of stratified random items). The guard
compares, per scenario, the served rule's out-of-fold MAE with what stratified random items are expected to give
the same models; where the served rule is worse on average over the budgets (mean log ratio above 0), that
scenario's anchors are drawn at random inside each subscenario instead (design "random", still one nested order)
and its rules are chosen again on them::

    random_item_error(Ys, ws, subs, k)   per model, the expected |error| of the stratified mean of k random items
                                         (allocated as the nested order's first k), from the model's own answers:
                                         sqrt(2 / pi) sd, sd^2 = sum_u W_u^2 p_u (1 - p_u) / k_u (N_u - k_u) / (N_u - 1)
                                         (W_u the subscenario's share of the weight among those reached, p_u the
                                         model's accuracy on it; the normal approximation)
    guard(served, expected, truth, folds)   {None | fold: [scenarios to switch]}: read on every row (what is
                                         served) and on the rows outside each fold
    fold_designs(switch, scenarios, design) out_of_fold's design per fold and scenario for the backtest

The decision for fold f reads only the rows outside f, so the backtest, every fold refitted with the designs its own
decision gave, measures the guard rather than its hindsight. Pure numpy.
"""

from __future__ import annotations

import numpy as np

from .small_choice import bank_wins, mae
from .small_state import GuardDecision
from .strata import prefix_allocation

__all__ = [
    "random_item_error",
    "log_excess",
    "guard",
    "guard_choices",
    "guard_note",
    "fold_designs",
    "RANDOM",
    "expected_errors",
    "loses",
    "gate",
    "gate_note",
    "budget_label",
    "apply_guard",
    "random_note",
    "random_notes",
]

RANDOM = "random"  # the design the guard falls back to (small_folds.fit_scenario)


def random_item_error(Ys: np.ndarray, ws: np.ndarray, subscenarios, k: int) -> np.ndarray:
    """(M,) each row's expected absolute error (accuracy, 0-1) of the stratified mean of ``k`` random items of one
    scenario (module docstring); NaN for rows without answers. Ys : (M, I_s) 0/1 with NaN; ws : (I_s,);
    subscenarios : (I_s,) or None (one stratum)."""
    Ys = np.atleast_2d(np.asarray(Ys, dtype=float))
    ws = np.asarray(ws, dtype=float)
    subs = np.zeros(Ys.shape[1], dtype=int) if subscenarios is None else np.asarray(subscenarios)
    subs = subs.astype(str)
    alloc = {u: ku for u, ku in prefix_allocation(subs, ws, k).items() if ku > 0}
    share = {u: float(ws[subs == u].sum()) for u in alloc}
    total = sum(share.values())
    var = np.zeros(len(Ys))
    for u, ku in alloc.items():
        block = Ys[:, subs == u]
        answered = np.isfinite(block).sum(1)
        p = np.where(answered > 0, np.nansum(block, axis=1) / np.maximum(answered, 1), np.nan)
        N = block.shape[1]
        var = var + (share[u] / total) ** 2 * p * (1 - p) / ku * (N - ku) / max(N - 1, 1)
    return np.sqrt(2 / np.pi) * np.sqrt(var)


def log_excess(served: dict, expected: dict, truth: np.ndarray, rows: np.ndarray) -> float:
    """Mean over the budgets of log(served MAE / expected random-item MAE) of one scenario on ``rows`` (both read
    on the same rows). served, expected : {n: (M,)}; truth : (M,). NaN when no budget can be read."""
    logs = []
    for n, x in served.items():
        ok = rows & np.isfinite(x) & np.isfinite(truth) & np.isfinite(expected[n])
        ref = float(np.mean(expected[n][ok])) if ok.any() else 0.0
        if ref > 0:
            logs.append(np.log(max(mae(x, truth, ok), 1e-12) / ref))
    return float(np.mean(logs)) if logs else float("nan")


def guard(served: dict, expected: dict, truth: dict, folds: np.ndarray) -> tuple[dict, dict]:
    """Which scenarios the guard switches to random anchors.

    served : {scenario: {n: (M,)}} each row's out-of-fold served estimate; expected : {scenario: {n: (M,)}}
    :func:`random_item_error`; truth : {scenario: (M,)}; folds : (M,).
    Returns (switch, excess): switch = {None: [scenarios] read on every row, f: [scenarios] read without fold f};
    excess = {scenario: :func:`log_excess` on every row}.
    """
    folds = np.asarray(folds)
    masks = {None: np.ones(len(folds), dtype=bool), **{f: folds != f for f in range(int(folds.max()) + 1)}}
    switch, excess = {}, {}
    for key, rows in masks.items():
        ex = {s: log_excess(served[s], expected[s], truth[s], rows) for s in served}
        switch[key] = [s for s, v in ex.items() if v > 0]
        if key is None:
            excess = ex
    return switch, excess


def fold_designs(switch: dict, scenarios: list, design) -> dict:
    """{fold: {scenario: design}} for :func:`.small_folds.out_of_fold`: RANDOM where the fold's decision switched
    the scenario, else ``design`` (one for all, or {fold: {scenario: design}})."""
    base = {f: dict.fromkeys(scenarios, design) if isinstance(design, str) else design[f] for f in switch}
    return {f: {s: (RANDOM if s in sw else base[f][s]) for s in scenarios} for f, sw in switch.items() if f is not None}


def guard_choices(
    choices: dict,
    Y: np.ndarray,
    w: np.ndarray,
    cols: dict,
    subscenarios: dict,
    counts: dict,
    truth: np.ndarray,
    folds: np.ndarray,
    ns: list,
) -> tuple[dict, dict]:
    """:func:`guard` on a small board's choices {(scenario, n): ScenarioChoice} (their ``oof_served``), the expected
    random-item errors computed from ``Y`` (M, I), ``w`` (I,), ``cols`` {scenario: columns}, ``subscenarios``
    {scenario: (I_s,) or None} and ``counts`` {(scenario, n): anchors}; ``truth`` (M, S) in ``cols`` order."""
    served = {s: {n: choices[(s, n)].oof_served for n in ns} for s in cols}
    expected = expected_errors(Y, w, cols, subscenarios, counts, ns)
    return guard(served, expected, {s: truth[:, j] for j, s in enumerate(cols)}, folds)


def expected_errors(Y: np.ndarray, w: np.ndarray, cols: dict, subscenarios: dict, counts: dict, ns: list) -> dict:
    """{scenario: {n: (M,)}} :func:`random_item_error` of every row at every budget."""
    return {
        s: {n: random_item_error(Y[:, c], w[c], subscenarios[s], counts[(s, n)]) for n in ns} for s, c in cols.items()
    }


def loses(served, plain, expected, truth, rows, folds) -> bool:
    """The gate's test on ``rows``: the served rule's out-of-fold MAE is not below what stratified random items are
    expected to give the same rows, and the anchors' plain mean (``plain``) beat it there by more than one standard
    error of their fold-by-fold gain (small_choice.bank_wins: without the margin, decisions flipping fold by fold near
    the boundary cost the distinct dev board openllm.s1 0.73x -> 0.78x random items)."""
    ok = rows & np.isfinite(served) & np.isfinite(plain) & np.isfinite(truth) & np.isfinite(expected)
    if not ok.any():
        return False
    return mae(served, truth, ok) >= float(np.mean(expected[ok])) and bank_wins(served, plain, truth, ok, folds)


def gate(ch, expected: np.ndarray, truth: np.ndarray, folds: np.ndarray) -> bool:
    """The random-items gate of one (scenario, n) choice ``ch`` (small_choice.ScenarioChoice), as the router's
    best-single gate: where the served rule's out-of-fold MAE is not below stratified random items' (``expected``
    (M,), :func:`random_item_error`) and the anchors' plain weighted mean did better (:func:`loses`), it is served
    instead -- on the guard's random design, exactly stratified random items -- with an interval from its own
    out-of-fold residuals. Each fold's ``oof_served`` follows the decision made without that fold, so the backtest
    measures the gate, not its hindsight. Changes ``ch`` in place; returns whether the served choice (every row) was
    gated."""
    folds, rows = np.asarray(folds), np.isfinite(truth)
    i = next(k for k, r in enumerate(ch.rules) if r.estimator == "anchor")
    plain, served = ch.oof[i], ch.oof_served.copy()
    for f in np.unique(folds):
        if loses(ch.oof_served, plain, expected, truth, rows & (folds != f), folds):
            served[folds == f] = plain[folds == f]
    gated = loses(ch.oof_served, plain, expected, truth, rows, folds) and ch.t1 != "anchor"
    if gated:
        for k, row in enumerate(ch.cv[: len(ch.rules)]):
            row["served_t1"] = k == i
        ch.t1 = ch.t1_json = "anchor"
    ch.oof_served, ch.served_mae = served, mae(served, truth, rows)
    ch.cv[-1]["cv_mae_t1"] = ch.served_mae  # the "served" row
    return gated


def budget_label(scenario: str, n: int) -> str:
    """How a note about one (scenario, n) begins (:func:`gate_note`, :func:`random_note`)."""
    return f"scenario {scenario!r}, n = {n}:"


def gate_note(scenario: str, n: int, served: float, expected: float) -> str:
    """The predictor's note for a gated (scenario, n) (MAEs in accuracy, 0-1)."""
    return (
        f"{budget_label(scenario, n)} the best rule's cross-validated error ({100 * served:.2f} points) is not below "
        f"random items' ({100 * expected:.2f}): serving the anchors' plain mean (random items) with its own interval"
    )


def random_note(scenario: str, n: int, served: float, expected: float) -> str:
    """The predictor's note for a (scenario, n) whose served rule is no better than random items (MAEs in accuracy)."""
    return (
        f"{budget_label(scenario, n)} the served rule's cross-validated error ({100 * served:.2f} points) is not "
        f"below what random items are expected to give ({100 * expected:.2f}): at this budget its estimate is no better "
        "than random items' (the anchors of every budget are the first n of one nested order)"
    )


def random_notes(p, Y) -> list:
    """Notes (:func:`random_note`) for every (scenario, n) of SmallBoardPredictor ``p``'s final choice whose served
    rule's out-of-fold MAE is not below what stratified random items are expected to give the same models; a (scenario,
    n) that already has a note of its own (the gate's) gets none."""
    L, ns = p.layout_, p._ns()
    expected = expected_errors(Y, L.w, L.cols, L.subscenarios, p.counts_, ns)
    out = []
    for j, s in enumerate(L.scenarios):
        t = p.truth_.t1[:, j]
        for n in ns:
            x, e = p.choices_[(s, n)].oof_served, expected[s][n]
            ok = np.isfinite(t) & np.isfinite(x) & np.isfinite(e)
            if not ok.any() or any(note.startswith(budget_label(s, n)) for note in p.notes_):
                continue
            served, ref = mae(x, t, ok), float(np.mean(e[ok]))
            if served >= ref:
                out.append(random_note(s, n, served, ref))
    return out


def guard_note(scenario: str, excess: float) -> str:
    """The predictor's note for a scenario the guard switched (``excess``: its :func:`log_excess` on every row)."""
    return (
        f"scenario {scenario!r}: anchors drawn at random inside each subscenario (on anchors spread by difficulty "
        f"the served rule's out-of-fold MAE was {np.exp(excess):.2f}x what random items are expected to give)"
    )


def apply_guard(p, Y, run, notes: list) -> GuardDecision:
    """Step 3b of SmallBoardPredictor ``p``'s fit (``run``: out_of_fold on its board): random anchors inside each
    subscenario where the served rule loses to them (:func:`guard`), on top of each scenario's design
    (``p.designs_``); every fold refitted with its own decision, the choice made again."""
    L, switch, excess = p.layout_, {}, {}
    if p.guard and p.design == "stratified":
        switch, excess = guard_choices(
            p.choices_, Y, L.w, L.cols, L.subscenarios, p.counts_, p.truth_.t1, p.folds_.ids, p._ns()
        )
    if not any(switch.values()):
        return GuardDecision(dict(p.designs_[None]), excess)
    p.oof_, p.notes_ = run(design=fold_designs(switch, L.scenarios, p.designs_)), notes
    p.choices_ = p._choose(Y)
    p.notes_ += [guard_note(s, excess[s]) for s in switch[None]]
    return GuardDecision({s: (RANDOM if s in switch[None] else p.designs_[None][s]) for s in L.scenarios}, excess)
