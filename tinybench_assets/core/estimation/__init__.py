"""Estimation: everything that turns a model's answers into estimates of its scores, in one package.

Start at :mod:`.predictor`: :class:`~tinybench_assets.core.estimation.predictor.AnchorPredictor` holds the steps
below as named steps and fits them in this order, each a small object that owns its fitted state (attributes ending
in ``_``), reading the training data (:class:`.training.FitData`) and the steps fitted before it; ``estimate`` walks
the same steps (:mod:`.chain`, :mod:`.inference`). The tiny-benchmark artifact
(:class:`~tinybench_assets.core.tiny_benchmark.model.ArtifactModel`) rebuilds the same steps from its file. Import the
predictor's public names from :mod:`tinybench_assets.core.estimation.predictor`.

=================  ====================================================================================
predictor          ``AnchorPredictor``: the parameters, ``fit`` (the steps below, in order), ``estimate``
names              estimator names: ``PER_SCENARIO``, ``JOINT``, ``STACKS``, ``LEARNED``, ``SELECTED``
training           ``Layout`` (the item layout), ``FitData``, ``TrainingSplit`` (step 1: fit / validation models)
irt_fits           ``IRTFits`` (step 2): per-scenario and joint 2PL fits with D chosen on fit models; b and v
anchor_sets        ``AnchorSet``, ``AnchorSets`` (step 3): anchor counts, KMeans / forward anchors, anchor tables
learned            ``LearnedRegressors`` (step 4): the gradient-boosted estimators (gbm, gbm_joint)
bank               ``AnswerBank`` (step 5): the answer-bank estimator (bank_joint), eps on validation
chain              ``ValidationOutputs`` (step 6) and the path answers take through the fitted steps
base_estimates     anchor / irt / p-IRT estimates and the regressors' features; the random baseline
lambdas            ``Lambdas`` (step 7): gp-IRT lambdas (tutorial formula and validation grid)
stacks             ``Stacks`` (step 8): convex stacks of estimators fitted on validation models
calibrators        ``Calibrators`` (step 9): isotonic full-score maps and conformal intervals
selection          ``Selector`` (step 10): per-scenario estimator choice (tinybench, tinybench_own)
served_intervals   ``ServedIntervals`` (step 11): the served estimators' selection-aware intervals
frontier           ``Frontier`` (step 12): the rule for a model beyond the board; the backtest's frontier split
inference          the estimate table for new models
table              the stored estimates table: ``ESTIMATE_COLUMNS`` and ``estimate_errors``

estimators         one scenario's accuracy estimators (random, anchor, IRT, p-IRT, gp-IRT), convex stacks
anchors            anchor selection: ``AnchorSelector`` / ``select_anchors`` (KMeans), ``forward_select``
calibration        ``IsotonicCalibrator``, ``ConformalInterval``, ``conformal_quantile``, ``coverage``
splits             seeded, order-free model splits (``split_models``, ``model_unit``; routing and MAGI use it too)
groups             model families (``model_groups``), ``grouped_test_mask``, the benchmark's ``lockbox_mask``

backtest           ``split_plan``, ``run_backtest`` (a fresh predictor per split), ``summarize``
backtest_adaptive  ``adaptive_rows``: the backtest's adaptive column
adaptive           IRT-adaptive testing: ``simulate``, ``AdaptiveEstimator``, ``AdaptiveSession``
adaptive_bank      bank-adaptive testing: ``simulate_bank``, ``BankAdaptive``, ``tune_bank``, ``BankSession``

small_*            ``SmallBoardPredictor`` (small_board) for 10-49 models: folds, choice, guard, intervals, export
strata, shrinkage  the small boards' nested stratified anchor order and shrinkage prior
=================  ====================================================================================
"""
