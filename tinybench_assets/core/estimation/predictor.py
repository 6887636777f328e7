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
                   answers, of their accuracy on the unseen items (:mod:`.bank`)
fill               observed anchors + the ridge fill-in: the new model's answers at the scenario's anchors
                   regressed on the fit models' (shrunk toward the board mean), which predicts its unseen
                   items; unlike the bank's average it can leave the fit models' range (:mod:`.fill`)
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
taken out of selection, across folds of the validation models (:mod:`.served_intervals`).

The predictor is a chain of named steps (:attr:`AnchorPredictor.named_steps`), each a small object of
:mod:`tinybench_assets.core.estimation` that owns its fitted state: ``fit`` is a loop over them, every step reading
the training data and the steps fitted before it; ``estimate`` walks the same steps
(:mod:`~tinybench_assets.core.estimation.chain`).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..parallel import resolve_jobs, worker_pool
from ..responses import ResponseMatrix
from . import estimators as est
from .anchor_sets import AnchorSet, AnchorSets
from .bank import AnswerBank
from .calibrators import Calibrators
from .chain import ValidationOutputs
from .frontier import Frontier
from .frontier_probe import FrontierProbe
from .inference import estimate_table
from .irt_fits import IRTFits
from .lambdas import Lambdas
from .learned import LearnedRegressors
from .names import JOINT, LEARNED, PER_SCENARIO, SELECTED, STACKS
from .selection import Selector
from .served_intervals import ServedIntervals
from .stacks import Stacks
from .training import FRONTIER_SHARE, MIN_VALIDATION_MODELS, Layout, TrainingSplit, full_scores_wide, split_models

__all__ = [
    "AnchorPredictor",
    "AnchorSet",
    "full_scores_wide",
    "split_models",
    "MIN_VALIDATION_MODELS",
    "PER_SCENARIO",
    "JOINT",
    "STACKS",
    "LEARNED",
    "SELECTED",
]

REBUILD = "rebuild it by materializing anchor_sets (or `tinybench run-all`)"


class AnchorPredictor:
    """Anchors + IRT + learned estimators + calibration, fitted on training models.

    Parameters
    ----------
    n_values : anchor budgets to prepare. A budget is the anchor count of every scenario unless
        ``scenario_n`` or the large-pool rule gives a scenario its own count (``AnchorSets.n_for``);
        results stay keyed by the budget, so the joint estimators combine one budget across scenarios.
    scenario_n : {scenario: [count per budget, aligned with n_values]} or {scenario: {budget: count}}:
        explicit per-scenario anchor counts.
    large_pool_items, large_pool_scale : a scenario without an explicit count whose item pool has at
        least ``large_pool_items`` items (default 1,000) gets ``round(budget * large_pool_scale)``
        anchors (default scale 100/30: budget 30 -> 100 anchors, as tinyBenchmarks uses on large pools).
    clusterings : anchor clusterings to prepare ("correctness", "irt", "forward").
    dim_candidates, joint_dim_candidates : D tried by :func:`select_dimension` per scenario / jointly.
    val_fraction : share of training models held out as validation models.
    n_init : KMeans restarts. alpha : interval miscoverage (0.1 -> 90% intervals).
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
    frontier_share : the strongest share of the training models, which the frontier probe refits without, and the
        top share of positions the rule for a model beyond the board serves (:mod:`.frontier_probe`; 0 = none).

    Fitted attributes: ``steps_`` ({name: fitted step}, in fit order; :attr:`named_steps`), ``timings_`` (seconds
    per step and in total) and ``n_jobs_`` (worker processes used).
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
        frontier_share: float = FRONTIER_SHARE,
    ):
        self.n_values = tuple(int(n) for n in n_values)
        self.scenario_n = _scenario_counts(scenario_n, self.n_values)
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
        self.frontier_share = float(frontier_share)

    def make_steps(self) -> dict:
        """The unfitted steps, in fit order, from the parameters."""
        return {
            "split": TrainingSplit(self.val_fraction, self.seed, self.max_fit_models, self.frontier_share),
            "irt": IRTFits(self.dim_candidates, self.joint_dim_candidates, self.seed, self.device, self.irt_options),
            "anchors": AnchorSets(
                self.n_values,
                self.clusterings,
                self.scenario_n,
                self.large_pool_items,
                self.large_pool_scale,
                self.n_init,
                self.seed,
                linear=self.learned,
            ),
            "learned": LearnedRegressors(self.learned, self.seed, self.gbm_params),
            "bank": AnswerBank(self.learned),
            "validation": ValidationOutputs(self.seed),
            "lambdas": Lambdas(self.lambda_grid),
            "stacks": Stacks(self.seed),
            "calibrators": Calibrators(self.alpha, self.interval_scale, self.seed),
            "probe": FrontierProbe(self.frontier_share),
            "selector": Selector(),
            "served": ServedIntervals(self.alpha, self.interval_scale, self.seed),
            "frontier": Frontier(self.alpha, self.seed, self.frontier_share),
        }

    def fit(
        self, matrix: ResponseMatrix, full_scores: pd.DataFrame | None = None, train=None, groups=None, progress=None
    ) -> "AnchorPredictor":
        """Fit every step on the training models.

        Parameters
        ----------
        matrix : ResponseMatrix with all scenarios (0/1 scores, NaN where a model lacks a scenario).
        full_scores : long (model, scenario, full_benchmark_score) or wide (models x scenarios) table of
            real full-benchmark scores; optional (T2 columns are NaN without it).
        train : row indices (or bool mask) of the training models; default all rows.
        groups : a family key per row of ``matrix`` (:func:`~tinybench_assets.core.estimation.groups.model_groups`): the
            validation models are then whole families held out of the fit models, so that lambdas, the estimator
            choice and the conformal intervals are tuned for models of families the fit has not seen (as a
            grouped test split and a new model family are). None: a random share of the training models.
        progress : optional callable(step name, seconds, steps done, steps in all), called as each step's fit ends.
        """
        t0 = time.perf_counter()
        steps = self.make_steps()
        split = steps.pop("split")
        data = split.fit(matrix, full_scores, train, groups)  # the fit and validation models' answers and truth
        self.steps_, self.timings_ = {"split": split}, {"split": time.perf_counter() - t0}
        self.n_jobs_ = resolve_jobs(self.n_jobs, len(data.layout.scenarios) + 1)
        _fit_chain(steps, data, self.steps_, self.timings_, self.n_jobs_, progress)
        self.timings_["total"] = time.perf_counter() - t0
        return self

    # ================================================================== the fitted predictor
    @property
    def named_steps(self) -> dict:
        """{name: fitted step}: split, irt, anchors, learned, bank, validation, lambdas, stacks, calibrators, probe,
        selector, served, frontier."""
        if "steps_" not in vars(self):
            raise ValueError(
                "AnchorPredictor is not fitted, or was saved by an older tinybench without its steps: " + REBUILD
            )
        return self.steps_

    @property
    def layout(self) -> Layout:
        """The fitted matrix's item layout (items, scenarios, balance weights, each scenario's columns)."""
        return self.named_steps["split"].layout_

    def pool_accuracy(self, Y) -> pd.DataFrame:
        """T1 truth of rows Y (M, I_all): :meth:`Layout.pool_accuracy`."""
        return self.layout.pool_accuracy(Y)

    @property
    def validation(self) -> pd.DataFrame:
        """Validation MAE per (scenario, clustering, n, estimator), the random baseline included."""
        return self.named_steps["selector"].validation_

    @property
    def selection(self) -> pd.DataFrame:
        """One row per (n, scenario, selector) with the chosen clustering and estimator for T1 and T2."""
        return self.named_steps["selector"].table()

    @property
    def lambdas(self) -> pd.DataFrame:
        """gp-IRT lambdas: one row per (clustering, n, scenario, fit) with tutorial and validation lambda, b, v."""
        return self.named_steps["lambdas"].table(self.named_steps["irt"])

    def anchor_table(self) -> pd.DataFrame:
        """All anchors: one row per (clustering, n, scenario, anchor) with item id and weight."""
        return self.named_steps["anchors"].table(self.layout.items)

    def anchor_items(self, clustering: str, n: int) -> dict:
        """{scenario: list of item ids} a new model must answer for (clustering, n)."""
        sets = self.named_steps["anchors"].of(clustering, n)
        return {s: [self.layout.items[j] for j in A.items] for s, A in sets.items()}

    def estimate(
        self, Y, models=None, *, n_values=None, include_random: bool = False, random_seed: int = 12345
    ) -> pd.DataFrame:
        """Estimates for new models.

        Parameters
        ----------
        Y : ndarray (M, I_all) aligned with the fitted matrix's items (or a ResponseMatrix with the same
            items). Only the anchor cells of each (clustering, n) are read for the anchor-based estimators;
            everything else may be NaN.
        models : names of the M rows (default 0..M-1).
        include_random : also score the random-sampling baseline (reads n random items per model: only
            meaningful when Y holds the models' full responses, as in a backtest).

        Returns
        -------
        DataFrame, one row per model x scenario x (clustering, estimator) x n with columns
        model, scenario, clustering, estimator, n, estimate, lower, upper, estimate_t2, lower_t2,
        upper_t2, source (the underlying clustering/estimator for the selected rows).
        """
        lay = self.layout
        Y, models = _answer_rows(Y, models, lay.items)
        ns = self.n_values if n_values is None else n_values
        return estimate_table(self.named_steps, lay, Y, models, ns, include_random, random_seed)


def _scenario_counts(scenario_n: dict | None, n_values: tuple) -> dict:
    """``scenario_n`` as AnchorPredictor keeps it: {str scenario: [count per budget] or {budget: count}}; a list
    must hold one count per entry of ``n_values`` (ValueError)."""
    out = {str(k): (dict(v) if isinstance(v, dict) else list(v)) for k, v in (scenario_n or {}).items()}
    for k, v in out.items():
        if isinstance(v, list) and len(v) != len(n_values):
            raise ValueError(f"scenario_n[{k!r}] has {len(v)} counts for {len(n_values)} budgets {n_values}")
    return out


def _fit_chain(steps: dict, data, fitted: dict, timings: dict, n_jobs: int, progress=None) -> None:
    """Fit ``steps`` ({name: unfitted step}) in order on ``data`` (a FitData) inside a pool of ``n_jobs`` worker
    processes, where the IRT fits and the learned regressors run. Each step reads the data and the steps fitted
    before it (``fitted``) and sets only its own state; it then joins ``fitted``, and its seconds ``timings``;
    ``progress`` (see :meth:`AnchorPredictor.fit`) hears of it."""
    total = len(fitted) + len(steps)
    for k, name in enumerate(fitted, start=1):  # the steps fitted before the chain (the split)
        if progress is not None:
            progress(name, timings[name], k, total)
    with worker_pool(n_jobs) as pool:
        data.pool = pool
        for k, (name, step) in enumerate(steps.items(), start=len(fitted) + 1):
            ts = time.perf_counter()
            step.fit(data, fitted)
            fitted[name] = step
            timings[name] = time.perf_counter() - ts
            if progress is not None:
                progress(name, timings[name], k, total)


def _answer_rows(Y, models, items: list) -> tuple[np.ndarray, np.ndarray]:
    """(answers (M, I_all) as floats, names of the M rows) from an array (names default 0..M-1) or a ResponseMatrix
    with the fitted ``items`` (names default its models)."""
    if isinstance(Y, ResponseMatrix):
        if list(Y.items) != items:
            raise ValueError("ResponseMatrix items differ from the fitted items")
        models = Y.models if models is None else models
        Y = Y.scores
    Y = np.asarray(Y, dtype=float)
    return Y, (np.arange(Y.shape[0]) if models is None else np.asarray(models, dtype=object))
