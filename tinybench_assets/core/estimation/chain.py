"""The path every model's anchor answers take through the fitted steps, from answers to calibrated estimates; the
same functions serve the predictor (on validation models while it fits, on new models after) and the tiny-benchmark
artifact (:class:`~tinybench_assets.core.tiny_benchmark.model.ArtifactModel`).

``steps`` is a mapping of step name to fitted step: "irt" (:class:`.irt_fits.IRTFits`), "anchors"
(:class:`.anchor_sets.AnchorSets`), "learned" (:class:`.learned.LearnedRegressors`), "bank" (:class:`.bank.AnswerBank`),
"lambdas" (:class:`.lambdas.Lambdas`), optionally "shrinkage" (a small board's prior, anything with
``transform(raw, full, scenarios)``), "stacks" (:class:`.stacks.Stacks`) and "calibrators" (:class:`.calibrators.Calibrators`).
"""

from __future__ import annotations

from .base_estimates import features, random_baseline


def raw_estimates(Y, lay, steps, c, n) -> tuple[dict, dict]:
    """The base, learned and bank estimates of rows Y (M, I_all) from the anchors of (c, n):
    ({(scenario, estimator): (M,)}, direct full-score inputs {(scenario, estimator): (M,)})."""
    base, feats, has = features(Y, lay, steps["irt"], steps["anchors"], c, n)
    t2raw = steps["learned"].predict(Y, lay, steps["anchors"], c, n, base, feats, has)
    base.update(steps["bank"].predict(Y, lay, steps["anchors"], c, n))  # bank_joint (and a small board's fill)
    return base, t2raw


def estimates(Y, lay, steps, c, n) -> tuple[dict, dict]:
    """Every estimator of (c, n) for rows Y: the raw estimates, the gp-IRT variants, the shrunk anchor means (with a
    shrinkage step) and the stacks; (estimates, full-score inputs) as in :func:`raw_estimates`."""
    raw, t2raw = raw_estimates(Y, lay, steps, c, n)
    full = steps["lambdas"].transform(raw, c, n)
    if "shrinkage" in steps:
        steps["shrinkage"].transform(raw, full, lay.scenarios)
    steps["stacks"].transform(full, t2raw, c, n)
    return full, t2raw


def calibrated(full, t2raw, steps, c, n) -> dict:
    """{(scenario, estimator): {estimate, lower, upper, estimate_t2, lower_t2, upper_t2: (M,)}} from :func:`estimates`."""
    return {(s, e): steps["calibrators"].predict(x, t2raw.get((s, e), x), c, n, s, e) for (s, e), x in full.items()}


class ValidationOutputs:
    """Step 6: the validation models pushed through the path a new model takes (only their anchor answers are read,
    through the steps fitted so far), and the random baseline on their full answers. It keeps no state: its output is
    ``data.val`` ({(clustering, n): (estimates, full-score inputs)}, then {("random", n): ...}), which the lambdas, the
    stacks and the calibrators fit on.

    Parameter: ``seed`` (the random baseline's draws: ``seed + 7919 n``).
    """

    def __init__(self, seed: int = 0):
        self.seed = seed

    def fit(self, data, done) -> None:
        anchors = done["anchors"]
        for c in anchors.clusterings:
            for n in anchors.n_values:
                data.val[(c, n)] = raw_estimates(data.Yv, data.layout, done, c, n)
        for n in anchors.n_values:
            data.val[("random", n)] = (
                {
                    (s, "random"): random_baseline(data.Yv, data.layout, anchors, s, n, self.seed + 7919 * n)
                    for s in data.layout.scenarios
                },
                {},
            )
