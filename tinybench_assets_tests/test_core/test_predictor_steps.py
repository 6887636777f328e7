"""The predictor is a chain of steps, each owning its fitted state: walked on a real openllm slice, every step's fit
sets attributes on that step only, leaves the steps fitted before it untouched, and the artifact rebuilds the same
steps (same estimates) from its file."""

from __future__ import annotations

import hashlib
import pickle

import numpy as np
import pytest
import torch

from tinybench_assets.core import tiny_benchmark as tb
from tinybench_assets.core.estimation.predictor import AnchorPredictor
from tinybench_assets_tests.test_core.test_backtest import FAST
from tinybench_assets_tests.test_core.test_predictor_batch import openllm_slice
from tinybench_assets_tests.test_core.test_tiny_benchmark import anchor_block

torch.set_num_threads(1)
ORDER = [
    "split",
    "irt",
    "anchors",
    "learned",
    "bank",
    "validation",
    "lambdas",
    "stacks",
    "calibrators",
    "probe",
    "selector",
    "served",
    "frontier",
]


def _state(step) -> dict:
    """{attribute: digest of its pickled value} of every attribute of ``step`` (the watching wrapper aside)."""
    return {k: hashlib.sha256(pickle.dumps(v)).hexdigest() for k, v in vars(step).items() if k != "fit"}


@pytest.mark.timeout(600)
def test_each_step_fits_only_its_own_state(monkeypatch):
    rm, full, train, test = openllm_slice(("arc", "truthfulqa"), 160)
    walk = []  # (name, fitted attributes it set, the states of every step before and after its fit)
    make = AnchorPredictor.make_steps

    def watched(self):
        steps = make(self)
        every = dict(steps)  # fit takes the split step out of the dict it is given
        for name, step in every.items():

            def fit(*args, _name=name, _step=step, _fit=step.fit, **kw):
                before = {n: _state(s) for n, s in every.items()}
                out = _fit(*args, **kw)
                after = {n: _state(s) for n, s in every.items()}
                walk.append((_name, set(after[_name]) - set(before[_name]), before, after))
                return out

            step.fit = fit
        return steps

    monkeypatch.setattr(AnchorPredictor, "make_steps", watched)
    pred = AnchorPredictor(n_values=(10,), **{**FAST, "learned": True}).fit(rm, full, train)
    assert [w[0] for w in walk] == ORDER == list(pred.named_steps)
    for name, new, before, after in walk:
        for other in ORDER:
            if other != name:  # no step writes another's attributes
                assert after[other] == before[other], f"fitting {name} changed {other}"
        fitted = {k for k in new if k.endswith("_")}
        assert new == fitted, f"{name} set non-fitted attributes {new - fitted}"
        assert not any(k.endswith("_") for k in before[name]), f"{name} had fitted state before its fit"
    sets = {name: new for name, new, _, _ in walk}
    assert sets["validation"] == set() and sets["irt"] == {"dim_selection_", "params_", "b_", "v_"}
    assert all(sets[n] for n in ORDER if n != "validation"), sets
    st = pred.named_steps
    assert len(st["learned"].models_) > 0 and st["bank"].banks_ and st["served"].intervals_


@pytest.mark.timeout(600)
def test_the_artifact_rebuilds_the_same_steps(tmp_path):
    rm, full, train, test = openllm_slice(("arc", "truthfulqa"), 160)
    pred = AnchorPredictor(n_values=(10,), **{**FAST, "learned": True}).fit(rm, full, train)
    tb.save_artifact(tb.export_tiny_benchmark(pred, leaderboard="openllm", n=10), None, tmp_path)
    art = tb.load_artifact(tmp_path)
    model = tb.load_model(art, learned=True)
    c, st = art["clustering"], pred.named_steps
    assert set(model.steps) == {
        "irt",
        "anchors",
        "learned",
        "bank",
        "lambdas",
        "stacks",
        "calibrators",
        "served",
        "frontier",
    }
    for s, A in model.anchor_sets.items():
        np.testing.assert_array_equal(A.local, st["anchors"].sets_[(c, 10, s)].local)
    assert set(model.steps["learned"].models_) == {k for k in st["learned"].models_ if k[:2] == (c, 10)}
    assert model.steps["lambdas"].lambdas_ == {k: v for k, v in st["lambdas"].lambdas_.items() if k[:2] == (c, 10)}
    for s in art["scenario_order"]:  # each step's from_dict reads back what its to_dict wrote
        names = list(st["selector"].rows(c, 10, s).estimator)
        assert model.steps["calibrators"].to_dict(c, 10, s, names) == st["calibrators"].to_dict(c, 10, s, names)
        assert model.steps["lambdas"].to_dict(c, 10, s) == st["lambdas"].to_dict(c, 10, s)
        assert model.steps["stacks"].to_dict(c, 10, s) == st["stacks"].to_dict(c, 10, s)
        assert model.steps["irt"].to_dict(s, model.layout.cols[s]) == st["irt"].to_dict(s, pred.layout.cols[s])
        assert model.steps["anchors"].to_dict(c, 10, s, model.layout.items, {}) == st["anchors"].to_dict(
            c, 10, s, pred.layout.items, {}
        )
        assert model.layout.to_dict(s) == pred.layout.to_dict(s)
    served = {k: iv for k, iv in st["served"].intervals_.items() if k[0] == 10 and k[2] == "tinybench"}
    if art["clustering_source"] == "selected":  # the served intervals travel with the selected clustering
        assert {k: iv.to_dict() for k, iv in model.steps["served"].intervals_.items()} == {
            k: iv.to_dict() for k, iv in served.items()
        }
    got = model.evaluate(anchor_block(art, rm, test))
    ref = pred.estimate(rm.scores[test], np.arange(len(test)), n_values=[10])
    ref = ref[ref.clustering == c].set_index(["scenario", "estimator", "model"]).sort_index()
    for (s, e), cols in got.items():
        np.testing.assert_allclose(
            cols["estimate"],
            ref.loc[(s, e)].estimate.reindex(range(len(test))).to_numpy(),
            atol=1e-12,
            err_msg=f"{s}/{e}",
        )


def test_the_fit_reports_each_step_as_it_ends():
    rm, full, train, _ = openllm_slice(("arc", "truthfulqa"), 160)
    heard = []
    pred = AnchorPredictor(n_values=(10,), **{**FAST, "learned": False}).fit(
        rm, full, train, progress=lambda *a: heard.append(a)
    )
    assert [h[0] for h in heard] == ORDER == list(pred.named_steps)
    assert [h[2] for h in heard] == list(range(1, len(ORDER) + 1)) and {h[3] for h in heard} == {len(ORDER)}
    assert all(h[1] == pytest.approx(pred.timings_[h[0]]) for h in heard)


def test_the_selector_serves_the_lowest_validation_error_for_t1_and_t2():
    """selection.choose: the clustering with the lowest mean best T1 MAE, then per scenario its estimator of the lowest
    validation T1 MAE and, separately, of the lowest T2 MAE (tinybench_own: among the per-scenario estimators)."""
    import pandas as pd

    from tinybench_assets.core.estimation.selection import choose

    rows = []
    for c, shift in (("a", 0.0), ("b", 0.01)):
        for s, t1, t2 in (("x", (3, 1, 2), (1, 3, 2)), ("y", (2, 3, 1), (3, 2, 1))):
            for e, m1, m2 in zip(("anchor", "irt_joint", "gpirt"), t1, t2):
                rows.append(
                    {
                        "clustering": c,
                        "scenario": s,
                        "estimator": e,
                        "val_mae_t1": m1 / 100 + shift,
                        "val_mae_t2": m2 / 100,
                    }
                )
    out = choose(pd.DataFrame(rows), ["x", "y"])
    assert out[("x", "tinybench")] == {"t1": ("a", "irt_joint"), "t2": ("a", "anchor")}
    assert out[("y", "tinybench")] == {"t1": ("a", "gpirt"), "t2": ("a", "gpirt")}
    assert out[("x", "tinybench_own")] == {"t1": ("a", "gpirt"), "t2": ("a", "anchor")}
