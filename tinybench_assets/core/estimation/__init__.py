"""The anchor predictor's steps: one module per job, each a small object that owns its fitted state (attributes
ending in ``_``). :class:`~tinybench_assets.core.predictor.AnchorPredictor` holds them as named steps and fits them in
this order, each reading the training data (:class:`.training.FitData`) and the steps fitted before it; the
tiny-benchmark artifact (:class:`~tinybench_assets.core.tiny_benchmark.model.ArtifactModel`) rebuilds the same steps
from its file. Import the public names from :mod:`tinybench_assets.core.predictor`.

=================  ====================================================================================
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
inference          the estimate table for new models
table              the stored estimates table: ``ESTIMATE_COLUMNS`` and ``estimate_errors``
=================  ====================================================================================
"""
