"""Small leaderboards, part 2: choosing the estimator, D and lambda per (scenario, n) on out-of-fold estimates,
and intervals that allow for that choice.

Candidates: :mod:`.small_rules` (a :class:`Rule` each: anchor, the IRT rules per D, shrunk, shrunk_joint, the bank,
fill, and the median of the IRT rules at one D with shrunk, shrunk_joint and fill).

:func:`rules_for` derives these (lambdas included) from a set of rows; :func:`choose` serves the median unless the rule
with the lowest MAE on the same rows beats it by more than one standard error of their fold-by-fold gain (BANK_SE), then
fill and the bank only when they beat that by as much. :func:`choose_scenario` does it on every row (the served choice)
and once per fold with that fold's rows left out, scoring the fold with what the others chose: those leave-one-fold-out
residuals measure the selection procedure, not its winner, and give the served T1 interval (never narrower than the
winner's own). Every candidate's out-of-fold estimates (the CV rows, ``oof``) read their lambdas without the scored
fold as well (:func:`_rules_out_of_fold`).

Intervals and T2 maps are small_intervals.py's: split-conformal with families as the exchangeable units, and
isotonic T2 maps cross-fitted over the folds. T2 serves the lowest cross-fitted MAE at the served D (the bank under
the same one-standard-error rule as for T1, fill first), and the T2 choice is re-made without each fold too
(``oof_t2_served``), on which small_select calibrates the served T2 interval over every scenario and budget, as the
T1 one. The artifact carries anchor, the IRT candidates at the served D and bank_joint at one eps (the winner's,
else the best by out-of-fold MAE); bank_joint needs the artifact's learned file, so the JSON-only recommendation
(``t1_json`` / ``t2_json``) is the best JSON-evaluable one of those. Pure numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import estimators as est
from .small_intervals import fold_isotonic, symmetric_interval, widest
from .small_rules import (
    BANK,
    CANDIDATES,
    FILL,
    LEARNED_RULES,
    MEDIAN,
    NO_IRT,
    Rule,
    best,
    mae,
    needs_learned,
    rules_for,
)

__all__ = [
    "CANDIDATES",
    "BANK",
    "FILL",
    "LEARNED_RULES",
    "Rule",
    "rules_for",
    "best",
    "choose",
    "bank_wins",
    "fold_gain",
    "BANK_SE",
    "ScenarioChoice",
    "choose_scenario",
    "NO_IRT",
    "board_rule",
    "MEDIAN",
]

BANK_SE = 1.0  # the bank is served only when its fold-by-fold gain exceeds this many standard errors (choose())


def fold_gain(a: np.ndarray, b: np.ndarray, truth: np.ndarray, rows: np.ndarray, folds: np.ndarray) -> tuple:
    """How much lower estimate ``b``'s MAE is than ``a``'s, fold by fold: (mean of the per-fold differences, its
    standard error). Folds are the units, so a gain carried by one family counts once."""
    d = []
    for f in np.unique(folds[rows]):
        r = rows & (folds == f) & np.isfinite(a) & np.isfinite(b)
        if r.any():
            d.append(float(np.mean(np.abs(a[r] - truth[r]) - np.abs(b[r] - truth[r]))))
    if len(d) < 2:
        return (d[0] if d else 0.0), float("inf")
    return float(np.mean(d)), float(np.std(d, ddof=1) / np.sqrt(len(d)))


def bank_wins(plain: np.ndarray, bank: np.ndarray, truth: np.ndarray, rows: np.ndarray, folds: np.ndarray) -> bool:
    """Whether the bank's estimates beat ``plain``'s by more than BANK_SE standard errors of their fold-by-fold
    gain (:func:`choose` says why)."""
    gain, se = fold_gain(plain, bank, truth, rows, folds)
    return gain > BANK_SE * se


def choose(
    rules: list, base: dict, truth: np.ndarray, rows: np.ndarray, folds: np.ndarray, prefer: tuple | None = None
) -> Rule:
    """The served rule: the median of the rules (small_rules.MEDIAN, at its best D), replaced by the best of the anchor
    and IRT rules only when that one's fold-by-fold gain over it exceeds BANK_SE standard errors (picking the lowest
    MAE among a dozen rules on a few dozen models is mostly noise: on the distinct dev boards, seeds 0-2, the served
    leave-one-fold-out MAE went from 0.70x / 0.89x random items' at n = 30 / 100 to 0.69x / 0.82x with this default),
    then by fill, then by the answer bank, under the same rule (fill as a plain candidate: dev board s1 0.73x -> 0.78x).
    The bank's out-of-fold estimates are noisier than the IRT rules' on boards of a few dozen models (it reads every
    training model's answers, one fold at a time), and folds of two or three models made it look better on the board
    than it was on new families; the margin is the one-standard-error rule (Hastie, Tibshirani & Friedman, 2009, 7.10)
    applied to that one step up in variance.

    ``prefer`` = (estimator, dim): the board's rule (lowest out-of-fold MAE over every scenario, :func:`board_rule`),
    kept unless the scenario's own best beats it by more than BANK_SE standard errors of their fold-by-fold gain: a
    dozen or two models make one scenario's ranking of a dozen rules mostly noise (on the v2 board the per-scenario
    winner changed with the seed and was worse than random items on one scenario in three seeds of five)."""
    plain = [r for r in rules if r.estimator not in (*LEARNED_RULES, MEDIAN)]
    win = best(plain, base, truth, rows)
    pref = next(
        (r for r in plain if prefer is not None and (r.estimator, r.dim if r.irt else 0) == tuple(prefer)), None
    )
    if pref is not None and pref != win and not bank_wins(pref.apply(base), win.apply(base), truth, rows, folds):
        win = pref
    medians = [r for r in rules if r.estimator == MEDIAN]
    if medians:  # the median of the rules is served unless the winner beats it by more than BANK_SE errors
        med = best(medians, base, truth, rows)
        if not bank_wins(med.apply(base), win.apply(base), truth, rows, folds):
            win = med
    for name in (FILL, BANK):
        mine = [r for r in rules if r.estimator == name]
        if mine:
            other = best(mine, base, truth, rows)
            if bank_wins(win.apply(base), other.apply(base), truth, rows, folds):
                win = other
    return win


@dataclass
class ScenarioChoice:
    """Everything chosen for one (scenario, n) on out-of-fold estimates.

    dim : D served; t1, t2 : served estimator names; t1_json, t2_json : the best JSON-evaluable ones (module
    docstring); eps : bank_joint's eps in the artifact (None without a bank); fill_lam : fill's lam in the
    artifact (None without it); lambdas : {"tutorial",
    "validation", "b", "v"} at ``dim``;
    rules : every candidate rule (lambdas from all rows); cv : rows of the CV table (one per rule, then "served");
    oof : [(M,)] T1 estimates per rule; oof_t2 : [(M,)] cross-fitted T2 per rule; oof_served : (M,) each row's
    estimate by the rule chosen without its fold; oof_t2_served : (M,) the same for T2 (None without T2);
    served_mae : mean |oof_served - truth|; interval_t1 /
    calibration_t2 / interval_t2 : {estimator: ...} at ``dim`` (the served ones include the choice's allowance).
    """

    scenario: str
    n: int
    n_anchors: int
    dim: int
    t1: str
    t2: str
    lambdas: dict
    rules: list
    cv: list = field(default_factory=list)
    oof: list = field(default_factory=list)
    oof_t2: list = field(default_factory=list)
    oof_served: np.ndarray | None = None
    oof_t2_served: np.ndarray | None = None
    served_mae: float = float("nan")
    interval_t1: dict = field(default_factory=dict)
    calibration_t2: dict = field(default_factory=dict)
    interval_t2: dict = field(default_factory=dict)
    eps: float | None = None
    fill_lam: float | None = None
    t1_json: str = ""
    t2_json: str = ""


def choose_scenario(
    s: str,
    n: int,
    n_anchors: int,
    base: dict,
    bias: dict,
    var: np.ndarray,
    truth: np.ndarray,
    truth_t2: np.ndarray,
    folds: np.ndarray,
    groups: np.ndarray,
    *,
    alpha: float = 0.1,
    scale: str = "binomial",
    grid=est.LAMBDA_GRID,
    bank: dict | None = None,
    prefer: dict | None = None,
    fill: dict | None = None,
) -> ScenarioChoice:
    """Choose D and the T1 / T2 estimators of (s, n) and fit their intervals and T2 maps (module docstring).

    base : {D: {"anchor", "irt", "pirt": (M,)}} out-of-fold; bias : {D: (M,)}; var, truth, truth_t2, folds,
    groups (the families: the intervals' exchangeable units) : (M,); bank : {eps: (M,)} out-of-fold bank_joint
    (None: no bank candidate); fill : {lam: (M,)} out-of-fold fill (None: none); prefer : {None: the board's rule on every row, f: the board's rule without fold f}
    (:func:`board_rule`; None: each scenario on its own).
    """
    prefer = prefer or {}
    rows = np.isfinite(truth)
    if bank:  # one bank rule: its eps is chosen inside it, on the other folds (nested), served at the best overall
        eps_star, nested = _nested_bank(bank, truth, rows, folds)
        base = {D: {**b, "bank": {eps_star: nested}} for D, b in base.items()}
    if fill:  # likewise fill's lam
        lam_star, nested_fill = _nested_bank(fill, truth, rows, folds)
        base = {D: {**b, "fill": {lam_star: nested_fill}} for D, b in base.items()}
    rules, lams = rules_for(base, bias, var, truth, rows, n_anchors, grid)
    win = choose(rules, base, truth, rows, folds, prefer.get(None))
    fold_rules = {
        int(f): rules_for(base, bias, var, truth, rows & (folds != f), n_anchors, grid)[0]
        for f in np.unique(folds[rows])
    }
    served = _choice_out_of_fold(base, truth, rows, folds, fold_rules, prefer)
    dim = win.dim if win.irt else best([r for r in rules if r.irt], base, truth, rows).dim
    banks = [r for r in rules if r.estimator == BANK]
    eps = banks[0].eps if banks else None  # one bank rule: its eps chosen inside it (above)
    fills = [r for r in rules if r.estimator == FILL]
    ch = ScenarioChoice(
        s,
        n,
        n_anchors,
        dim,
        win.estimator,
        win.estimator,
        lams[dim],
        rules,
        oof_served=served,
        served_mae=mae(served, truth, rows),
        eps=eps,
        fill_lam=fills[0].lam if fills else None,
    )
    exported = [r for r in rules if not r.irt or r.dim == dim]  # what the artifact carries: anchor, the bank, D's
    nested = _rules_out_of_fold(rules, base, folds, fold_rules)
    _score_rules(ch, base, truth, truth_t2, folds, groups, win, exported, alpha, scale, nested)
    # the served T1 interval: out-of-choice residuals, never narrower than the winner's own
    ch.interval_t1[win.estimator] = widest(
        [symmetric_interval(served, truth, alpha, scale, groups=groups), ch.interval_t1[win.estimator]]
    )
    _recommend(ch, exported, truth_t2, folds)
    ch.cv.append(_served_row(ch, rows))
    return ch


def _nested_bank(bank: dict, truth: np.ndarray, rows: np.ndarray, folds: np.ndarray) -> tuple[float, np.ndarray]:
    """(eps with the lowest MAE on every row, (M,) each fold's bank_joint at the eps best on the other folds); fill's."""
    eps_star = min(bank, key=lambda e: mae(bank[e], truth, rows))
    nested = np.full(len(truth), np.nan)
    for f in np.unique(folds):
        e_f = min(bank, key=lambda e: mae(bank[e], truth, rows & (folds != f)))
        nested[folds == f] = bank[e_f][folds == f]
    return eps_star, nested


def _choice_out_of_fold(base, truth, rows, folds, fold_rules: dict, prefer: dict) -> np.ndarray:
    """(M,) each row's estimate by the rule chosen without its fold (``fold_rules`` {fold: :func:`rules_for`'s rules with
    lambdas read without it}; the board's rule ``prefer`` read without it too): the leave-one-fold-out of the choice."""
    served = np.full(len(truth), np.nan)
    for f, r_f in fold_rules.items():
        on = folds == f
        served[on] = choose(r_f, base, truth, rows & ~on, folds, prefer.get(f)).apply(base)[on]
    return served


def _rules_out_of_fold(rules: list, base, folds, fold_rules: dict) -> list:
    """[(M,)] each rule's out-of-fold estimates with its lambdas too read without the scored fold: fold f's rows get
    the rule as ``fold_rules[f]`` derives it from the other folds' rows (gpirt's tutorial lambda from their IRT errors,
    gpirt_val's from their MAE grid, the median through both). ``base`` is out-of-fold already, but a lambda chosen on
    every row has seen the scored fold: on the distinct dev boards (seeds 0-2) the median at D = 1 scored 0.756x random
    items at n = 100 with it and 0.799x read this way, which is what the choice's own leave-one-fold-out gets. Rows of
    no fold with a truth keep the rule fitted on every row."""
    out = [r.apply(base).copy() for r in rules]
    for f, r_f in fold_rules.items():
        if [(r.estimator, r.dim, r.eps) for r in r_f] != [(r.estimator, r.dim, r.eps) for r in rules]:
            raise ValueError(f"the candidates derived without fold {f} differ from those of every row")
        on = folds == f
        for x, r in zip(out, r_f):
            x[on] = r.apply(base)[on]
    return out


def _score_rules(
    ch: ScenarioChoice, base, truth, truth_t2, folds, groups, win: Rule, exported: list, alpha, scale, nested: list
):
    """Every rule's out-of-fold T1 (``nested``: :func:`_rules_out_of_fold`) and cross-fitted T2 estimates and CV row
    into ``ch``, and for the ``exported`` ones their T1 interval, T2 map and T2 interval."""
    rows, rows2 = np.isfinite(truth), np.isfinite(truth_t2)
    for r, x in zip(ch.rules, nested):
        x2, cal = fold_isotonic(x, truth_t2, folds)
        ch.oof.append(x)
        ch.oof_t2.append(x2)
        ch.cv.append(
            {
                "scenario": ch.scenario,
                "n": ch.n,
                "n_anchors": ch.n_anchors,
                "estimator": r.estimator,
                "dim": r.dim if r.irt else 0,
                "lambda": np.nan if r.lam is None else r.lam,
                "eps": np.nan if r.eps is None else r.eps,
                "cv_mae_t1": mae(x, truth, rows),
                "cv_mae_t2": mae(x2, truth_t2, rows2) if cal else np.nan,
                "n_models": int((rows & np.isfinite(x)).sum()),
                "n_models_t2": int((rows2 & np.isfinite(x2)).sum()),
                "served_t1": r is win,
                "served_t2": False,
            }
        )
        if r in exported:  # the served D's candidates (and the bank at its eps) go into the artifact
            ch.interval_t1[r.estimator] = symmetric_interval(x, truth, alpha, scale, groups=groups)
            if cal is not None:
                ch.calibration_t2[r.estimator] = cal
                ch.interval_t2[r.estimator] = symmetric_interval(x2, truth_t2, alpha, scale, groups=groups)


def _recommend(ch: ScenarioChoice, exported: list, truth_t2: np.ndarray, folds: np.ndarray) -> None:
    """The JSON-only recommendations (``t1_json``, ``t2_json``), the served T2 estimator of ``ch`` (its CV rows
    scored by :func:`_score_rules`) and ``oof_t2_served``, each row's T2 by the choice made without its fold (the
    served T2 interval is calibrated on it, over every scenario and budget: small_select.choose_board)."""
    rules, rows2 = ch.rules, np.isfinite(truth_t2)
    js = [i for i, r in enumerate(rules) if r in exported and not needs_learned(r)]
    ch.t1_json = rules[min(js, key=lambda i: ch.cv[i]["cv_mae_t1"])].estimator  # == t1 unless the bank won
    ch.t2_json = ch.t1_json
    if ch.calibration_t2:  # T2: the lowest cross-fitted MAE at the served D
        at_dim = [i for i, r in enumerate(rules) if r.estimator in ch.calibration_t2 and r in exported]
        json_t2 = [i for i in at_dim if not needs_learned(rules[i])]
        i2 = _t2_choice(ch, at_dim, truth_t2, rows2, folds)
        ch.t2_json = rules[_t2_choice(ch, json_t2, truth_t2, rows2, folds)].estimator if json_t2 else ch.t1_json
        ch.t2, ch.cv[i2]["served_t2"] = rules[i2].estimator, True
        ch.oof_t2_served = np.full(len(truth_t2), np.nan)
        for f in np.unique(folds):
            mine = folds == f
            ch.oof_t2_served[mine] = ch.oof_t2[_t2_choice(ch, at_dim, truth_t2, rows2 & ~mine, folds)][mine]


def _t2_choice(ch: ScenarioChoice, at_dim: list, truth_t2: np.ndarray, rows: np.ndarray, folds: np.ndarray) -> int:
    """The index (in ``ch.rules``) of the T2 rule chosen on ``rows``: among the JSON-evaluable candidates at the
    served D (``at_dim``) the lowest cross-fitted T2 MAE, replaced by fill, then the bank, where they beat it by one
    standard error of their fold-by-fold gain (as for T1: choose())."""
    js = [i for i in at_dim if not needs_learned(ch.rules[i])]
    i2 = min(js or at_dim, key=lambda i: mae(ch.oof_t2[i], truth_t2, rows))
    for name in (FILL, BANK):
        j = next((i for i in at_dim if ch.rules[i].estimator == name), None)
        if js and j is not None and bank_wins(ch.oof_t2[i2], ch.oof_t2[j], truth_t2, rows, folds):
            i2 = j
    return i2


def _served_row(ch: ScenarioChoice, rows: np.ndarray) -> dict:
    """The CV table's "served" row of ``ch``: the MAE of the choice's own leave-one-fold-out."""
    return {
        "scenario": ch.scenario,
        "n": ch.n,
        "n_anchors": ch.n_anchors,
        "estimator": "served",
        "dim": ch.dim,
        "lambda": np.nan,
        "eps": np.nan,
        "cv_mae_t1": ch.served_mae,
        "cv_mae_t2": np.nan,
        "n_models": int((rows & np.isfinite(ch.oof_served)).sum()),
        "n_models_t2": 0,
        "served_t1": False,
        "served_t2": False,
    }


def board_rule(bases: dict, rules: dict, truths: dict, rows: np.ndarray) -> tuple | None:
    """The (estimator, dim) of the rule with the lowest mean out-of-fold MAE over a board's scenarios at one budget
    (dim 0 for rules without IRT), among every scenario's :func:`rules_for` but the tutorial's gpirt and the bank.

    bases : {scenario: {D: {...}}} as :func:`choose_scenario` takes them; rules : {scenario: rules_for's rules with
    lambdas from ``rows``}; truths : {scenario: (M,)}; rows : (M,) bool, the rows that may be read. Returns None when
    nothing can be scored.
    """
    scores: dict = {}
    for s, base in bases.items():
        ok, mine = rows & np.isfinite(truths[s]), {}
        for r in rules[s]:  # a rule with a parameter grid (fill's lam) scores its best on these rows
            if r.estimator not in ("gpirt", MEDIAN, *LEARNED_RULES):
                key = (r.estimator, r.dim if r.irt else 0)
                mine[key] = min(mine.get(key, np.inf), mae(r.apply(base), truths[s], ok))
        for key, v in mine.items():
            scores.setdefault(key, []).append(v)
    full = {k: float(np.mean(v)) for k, v in scores.items() if len(v) == len(bases) and np.isfinite(v).all()}
    return min(full, key=full.get) if full else None
