"""The anchor predictor's parts: one module per job, each a mixin that :class:`~tinybench_assets.core.predictor.AnchorPredictor` inherits.

The predictor is one object whose fitted state (attributes ending in ``_``) is what ``predictor.pkl`` stores, so
the parts are mixins sharing that state rather than separate estimators: each module's docstring says which
fitted attributes it reads and sets. Import the public names from :mod:`tinybench_assets.core.predictor`.

=================  ====================================================================================
names              estimator names: ``PER_SCENARIO``, ``JOINT``, ``STACKS``, ``LEARNED``, ``SELECTED``
training           training data: ``full_scores_wide``, ``split_models``, the fit / validation split, T1 truth
irt_fits           per-scenario and joint 2PL fits with D chosen on fit models; the tutorial's b and v
anchor_sets        ``AnchorSet``, anchor counts per scenario, KMeans anchor selection, anchor tables
base_estimates     anchor / irt / p-IRT estimates and the learned regressors' features; the random baseline
learned            the gradient-boosted estimators (gbm, gbm_joint): fit and raw outputs
bank               the answer-bank estimator (bank_joint): the fit models' answers as a prior, eps on validation
lambdas            gp-IRT lambdas (tutorial formula and validation grid) and the gp-IRT estimates
stacks             convex stacks of estimators fitted on validation models
intervals          isotonic full-score calibration and conformal intervals
selection          per-scenario estimator choice (tinybench, tinybench_own)
inference          ``estimate``: every estimator for new models that answered the anchors
=================  ====================================================================================
"""
