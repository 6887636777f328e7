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

The families, their default grids and which of them sit out on small data (with the reason in
``RouterSelection.sat_out``) are described in core/routing/families.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .calibrated import CalibratedRouter, PlattCalibrator, crossfit_calibrated
from .families import (
    CAL,
    DEFAULT_FAMILIES,
    DEFAULT_GRID,
    FITTED,
    base_family,
    make_router,
    router_config,
    simplicity,
    sit_out,
)
from .knn import nearest
from .metrics import paired_bootstrap_ci, route
from .routers import EnsembleRouter, KNNIRTRouter, LogisticRouter, MFRouter, cv_folds, model_accuracy, vote_proba
from .task import fit_task_classifier, recognise, task_accuracy, task_index, task_vote

DEFAULT_MARGINS = [0.0, 0.02, 0.05, 0.1]


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


def _runnable_families(families, groups, n_models: int, log) -> tuple[list, dict, tuple]:
    """(the families that run, {family: why it sits out}, (task names, task index per question) of ``groups``); an
    unknown family name is a ValueError."""
    families = list(families or DEFAULT_FAMILIES)
    unknown = [f for f in families if base_family(f) not in FITTED or f == "best_single" + CAL]
    if unknown:
        raise ValueError(f"unknown router families {unknown}; known: {', '.join(FITTED)} (and <family>{CAL})")
    tasks = task_index(groups) if groups is not None else (np.array([]), None)
    out = sit_out(families, n_models, len(tasks[0]))
    for f, why in out.items():
        log(f"router family {f} sits out: {why}")
    return [f for f in families if f not in out], out, tasks


def _candidates(oof: dict, margins: list, correct) -> tuple[list, dict]:
    """Every (family, config, margin) with its out-of-fold correctness per training question: (rows of the CV table,
    {family: [(config, oof key, margin, correctness), ...]}); the best single model only at margin 0."""
    rows, cand = [], {}
    for (fam, cfg), P in oof.items():
        for mg in margins if fam != "best_single" else [0.0]:
            conf = {**dict(cfg), "margin": mg} if fam != "best_single" else dict(cfg)
            c = correct(P, mg)
            rows.append({"family": fam, "config": conf, "cv_acc": float(c.mean())})
            cand.setdefault(fam, []).append((conf, (fam, cfg), mg, c))
    return rows, cand


def _best_per_family(families, cand: dict, oof: dict, raw: dict, Y, fold, n_folds: int) -> tuple[dict, ...]:
    """Each family's best candidate: (best {family: (config, nested accuracy)}, its out-of-fold P, its nested
    correctness, the calibrated families' calibrators fitted on every fold's out-of-fold base P)."""
    best, best_oof, nested_correct, calibrators = {}, {}, {}, {}
    for fam in families:
        opts = cand[fam]
        j = int(np.argmax([o[-1].mean() for o in opts]))  # first maximum: the grid's earlier (simpler) configuration
        nested_correct[fam] = _nested(opts, fold, n_folds)
        best[fam] = (opts[j][0], float(nested_correct[fam].mean()))
        best_oof[fam] = oof[opts[j][1]]
        if fam != base_family(fam):  # the served calibrator: fitted on every fold's out-of-fold base P
            calibrators[fam] = PlattCalibrator().fit(raw[(base_family(fam), opts[j][1][1])], Y)
    return best, best_oof, nested_correct, calibrators


def _cv_table(rows: list, best: dict, gate: dict, served: str) -> pd.DataFrame:
    """The CV table: a row per candidate, marking each family's choice (with its nested CV accuracy and gate bound)
    and the served one."""
    table = pd.DataFrame(rows)
    table["chosen_in_family"] = [best[r.family][0] == r.config for r in table.itertuples()]
    table["served"] = table["family"].eq(served) & table["chosen_in_family"]
    table["nested_cv_acc"] = table["family"].map({f: v[1] for f, v in best.items()}).where(table["chosen_in_family"])
    table["gate_lower"] = table["family"].map(gate).where(table["chosen_in_family"])
    return table


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
    families, sat_out, tasks = _runnable_families(families, groups, M, log)
    fold = cv_folds(n, n_folds, seed)
    oof, raw = _cross_validate(E, Y, fold, n_folds, families, grid, tasks, seed, device, log, t0)
    prior = model_accuracy(Y)
    Yz = np.nan_to_num(Y, nan=0.0)
    margins = list(DEFAULT_MARGINS if margins is None else margins)
    rows_idx = np.arange(n)

    def correct(P, margin):
        return Yz[rows_idx, route(P, prior, margin=margin)]

    rows, cand = _candidates(oof, margins, correct)
    best, best_oof, nested_correct, calibrators = _best_per_family(families, cand, oof, raw, Y, fold, n_folds)
    members = [f for f in families if f != "best_single"]
    if len(members) >= 2:
        ens_rows, best["ensemble"], best_oof["ensemble"], nested_correct["ensemble"] = _ensemble(
            members, cand, oof, best_oof, correct, margins, fold, n_folds
        )
        rows += ens_rows
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
    return RouterSelection(
        table=_cv_table(rows, best, gate, served),
        best=best,
        served=served,
        oof=best_oof,
        fold=fold,
        gate=gate,
        seconds=time.perf_counter() - t0,
        calibrators=calibrators,
        sat_out=sat_out,
    )
