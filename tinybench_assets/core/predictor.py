"""Fit-on-training-models, estimate-for-new-models pipeline tying IRT, anchors, estimators and calibration.

:class:`AnchorPredictor` is what a Dagster asset fits once on the leaderboard's training models and
then applies to any model that answered only the anchors. Protocol (every choice is made on
TRAINING models only):

1. the training models are split (seeded) into *fit* models (IRT fits, choice of D, anchor
   selection, learned regressors) and *validation* models (gp-IRT lambda, the tutorial's bias b,
   isotonic full-score calibration, conformal intervals, choice of clustering and estimator);
2. per scenario and jointly over all scenarios, D is chosen with :func:`irt.select_dimension` and a
   2PL is fitted with :func:`irt.fit_irt`;
3. for every clustering ("correctness", "irt": KMeans; "forward": forward stepwise selection of the items
   that best predict the pool accuracy linearly) and every budget n, anchors are selected per scenario
   (``n_for(scenario, n)`` of them: n, an explicit per-scenario count, or more on large pools);
4. validation models are pushed through exactly the path a new model takes (only their anchor
   answers are read), and everything calibrated on validation is fitted on those outputs.

Estimators (column ``estimator``; ``clustering`` says which anchor set they read):

=================  ===================================================================================
random             n uniformly random items per model, balance-weighted mean (no anchors)
anchor             sum of anchor weight * correctness
irt / irt_joint    mean of w * P over all items; theta by MAP on the scenario's anchors (per-scenario
                   fit) or on all scenarios' anchors at once (joint fit)
pirt / pirt_joint  tutorial p-IRT, lambda = n / N
gpirt / _joint     tutorial gp-IRT, lambda = b^2 / (v / (4 n) + b^2)
gpirt_val / _joint gp-IRT with lambda chosen on a grid by validation MAE
gbm / gbm_joint    observed anchors + a gradient-boosted regressor (trained on fit models) predicting the
                   balance-weighted accuracy of the unseen items from the anchor answers and theta;
                   ``gbm`` reads the scenario's anchors only, ``gbm_joint`` all scenarios' anchors
bank_joint         observed anchors + the posterior mean, over the fit models given all scenarios' anchor
                   answers, of their accuracy on the unseen items (:mod:`.estimation.bank`)
stack / stack_own  convex combination (weights >= 0, sum 1) of the estimators in ``STACKS`` fitted on
                   validation models (out-of-fold for its own validation error); stack_own combines
                   only estimators that read the scenario's own anchors
tinybench          per scenario, the estimator with the lowest validation MAE; one clustering for all
                   scenarios (chosen on validation) so a model answers n items per scenario
tinybench_own      like tinybench but among estimators that read only the scenario's own anchors
=================  ===================================================================================

Every row also carries ``estimate_t2``: the full-benchmark score, an isotonic map fitted on
validation models from the estimate (for gbm / gbm_joint: from a regressor trained on fit models
to predict the full score directly) to their real full score; and conformal intervals for both. The
served estimators' (tinybench, tinybench_own) T1 intervals allow for their selection: their residuals are
taken out of selection, across folds of the validation models (:mod:`.estimation.served_intervals`).

The parts live in :mod:`tinybench_assets.core.estimation` (one module per job, each a mixin sharing the fitted
state); this module composes them and stays the public import path (and the pickled class's path).
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from . import estimators as est
from .estimation.anchor_sets import AnchorSet, AnchorSetMixin
from .estimation.bank import BankMixin
from .estimation.base_estimates import BaseEstimatesMixin
from .estimation.inference import InferenceMixin
from .estimation.intervals import CalibrationMixin
from .estimation.irt_fits import IRTFitMixin
from .estimation.lambdas import LambdaMixin
from .estimation.learned import LearnedMixin, fit_learned
from .estimation.names import JOINT, LEARNED, PER_SCENARIO, SELECTED, STACKS
from .estimation.selection import SelectionMixin
from .estimation.served_intervals import ServedIntervalMixin
from .estimation.stacks import StackMixin
from .estimation.training import MIN_VALIDATION_MODELS, TrainingSplitMixin, full_scores_wide, split_models
from .parallel import resolve_jobs, run_tasks, worker_pool
from .responses import ResponseMatrix

__all__ = ["AnchorPredictor", "AnchorSet", "full_scores_wide", "split_models", "MIN_VALIDATION_MODELS",
           "PER_SCENARIO", "JOINT", "STACKS", "LEARNED", "SELECTED"]


class AnchorPredictor(TrainingSplitMixin, IRTFitMixin, AnchorSetMixin, BaseEstimatesMixin, LearnedMixin, BankMixin,
                      LambdaMixin, StackMixin, CalibrationMixin, SelectionMixin, ServedIntervalMixin, InferenceMixin):
    """Anchors + IRT + learned estimators + calibration, fitted on training models.

    Parameters
    ----------
    n_values : anchor budgets to prepare. A budget is the anchor count of every scenario unless
        ``scenario_n`` or the large-pool rule gives a scenario its own count (see :meth:`n_for`);
        results stay keyed by the budget, so the joint estimators combine one budget across scenarios.
    scenario_n : {scenario: [count per budget, aligned with n_values]} or {scenario: {budget: count}}:
        explicit per-scenario anchor counts.
    large_pool_items, large_pool_scale : a scenario without an explicit count whose item pool has at
        least ``large_pool_items`` items (default 1,000) gets ``round(budget * large_pool_scale)``
        anchors (default scale 100/30: budget 30 -> 100 anchors, as tinyBenchmarks uses on large pools).
    clusterings : anchor clusterings to prepare ("correctness", "irt", "forward").
    dim_candidates, joint_dim_candidates : D tried by :func:`select_dimension` per scenario / jointly.
    val_fraction : share of training models held out as validation models.
    n_init : KMeans restarts.
    alpha : interval miscoverage (0.1 -> 90% intervals).
    interval_scale : "binomial" or "none" (see :class:`ConformalInterval`).
    learned : fit the learned estimators (gbm, gbm_joint: gradient-boosted; bank_joint: the answer bank).
    max_fit_models : subsample the fit models to at most this many (speed); None = all.
    gbm_params : overrides for ``HistGradientBoostingRegressor``.
    lambda_grid : grid for the validation-chosen gp-IRT lambda.
    seed : seeds every split, fit, KMeans and regressor.
    device : torch device for the IRT engine.
    irt_options : extra ``fit_irt`` options.
    n_jobs : worker processes (one thread each) for the independent IRT fits and learned regressors; 1 = all in
        this process (the backtest's split workers), 0 = the CPU cores. Same seeds, same fits either way.

    The methods come from the mixins of :mod:`tinybench_assets.core.estimation` (each module's docstring lists the
    fitted attributes it reads and sets); this class holds the parameters and the order of the fit.
    """

    def __init__(
        self,
        n_values=(10, 20, 30, 50),
        clusterings=("correctness", "forward"),
        scenario_n: dict | None = None,
        large_pool_items: int = 1000,
        large_pool_scale: float = 100 / 30,
        dim_candidates=(1, 2, 5, 10),
        joint_dim_candidates=(2, 5, 10, 15),
        val_fraction: float = 0.25,
        n_init: int = 10,
        alpha: float = 0.1,
        interval_scale: str = "binomial",
        learned: bool = True,
        max_fit_models: int | None = None,
        gbm_params: dict | None = None,
        lambda_grid=est.LAMBDA_GRID,
        seed: int = 0,
        device: str = "cpu",
        irt_options: dict | None = None,
        n_jobs: int = 1,
    ):
        self.n_values = tuple(int(n) for n in n_values)
        self.scenario_n = {str(k): (dict(v) if isinstance(v, dict) else list(v)) for k, v in (scenario_n or {}).items()}
        for k, v in self.scenario_n.items():
            if isinstance(v, list) and len(v) != len(self.n_values):
                raise ValueError(f"scenario_n[{k!r}] has {len(v)} counts for {len(self.n_values)} budgets {self.n_values}")
        self.large_pool_items = int(large_pool_items)
        self.large_pool_scale = float(large_pool_scale)
        self.clusterings = tuple(clusterings)
        self.dim_candidates = tuple(dim_candidates)
        self.joint_dim_candidates = tuple(joint_dim_candidates)
        self.val_fraction = val_fraction
        self.n_init = n_init
        self.alpha = alpha
        self.interval_scale = interval_scale
        self.learned = learned
        self.max_fit_models = max_fit_models
        self.gbm_params = dict(gbm_params or {})
        self.lambda_grid = np.asarray(lambda_grid, dtype=float)
        self.seed = int(seed)
        self.device = device
        self.irt_options = dict(irt_options or {})
        self.n_jobs = int(n_jobs)

    # ================================================================== fitting
    def fit(self, matrix: ResponseMatrix, full_scores: pd.DataFrame | None = None, train=None,
            groups=None) -> "AnchorPredictor":
        """Fit everything on the training models.

        Parameters
        ----------
        matrix : ResponseMatrix with all scenarios (0/1 scores, NaN where a model lacks a scenario).
        full_scores : long (model, scenario, full_benchmark_score) or wide (models x scenarios) table of
            real full-benchmark scores; optional (T2 columns are NaN without it).
        train : row indices (or bool mask) of the training models; default all rows.
        groups : a family key per row of ``matrix`` (:func:`~tinybench_assets.core.groups.model_groups`): the
            validation models are then whole families held out of the fit models, so that lambdas, the estimator
            choice and the conformal intervals are tuned for models of families the fit has not seen (as a
            grouped test split and a new model family are). None: a random share of the training models.
        """
        t0 = time.perf_counter()
        self.timings_ = {}
        Yf, Yv, T1v, T2f, T2v = self._split_training(matrix, full_scores, train, groups)
        n_jobs = resolve_jobs(self.n_jobs, len(self.scenarios_) + 1)
        with worker_pool(n_jobs) as pool:
            # ---- IRT: per scenario and joint, D chosen on fit models
            self._fit_irt_models(Yf, pool)
            self.timings_["irt"] = time.perf_counter() - t0

            # ---- the tutorial's b (IRT validation bias) and v (item variance) per scenario and fit
            self._fit_bias_variance(Yf, Yv)

            # ---- anchors and learned regressors per (clustering, n): the regressors are independent tasks
            self.anchors_, self.gbm_, self.lambdas_, self.stacks_, self.bank_ = {}, {}, {}, {}, {}
            self.t2_cal_, self.int_t1_, self.int_t2_ = {}, {}, {}
            cn = [(c, n) for c in self.clusterings for n in self.n_values]
            ta = time.perf_counter()
            for c, n in cn:
                for s in self.scenarios_:
                    self.anchors_[(c, n, s)] = self._select(Yf, c, n, s)
            tb = time.perf_counter()
            if self.learned:
                # the largest budgets (most features) first; stored in (clustering, n) order
                for fitted in run_tasks(fit_learned, [(self, Yf, T2f, c, n) for c, n in cn], pool,
                                        first=lambda i: -cn[i][1]):
                    self.gbm_.update(fitted)
            self.timings_.update(anchors=tb - ta, gbm=time.perf_counter() - tb)
        self.n_jobs_ = n_jobs

        # ---- validation outputs, lambdas, stacks and calibration per (clustering, n)
        val_rows, val_t1 = [], {}
        self.timings_["bank"] = 0.0
        for c, n in cn:
            tk = time.perf_counter()
            self._fit_bank(Yf, Yv, T1v, c, n)  # the answer bank's eps, chosen on validation models
            self.timings_["bank"] += time.perf_counter() - tk
            raw, t2raw = self._raw(Yv, c, n)
            self._fit_lambdas(raw, T1v, c, n)
            full = self._compose(raw, c, n)
            self._fit_stacks(full, t2raw, T1v, T2v, c, n)  # adds out-of-fold stack outputs
            val_rows += self._calibrate(full, t2raw, T1v, T2v, c, n)
            val_t1.update({(c, n, s, e): x for (s, e), x in full.items()})
        # random baseline, calibrated the same way
        for n in self.n_values:
            full = {(s, "random"): self._random(Yv, s, n, self.seed + 7919 * n) for s in self.scenarios_}
            val_rows += self._calibrate(full, {}, T1v, T2v, "random", n)
        self.validation_ = pd.DataFrame(val_rows)
        self._select_estimators()
        self._fit_served_intervals(val_t1, T1v)  # the served estimators' intervals, allowing for their selection
        self.timings_["total"] = time.perf_counter() - t0
        return self
