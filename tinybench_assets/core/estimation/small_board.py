"""Tiny benchmarks for small leaderboards (10-49 models), validated by leave-family-out cross-validation.

The big-board path (:class:`~.predictor.AnchorPredictor`) holds out a share of the models;
with 10-49 models there is nothing to spare, so :class:`SmallBoardPredictor` cross-validates instead and serves
everything through the tiny-benchmark artifact::

    fit(Y, w, scenario_cols, full_scores, groups)
      0. checks     small_inputs: the parameters, the board's inputs, the folds' training models, anchor counts
      1. folds      small_folds.family_folds: families whole, K = min(max_folds, families)
      2. per fold   small_folds.out_of_fold: 2PL per D and nested anchors per n on the fold's training models;
                    held-out models estimated from their anchor answers only; the answer bank (bank_joint) of
                    the fold's training models, held-out models' bank estimates per eps
      3. choice     small_select.choose_board: small_choice.choose_scenario per (scenario, n): D, the T1 / T2
                    estimators, gp-IRT lambdas, eps by out-of-fold MAE; split-conformal intervals (small_intervals)
                    from out-of-fold residuals with families as the exchangeable units, the served one from the
                    choice's own leave-one-fold-out; isotonic T2 maps on out-of-fold estimates
      3a. design    small_design: every fold refitted on anchor points (KMeans over the answers) too; each scenario
                    takes the design whose served rule has the lower out-of-fold MAE (fold f's decision without f)
      3b. guard     small_guard: scenarios whose served rule loses to stratified random items get random anchors
                    inside each subscenario; every fold is refitted with its own decision (made without it) and
                    the choice is made again
      3c. gate      with ``gate``, small_guard.gate (in small_select): a (scenario, n) whose served rule's
                    out-of-fold MAE is still not below stratified random items' serves the anchors' plain mean where
                    that did better, each fold's out-of-fold estimate following the decision made without it
      3d. notes     small_guard.random_notes: every (scenario, n) whose served rule's out-of-fold MAE is still not
                    below stratified random items' is named in the notes (the anchors stay one nested order, so a
                    budget can lose where the others win)
      4. refit      small_folds.fit_scenario on every model: the served 2PLs (chosen D) and anchors; the
                    served answer bank per n (small_folds.build_bank on every model, eps as chosen); the state
                    lives in small_state's objects (the class's "Fitted attributes")
    predict(Y)      builds the artifact of n (to_artifact's dict) and runs ArtifactModel.evaluate on it: the
                    served estimates ARE the exported tiny benchmark's (``estimate_from_artifact`` /
                    ``tinybench estimate`` on the saved file give the same numbers)

The artifact has the layout of :mod:`..tiny_benchmark.format`: the JSON-evaluable estimators anchor, irt, pirt,
gpirt, gpirt_val at the served D, and bank_joint and fill (the ridge fill-in, estimation/fill.py), whose answer bank travels in the learned file exactly as the big
predictor's does (``bank.bank_json`` / ``bank_tree_arrays`` of ``served_.bank``; no regressors: ``models`` is empty,
``fit_learned`` False); ``recommended`` is the best JSON-evaluable estimator, ``recommended_learned`` the served
one. Its ``joint`` IRT entry is the block-diagonal of the
per-scenario fits (each scenario's discriminations in its own D columns, zeros elsewhere): with independent N(0, 1)
priors the joint MAP abilities then separate into the per-scenario ones, so the joint estimators would repeat the
per-scenario ones. A real joint 2PL is not fitted (too many parameters for a few dozen models) and no joint
estimator is listed. Pure numpy / pandas / torch / scikit-learn: no Dagster, no DuckDB.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd

from ..tiny_benchmark.budgets import budget_rows
from ..tiny_benchmark.files import attach_trees
from ..tiny_benchmark.model import ArtifactModel
from . import small_tables
from .small_design import pick_designs
from .small_export import build_artifact
from .small_folds import CLUSTERING, build_bank, family_folds, fit_prior, fit_scenario, out_of_fold, scenario_truth
from .small_guard import apply_guard, random_notes
from .small_inputs import MIN_MODELS, MIN_TRAIN, anchor_counts, check_folds, check_inputs, check_params, input_digest
from .small_select import choose_board
from .small_state import BoardLayout, BoardTruth, FamilyFolds, ServedBoard, scenario_subscenarios
from .table import ESTIMATE_VALUES

__all__ = ["SmallBoardPredictor", "MIN_MODELS", "MIN_TRAIN"]

PRED_COLS = ["model", "scenario", "n", "estimator", "estimator_t2", "answered", *ESTIMATE_VALUES]


def refit_served(
    Y, layout: BoardLayout, truth: BoardTruth, counts: dict, choices: dict, designs: dict, ns: list, **fit_kw
) -> ServedBoard:
    """Step 4 of ``fit``, on every model: the served 2PLs (chosen D) and anchors per scenario (``designs``), the served
    answer bank per n (eps as chosen) and the shrinkage priors (shrunk / shrunk_joint as served). fit_kw : seed,
    device, n_init of small_folds.fit_scenario."""
    L, fits = layout, {}
    for s, c in L.cols.items():
        need = sorted({choices[(s, n)].dim for n in ns})
        fits[s] = fit_scenario(
            Y[:, c],
            L.w[c],
            {n: counts[(s, n)] for n in ns},
            need,
            subscenarios=L.subscenarios[s],
            design=designs[s],
            **fit_kw,
        )
    bank = {}  # every model's answers at the served anchors
    for n in ns:
        b = build_bank(Y, L.cols, L.w, {s: f.anchors[n] for s, f in fits.items()})
        eps, lam = {s: choices[(s, n)].eps for s in L.scenarios}, {s: choices[(s, n)].fill_lam for s in L.scenarios}
        bank[(CLUSTERING, n)] = {**b, "eps": eps, **({"fill": lam} if None not in lam.values() else {})}
    priors = {n: fit_prior(Y, truth.t1, L.w, L.cols, {s: f.anchors[n] for s, f in fits.items()}) for n in ns}
    return ServedBoard(fits, bank, priors)


PARAMS = (
    "n_values",
    "dims",
    "alpha",
    "max_folds",
    "seed",
    "device",
    "interval_scale",
    "n_init",
    "design",
    "guard",
    "pick_design",
    "gate",
)


class SmallBoardPredictor:
    """Anchors, estimators and a tiny benchmark for a leaderboard of 10-49 models (module docstring).

    Parameters
    ----------
    n_values : anchor budgets (each capped at a scenario's pool, noted in ``notes_``).
    dims : IRT dimensions D tried (chosen per scenario and n by out-of-fold MAE).
    alpha : interval miscoverage (0.1: 90 % intervals).
    max_folds : K at most of the grouped K-fold (K = min(max_folds, families)).
    seed : seeds the folds, IRT fits, KMeans and b's item halves. device : torch device of the IRT engine.
    interval_scale : "binomial" (width ~ sqrt(e (1 - e)) + 0.05) or "none".
    n_init : KMeans restarts.
    design : the anchors' design (small_folds.DESIGNS); guard : with design "stratified", switch a scenario to
        random anchors inside each subscenario where the served rule loses to random items (small_guard);
        pick_design : with design "stratified", serve a scenario on anchor points where they do better (small_design).
        gate : serve the anchors' plain mean where the served rule loses to random items (small_guard.gate; off: on
        the dev boards it made the served error worse, docs/estimators.md).

    Fitted attributes
    -----------------
    layout_ (small_state.BoardLayout: scenarios, cols, w, items, models, groups, subscenarios),
    truth_ (small_state.BoardTruth: t1 / t2 (M, S)), folds_ (small_state.FamilyFolds: ids (M,), n),
    counts_ {(s, n): anchors}, notes_ [str], oof_ (small_folds.OutOfFold), designs_ ({None | fold: {s: design}}:
    small_design's choice, None = served),
    choices_ {(s, n): small_choice.ScenarioChoice}, board_rules_ {n: {None | fold: the board's rule}},
    guard_ (small_state.GuardDecision: designs {s: design} served, excess {s: mean log(served MAE / random items'
    MAE) before the guard}), served_ (small_state.ServedBoard: fits {s: small_folds.ScenarioFit on every model},
    bank {(clustering, n): {"answers", "values", "eps"}}, priors {n: prior}, the ArtifactModel per n),
    input_digest_ (str: :meth:`digest` of the parameters and inputs it was fitted on).
    """

    def __init__(
        self,
        n_values=(10, 20, 30, 50),
        dims=(1, 2),
        alpha=0.1,
        max_folds=10,
        seed=0,
        device="cpu",
        interval_scale="binomial",
        n_init=10,
        design="stratified",
        guard=True,
        pick_design=True,
        gate=False,
    ):
        self.n_values = n_values
        self.dims = dims
        self.alpha = alpha
        self.max_folds = max_folds
        self.seed = seed
        self.device = device
        self.interval_scale = interval_scale
        self.n_init = n_init
        self.design = design
        self.guard = guard
        self.pick_design = pick_design
        self.gate = gate

    def fit(self, Y, w, scenario_cols, full_scores=None, groups=None, *, items=None, models=None, subscenarios=None):
        """Cross-validate, choose, refit on every model.

        Y : (M, I) 0/1, NaN = not answered; w : (I,) balance weights (rescaled to mean 1 per scenario);
        scenario_cols : {scenario: column indices}; full_scores : (M, S) full-benchmark scores in scenario order
        (NaN = unknown; or a DataFrame with a column per scenario; or None: no T2); groups : (M,) family per model;
        items : (I,) item ids (default "item<j>"); models : (M,) names (tables only); subscenarios : (I,)
        subscenario per item, the strata of the anchors (None: difficulty strata only).
        """
        check_params(self)
        digest = self.digest(
            Y, w, scenario_cols, full_scores, groups, items=items, models=models, subscenarios=subscenarios
        )
        Y, w, cols, T2, groups, items = check_inputs(Y, w, scenario_cols, full_scores, groups, items)
        models = [f"model{i}" for i in range(len(Y))] if models is None else [str(m) for m in models]
        self.notes_ = []
        self.folds_ = FamilyFolds.of(family_folds(groups, self.max_folds, self.seed))  # 1. folds
        check_folds(Y, cols, self.folds_.ids, groups)
        self.counts_ = anchor_counts(cols, self._ns(), self.notes_)
        self.layout_ = BoardLayout(
            list(cols), cols, w, items, models, groups, scenario_subscenarios(subscenarios, cols, Y.shape[1])
        )
        self.truth_ = BoardTruth(scenario_truth(Y, w, cols), T2)
        run = partial(
            out_of_fold,
            Y,
            w,
            cols,
            self.folds_.ids,
            self.counts_,
            tuple(self.dims),
            seed=self.seed,
            device=self.device,
            n_init=self.n_init,
            subscenarios=self.layout_.subscenarios,
            fit_cache={},
        )
        self.oof_, notes = run(design=self.design), list(self.notes_)  # 2. per fold
        self.choices_ = self._choose(Y)  # 3. choice
        self.designs_ = pick_designs(self, Y, run, notes)  # 3a. the anchors' design per scenario
        self.guard_ = apply_guard(self, Y, run, notes)  # 3b. the guard
        self.notes_ += random_notes(self, Y)  # 3d. budgets where the served rule is no better than random items
        self.served_ = refit_served(
            Y,
            self.layout_,
            self.truth_,
            self.counts_,
            self.choices_,
            self.guard_.designs,
            self._ns(),
            seed=self.seed,
            device=self.device,
            n_init=self.n_init,
        )  # 4. refit
        self.input_digest_ = digest
        return self

    def digest(self, Y, w, scenario_cols, full_scores=None, groups=None, *, items=None, models=None, subscenarios=None):
        """sha256 of the parameters and the inputs of ``fit``: a predictor fitted to ``input_digest_`` equal to it would
        be fitted again to the same state (the backtest reuses it)."""
        params = {k: getattr(self, k) for k in PARAMS}
        return input_digest(params, Y, w, scenario_cols, full_scores, groups, items, models, subscenarios)

    def _ns(self) -> list[int]:
        return [int(n) for n in self.n_values]

    def _choose(self, Y) -> dict:
        """{(scenario, n): ScenarioChoice} from the out-of-fold estimates (small_select.choose_board); sets
        ``board_rules_`` and adds the choice's notes."""
        choices, self.board_rules_, notes = choose_board(self, Y)
        self.notes_.extend(notes)
        return choices

    # ------------------------------------------------------------------ tables (small_tables.py)
    def budget_table(self) -> pd.DataFrame:
        """Error and 90 % half-width against n: per (n, scenario) the leave-family-out MAE, mean half-width (each
        fold's interval calibrated on the other folds), coverage, models; accuracy points."""
        return pd.DataFrame(budget_rows(self))

    def oof_intervals(self, n: int) -> pd.DataFrame:
        """The served T1 intervals on the out-of-fold served estimates, each fold's calibrated on the others."""
        return small_tables.oof_intervals(self, int(n))

    def anchor_table(self) -> pd.DataFrame:
        """Served anchors: scenario, n, item, item_index (column of Y), weight."""
        return small_tables.anchor_table(self)

    def cv_table(self) -> pd.DataFrame:
        """Out-of-fold MAEs per (scenario, n, estimator, dim); estimator "served": the choice's leave-one-fold-out."""
        return small_tables.cv_table(self)

    def oof_table(self) -> pd.DataFrame:
        """Out-of-fold estimates per model, scenario, n and estimator (small_tables.oof_table)."""
        return small_tables.oof_table(self)

    # ------------------------------------------------------------------ serving
    def to_artifact(
        self, leaderboard: str, n: int, item_texts: dict | None = None, binarization: dict | None = None
    ) -> dict:
        """The tiny benchmark of budget ``n`` in the layout of :mod:`..tiny_benchmark.format` (JSON-evaluable
        estimators only); save with ``save_artifact(art, folder=...)``, score with ``estimate_from_artifact``."""
        return build_artifact(self, leaderboard, n, item_texts, binarization)

    def artifact_model(self, n: int) -> ArtifactModel:
        """The ArtifactModel of budget ``n`` that :meth:`predict` runs (built from :meth:`to_artifact`'s dict)."""
        if not hasattr(self, "served_"):
            raise ValueError("SmallBoardPredictor is not fitted")
        cache = self.served_.models
        if int(n) not in cache:  # the bank from the dict's learned arrays (attach_trees on a fresh export)
            art = self.to_artifact("served", int(n))
            cache[int(n)] = attach_trees(art, ArtifactModel(art))
        return cache[int(n)]

    def predict(self, Y, n: int | None = None, models=None) -> pd.DataFrame:
        """Served estimates from anchor answers, through the artifact (so they equal the exported file's).

        Y : (M, I) full-width answers (only the anchor columns of n are read) or {scenario: (M, k_s)} answers to
        the anchors of n in :meth:`anchor_table` order; n : budget (default: every n_values entry, Y full-width
        only). Returns one row per model x scenario (x n): PRED_COLS.
        """
        ns = [int(x) for x in self.n_values] if n is None else [int(n)]
        if isinstance(Y, dict) and len(ns) != 1:
            raise ValueError("answers given per scenario belong to one anchor budget: pass n")
        out = []
        for nn in ns:
            am = self.artifact_model(nn)
            if isinstance(Y, dict):
                Ya = {s: np.atleast_2d(np.asarray(Y[s], dtype=float)) for s in self.layout_.scenarios}
            else:
                Yf = np.atleast_2d(np.asarray(Y, dtype=float))
                Ya = {s: Yf[:, am.anchor_sets[s].items] for s in self.layout_.scenarios}
            M = len(next(iter(Ya.values())))
            names = list(models) if models is not None else list(range(M))
            out += _served_frames(am, {s: self.choices_[(s, nn)] for s in self.layout_.scenarios}, Ya, names, nn)
        return pd.concat(out, ignore_index=True)[PRED_COLS]


def _served_frames(am: ArtifactModel, choices: dict, Ya: dict, names: list, n: int) -> list[pd.DataFrame]:
    """One budget's served rows (PRED_COLS), a frame per scenario: ``am.evaluate`` on the anchor answers ``Ya``
    ({scenario: (M, k_s)}), read at the T1 and T2 estimators ``choices`` ({scenario: ScenarioChoice}) serve, with
    the served T1 interval."""
    res, out = am.evaluate(Ya), []
    for s, ch in choices.items():
        r1, r2 = res[(s, ch.t1)], res[(s, ch.t2)]
        lo, up = am.steps["served"].predict(n, s, "tinybench", r1["estimate"], (r1["lower"], r1["upper"]))
        out.append(
            pd.DataFrame(
                {
                    "model": names,
                    "scenario": s,
                    "n": n,
                    "estimator": ch.t1,
                    "estimator_t2": ch.t2,
                    "answered": np.isfinite(Ya[s]).sum(1),
                    "estimate": r1["estimate"],
                    "lower": lo,
                    "upper": up,
                    **{k: r2[k] for k in ("estimate_t2", "lower_t2", "upper_t2")},
                }
            )
        )
    return out
