"""Estimator names of :class:`~.predictor.AnchorPredictor` (see its module docstring), and the budget headline figures
are quoted at (:func:`reference_n`)."""

from __future__ import annotations

PER_SCENARIO = ("anchor", "irt", "pirt", "gpirt", "gpirt_val", "gbm", "fill", "stack_own")
JOINT = ("irt_joint", "pirt_joint", "gpirt_joint", "gpirt_val_joint", "gbm_joint", "bank_joint", "stack")
# members of the convex stacks (fitted on validation models); missing members are skipped
STACKS = {
    "stack": ("gbm_joint", "gbm", "bank_joint", "fill", "pirt_joint", "gpirt_val_joint", "pirt", "anchor"),
    "stack_own": ("gbm", "fill", "pirt", "gpirt_val", "anchor"),
}
# members of the small board's median (small_rules.MEDIAN): the artifact's stack of that name takes their median
MEDIANS = {"median": ("pirt", "gpirt", "gpirt_val", "irt", "shrunk", "shrunk_joint", "fill")}
LEARNED = ("gbm", "gbm_joint", "bank_joint", "fill")
SELECTED = ("tinybench", "tinybench_own")


def reference_n(n_values) -> int:
    """The anchor budget headline figures are quoted at: 30 when it was run (the issue's bar), else the largest."""
    ns = [int(n) for n in n_values]
    return 30 if 30 in ns else max(ns)
