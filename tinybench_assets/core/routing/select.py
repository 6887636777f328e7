"""Choosing a router by cross-validation on TRAINING questions only.

Training questions are split into ``n_folds`` seeded folds. For every router family and every
configuration on its grid, the out-of-fold P(correct) is computed (each fold predicted by a router fit
on the other folds) and routed with the tie-break; a configuration's score is the mean correctness of
its picks over all training questions (``cv_acc``). Every configuration is also scored with conservative routing
margins (``margins``: leave the best single model only when another model's P beats it by more than
the margin). Each family keeps its best configuration; the ensemble averages the families' best
out-of-fold P. Picking the best of many configurations on the same folds flatters it (on shuffled
answers the best of 40 KNN configurations "beat" the best single model by 6 points), so each family is
scored selection-aware (``nested_cv_acc``): fold f is scored with the configuration that is best on the
other folds' out-of-fold predictions. The served router is the one with the highest nested CV accuracy
among those whose nested gain over
the best single model passes the gate: the one-sided lower bound of a paired bootstrap of the gain (over
training questions), at level ``gate_level`` Bonferroni-corrected for the number of candidate routers,
is above zero; if none passes, the best single model is served.
Ties go to the simpler family. Test questions are never seen here.

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

Families that cannot run on the data sit out, with the reason in ``RouterSelection.sat_out``: the KNN-IRT families
below ``MIN_IRT_MODELS`` models (a 2PL needs at least three), the task families with fewer than two tasks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .calibrated import CalibratedRouter, PlattCalibrator, crossfit_calibrated
from .knn import nearest
from .metrics import paired_bootstrap_ci, route
from .routers import (
    BestSingleRouter,
    EnsembleRouter,
    KNNIRTRouter,
    KNNVoteRouter,
    LogisticRouter,
    MFRouter,
    cv_folds,
    model_accuracy,
    vote_proba,
)
from .task import TaskRouter, fit_task_classifier, recognise, task_accuracy, task_index, task_vote

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
DEFAULT_MARGINS = [0.0, 0.02, 0.05, 0.1]
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


@dataclass
class RouterSelection:
    """What cross-validation found. ``table``: one row per (family, config) with cv_acc; ``best``: family ->
    (config dict, cv_acc); ``served``: the served family; ``oof``: family -> out-of-fold P (n, M)."""

    table: pd.DataFrame
    best: dict
    served: str
    oof: dict = field(repr=False)
    fold: np.ndarray = field(repr=False)
    gate: dict = field(default_factory=dict)
    seconds: float = 0.0
    calibrators: dict = field(default_factory=dict, repr=False)  # calibrated family -> its PlattCalibrator (all OOF)
    sat_out: dict = field(default_factory=dict)  # family -> why it could not run on this data

    @property
    def margin(self) -> float:
        """The served router's routing margin."""
        return float(self.best[self.served][0].get("margin", 0.0))

    def make(self, family: str, device: str = "cpu", seed: int = 0):
        """An unfitted router of a family in its CV-chosen configuration."""
        if family == "ensemble":
            return EnsembleRouter([self.make(f, device, seed) for f in self.best["ensemble"][0]["members"]])
        cfg = router_config(self.best[family][0])
        if family in self.calibrators:
            return CalibratedRouter(
                make_router(base_family(family), cfg, device=device, seed=seed), calibrator=self.calibrators[family]
            )
        return make_router(family, cfg, device=device, seed=seed)


def make_router(family: str, config: dict, device: str = "cpu", seed: int = 0):
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


def _grid(spec: dict) -> list[dict]:
    keys = list(spec)
    out = [{}]
    for k in keys:
        out = [{**o, k: v} for o in out for v in spec[k]]
    return out


def _fold_predictions(E, Y, tr, va, fitted: set, grid: dict, n_tasks: int, task, seed: int, device: str, put) -> None:
    """One fold's out-of-fold P of every fitted family and configuration: ``put(family, config, va, P)``."""
    Etr, Ytr, Eva = E[tr], Y[tr], E[va]
    acc = model_accuracy(Ytr)
    if "best_single" in fitted:
        put("best_single", {}, va, np.tile(acc, (len(va), 1)))
    kmax = max([*grid["knn_vote"]["k"], *grid["knn_shrunk"]["k"], *grid["knn_task"]["k"]])
    if {"knn_vote", "knn_shrunk", "task_prior", "knn_task"} & fitted:
        idx, sim = nearest(Eva, Etr, kmax)
        Yf = Ytr.astype(np.float32)
        if "knn_vote" in fitted:
            for cfg in _grid(grid["knn_vote"]):
                put("knn_vote", cfg, va, vote_proba(idx, sim, Yf, acc, cfg["k"], cfg["weighting"], 0.0))
        if "knn_shrunk" in fitted:
            for cfg in _grid(grid["knn_shrunk"]):
                put("knn_shrunk", cfg, va, vote_proba(idx, sim, Yf, acc, cfg["k"], "uniform", cfg["shrink"]))
        if {"task_prior", "knn_task"} & fitted:
            acc_t, seen = task_accuracy(Ytr, task[tr], n_tasks), {}
            for fam in ("task_prior", "knn_task"):
                for cfg in _grid(grid[fam]) if fam in fitted else []:
                    if cfg["alpha"] not in seen:  # one classifier per fold and alpha
                        seen[cfg["alpha"]] = recognise(Eva, *fit_task_classifier(Etr, task[tr], n_tasks, cfg["alpha"]))
                    put(
                        fam,
                        cfg,
                        va,
                        task_vote(idx, sim, Yf, seen[cfg["alpha"]], acc_t, cfg.get("k", 0), cfg.get("shrink", 0.0)),
                    )
    if "knn_irt" in fitted:
        for dim in grid["knn_irt"]["dim"]:
            r = KNNIRTRouter(dim=dim, seed=seed, device=device).fit(Etr, Ytr)
            for k in grid["knn_irt"]["k"]:
                r.k = k
                put("knn_irt", {"dim": dim, "k": k}, va, r.predict_proba(Eva))
    if "logistic" in fitted:
        for cfg in _grid(grid["logistic"]):
            put("logistic", cfg, va, LogisticRouter(C=cfg["C"]).fit(Etr, Ytr).predict_proba(Eva))
    if "mf" in fitted:
        for cfg in _grid(grid["mf"]):
            put("mf", cfg, va, MFRouter(rank=cfg["rank"], l2=cfg["l2"], seed=seed).fit(Etr, Ytr).predict_proba(Eva))


def _cross_validate(
    E, Y, fold, n_folds: int, families: list, grid: dict, tasks: tuple, seed: int, device: str, log, t0
):
    """{(family, config items): (n, M) out-of-fold P} of every family (calibrated families cross-fitted on their
    base's P) and the raw P of the fitted base families. ``tasks``: (task names, task index per question)."""
    n, M = Y.shape
    names, task = tasks
    fitted = {base_family(f) for f in families}  # the families whose routers are fitted per fold
    oof: dict[tuple, np.ndarray] = {}

    def put(family, cfg, va, P):
        key = (family, tuple(sorted(cfg.items())))
        oof.setdefault(key, np.full((n, M), np.nan))[va] = P

    for f in range(n_folds):
        tr, va = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
        _fold_predictions(E, Y, tr, va, fitted, grid, len(names), task, seed, device, put)
        log(f"router CV fold {f + 1}/{n_folds} done ({time.perf_counter() - t0:.1f} s)")
    for fam in families:
        if fam != base_family(fam):
            for (f0, cfg), P in list(oof.items()):
                if f0 == base_family(fam):
                    oof[(fam, cfg)] = crossfit_calibrated(P, Y, fold)
    return {key: P for key, P in oof.items() if key[0] in families}, oof


def _nested(options: list, fold: np.ndarray, n_folds: int) -> np.ndarray:
    """Selection-aware correctness: fold f scored with the option (its last element: per-question correctness)
    that is best on the other folds."""
    out = np.empty(len(fold))
    for f in range(n_folds):
        rest = fold != f
        j = int(np.argmax([o[-1][rest].mean() for o in options]))
        out[fold == f] = options[j][-1][fold == f]
    return out


def _ensemble(members: list, cand: dict, oof: dict, best_oof: dict, correct, margins: list, fold, n_folds: int):
    """The ensemble of ``members`` (each member's best configuration averaged): (rows of the CV table, best entry
    (config, nested accuracy), its P, its nested correctness); nested: members and margin chosen without fold f."""
    out = np.empty(len(fold))
    for f in range(n_folds):
        rest, here = fold != f, fold == f
        Ps = []
        for fam in members:
            opts = cand[fam]
            j = int(np.argmax([o[-1][rest].mean() for o in opts]))
            Ps.append(oof[opts[j][1]])
        P_f = np.mean(Ps, axis=0)
        cs = [correct(P_f, mg) for mg in margins]
        out[here] = cs[int(np.argmax([c[rest].mean() for c in cs]))][here]
    P_ens = np.mean([best_oof[f] for f in members], axis=0)
    cs = [correct(P_ens, mg) for mg in margins]
    j = int(np.argmax([c.mean() for c in cs]))
    rows = [
        {"family": "ensemble", "config": {"members": members, "margin": mg}, "cv_acc": float(c.mean())}
        for mg, c in zip(margins, cs)
    ]
    return rows, ({"members": members, "margin": margins[j]}, float(out.mean())), P_ens, out


def _gate(best: dict, nested_correct: dict, n_boot: int, seed: int, gate_level: float) -> dict:
    """{family: one-sided lower bound of its paired-bootstrap CV gain over the best single model} (Bonferroni over
    the candidates; NaN for the best single model or without one; inf when the gate is off)."""
    base = nested_correct.get("best_single")
    gate = {}
    n_cand = max(1, len(best) - 1)  # Bonferroni: every candidate gets a shot at beating the best single model
    for fam in best:
        if fam == "best_single" or base is None:
            gate[fam] = float("nan")
            continue
        lo, _ = (
            paired_bootstrap_ci(
                nested_correct[fam], base, n_boot=n_boot, seed=seed, level=1 - 2 * (1 - gate_level) / n_cand
            )
            if gate_level > 0
            else (float("inf"), None)
        )
        gate[fam] = lo
    return gate


def select_router(
    E: np.ndarray,
    Y: np.ndarray,
    *,
    groups=None,
    families=None,
    grid: dict | None = None,
    n_folds: int = 5,
    seed: int = 0,
    device: str = "cpu",
    margins=None,
    gate_level: float = 0.95,
    n_boot: int = 2000,
    log=None,
) -> RouterSelection:
    """Cross-validate router families on training questions E (n, d), Y (n, M) and choose one to serve.

    ``groups``: each training question's task (the task families' input; None: they sit out).

    ``gate_level``: a router is served instead of the best single model only when the one-sided
    ``gate_level`` lower bound of its paired-bootstrap CV gain is > 0 (0 disables the gate: the plain
    CV winner is served).
    """
    t0 = time.perf_counter()
    log = log or (lambda msg: None)
    E = np.asarray(E, dtype=np.float32)
    Y = np.asarray(Y, dtype=float)
    n, M = Y.shape
    grid = {**DEFAULT_GRID, **(grid or {})}
    families = list(families or DEFAULT_FAMILIES)
    unknown = [f for f in families if base_family(f) not in FITTED or f == "best_single" + CAL]
    if unknown:
        raise ValueError(f"unknown router families {unknown}; known: {', '.join(FITTED)} (and <family>{CAL})")
    tasks = task_index(groups) if groups is not None else (np.array([]), None)
    sat_out = sit_out(families, M, len(tasks[0]))
    families = [f for f in families if f not in sat_out]
    for f, why in sat_out.items():
        log(f"router family {f} sits out: {why}")
    fold = cv_folds(n, n_folds, seed)
    oof, raw = _cross_validate(E, Y, fold, n_folds, families, grid, tasks, seed, device, log, t0)
    prior = model_accuracy(Y)
    Yz = np.nan_to_num(Y, nan=0.0)
    margins = list(DEFAULT_MARGINS if margins is None else margins)
    rows_idx = np.arange(n)

    def correct(P, margin):
        return Yz[rows_idx, route(P, prior, margin=margin)]

    # every (family, config, margin): its out-of-fold correctness per training question
    rows, cand = [], {}
    for (fam, cfg), P in oof.items():
        for mg in margins if fam != "best_single" else [0.0]:
            conf = {**dict(cfg), "margin": mg} if fam != "best_single" else dict(cfg)
            c = correct(P, mg)
            rows.append({"family": fam, "config": conf, "cv_acc": float(c.mean())})
            cand.setdefault(fam, []).append((conf, (fam, cfg), mg, c))
    best, best_oof, nested_correct, calibrators = {}, {}, {}, {}
    for fam in families:
        opts = cand[fam]
        j = int(np.argmax([o[-1].mean() for o in opts]))  # first maximum: the grid's earlier (simpler) configuration
        nested_correct[fam] = _nested(opts, fold, n_folds)
        best[fam] = (opts[j][0], float(nested_correct[fam].mean()))
        best_oof[fam] = oof[opts[j][1]]
        if fam != base_family(fam):  # the served calibrator: fitted on every fold's out-of-fold base P
            calibrators[fam] = PlattCalibrator().fit(raw[(base_family(fam), opts[j][1][1])], Y)
    members = [f for f in families if f != "best_single"]
    if len(members) >= 2:
        ens_rows, best["ensemble"], best_oof["ensemble"], nested_correct["ensemble"] = _ensemble(
            members, cand, oof, best_oof, correct, margins, fold, n_folds
        )
        rows += ens_rows
    table = pd.DataFrame(rows)
    # The baseline is the model served without routing (best on ALL training questions), scored in-sample.
    # Its out-of-fold score is biased low: the fold totals of a model's correct answers are fixed, so the model
    # that is best on the other folds tends to be worse on the held-out one (seen: 0.57 vs 0.60 on shuffled
    # answers), which would let noise pass the gate. In-sample it errs the other way: a conservative gate.
    if "best_single" in best:
        nested_correct["best_single"] = Yz[:, int(np.argmax(prior))]
        best["best_single"] = (best["best_single"][0], float(nested_correct["best_single"].mean()))
    gate = _gate(best, nested_correct, n_boot, seed, gate_level)
    order = sorted(best, key=lambda f: (-best[f][1], simplicity(f)))
    served = next((f for f in order if f == "best_single" or gate[f] > 0), order[0])
    table["chosen_in_family"] = [best[r.family][0] == r.config for r in table.itertuples()]
    table["served"] = table["family"].eq(served) & table["chosen_in_family"]
    table["nested_cv_acc"] = table["family"].map({f: v[1] for f, v in best.items()}).where(table["chosen_in_family"])
    table["gate_lower"] = table["family"].map(gate).where(table["chosen_in_family"])
    return RouterSelection(
        table=table,
        best=best,
        served=served,
        oof=best_oof,
        fold=fold,
        gate=gate,
        seconds=time.perf_counter() - t0,
        calibrators=calibrators,
        sat_out=sat_out,
    )
