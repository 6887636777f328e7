"""Anchor counts per scenario: explicit overrides, the large-pool rule, and every count-dependent formula."""

import numpy as np
import pytest
import torch

from tinybench_assets.core.estimation import estimators as est
from tinybench_assets.core.estimation.predictor import AnchorPredictor, split_models
from tinybench_assets_tests.test_core.test_backtest import _world

torch.set_num_threads(1)
SMALL = dict(
    dim_candidates=(1,), joint_dim_candidates=(1,), n_init=1, clusterings=("correctness", "irt"), learned=False
)


@pytest.fixture(scope="module")
def fitted():
    rm, full = _world(n_models=240, items=(20, 40), seed=3)
    train, test = split_models(rm.shape[0], 0.2, seed=0)
    # "a" (20 items): explicit counts; "b" (40 items) counts as a large pool here (>= 30 items)
    pred = AnchorPredictor(n_values=(5, 10), scenario_n={"a": [4, 8]}, large_pool_items=30, **SMALL).fit(
        rm, full, train
    )
    return rm, test, pred


def test_counts_follow_override_and_large_pool_rule(fitted):
    rm, test, pred = fitted
    anchors, irt = pred.named_steps["anchors"], pred.named_steps["irt"]
    assert [anchors.n_for("a", n) for n in (5, 10)] == [4, 8]
    assert [anchors.n_for("b", n) for n in (5, 10)] == [17, 33]  # round(n * 100 / 30)
    for (_c, n, s), A in anchors.sets_.items():
        assert len(A.items) == len(set(A.items)) == anchors.n_for(s, n)
        assert A.weights.sum() == pytest.approx(1.0)
    tab = pred.anchor_table()
    counts = tab.groupby(["clustering", "n", "scenario"]).size()
    assert (counts == tab.groupby(["clustering", "n", "scenario"]).n_anchors.first()).all()
    # the tutorial lambda uses the scenario's own count
    for (_c, n, s, fit), lam in pred.named_steps["lambdas"].lambdas_.items():
        assert lam["tutorial"] == pytest.approx(est.tutorial_lambda(irt.b_[(fit, s)], irt.v_[s], anchors.n_for(s, n)))
    # estimates come out for every budget, keyed by the budget
    df = pred.estimate(rm.scores[test], np.asarray(rm.models, dtype=object)[test], include_random=True)
    assert set(df.n) == {5, 10} and np.isfinite(df[df.estimator == "tinybench"].estimate).all()


def test_counts_are_capped_at_the_pool_and_misaligned_overrides_fail(fitted):
    rm, test, pred = fitted
    p = AnchorPredictor(n_values=(5, 10), scenario_n={"a": {5: 3, 10: 500}}).make_steps()["anchors"]
    p.pool_sizes_ = pred.named_steps["anchors"].pool_sizes_
    assert p.n_for("a", 5) == 3 and p.n_for("a", 10) == 20  # capped at the 20-item pool
    assert p.n_for("b", 10) == 10  # 40 items: below the default 1,000-item large-pool threshold
    with pytest.raises(ValueError, match="scenario_n\\['a'\\] has 1 counts for 2 budgets"):
        AnchorPredictor(n_values=(5, 10), scenario_n={"a": [4]})
