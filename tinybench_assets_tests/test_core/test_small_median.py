"""The small boards' median rule (core/estimation/small_rules.MEDIAN): the per-model median of the IRT rules at one D,
shrunk, shrunk_joint and fill; served unless a single rule beats it by more than one standard error of their
fold-by-fold gain; and served through the artifact (a stack of kind median) as the predictor computes it."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tinybench_assets.core.estimation.small_choice import choose
from tinybench_assets.core.estimation.small_rules import FILL, MEDIAN, Rule, needs_learned, rules_for
from tinybench_assets.core.tiny_benchmark import ArtifactError

from .test_small_board import fitted, saved_estimate


def _base(rng, M=40):
    truth = rng.uniform(0.2, 0.8, M)
    noisy = {k: truth + rng.normal(0, 0.05, M) for k in ("anchor", "irt", "pirt", "shrunk", "shrunk_joint")}
    base = {
        D: {**noisy, "irt": truth + rng.normal(0, 0.05, M), "fill": {0.1: truth + rng.normal(0, 0.05, M)}}
        for D in (1, 2)
    }
    bias = {D: np.full(M, 0.02) for D in (1, 2)}
    return base, bias, truth


def test_median_rule_is_the_median_of_its_parts_at_one_d():
    rng = np.random.default_rng(0)
    base, bias, truth = _base(rng)
    rows = np.ones(len(truth), bool)
    rules, _ = rules_for(base, bias, np.full(len(truth), 0.2), truth, rows, 30)
    meds = [r for r in rules if r.estimator == MEDIAN]
    assert [r.dim for r in meds] == [1, 2]
    for m in meds:
        names = [p.estimator for p in m.parts]
        assert names == ["pirt", "gpirt", "gpirt_val", "irt", "shrunk", "shrunk_joint", FILL]
        assert all(p.dim == m.dim for p in m.parts if p.irt)  # the IRT parts at the median's own D
        np.testing.assert_allclose(m.apply(base), np.median([p.apply(base) for p in m.parts], axis=0))
        assert m.irt and needs_learned(m)  # exported at the served D; with fill it needs the learned file
    assert not needs_learned(Rule("pirt", 1))


def test_median_is_served_unless_a_rule_beats_it_steadily():
    """A rule better than the median on average through one lucky fold is not served; one better by a steady margin
    on every fold is."""
    M = 40
    folds = np.arange(M) % 8
    truth = np.full(M, 0.5)
    med = Rule(MEDIAN, 1, parts=(Rule("pirt", 1), Rule("irt", 1), Rule("anchor", 1)))
    rows = np.ones(M, bool)
    for pirt, served in ((truth + np.where(folds == 0, 0.0, 0.042), MEDIAN), (truth + 0.035, "pirt")):
        base = {1: {"anchor": truth + 0.08, "irt": truth + 0.04, "pirt": pirt}}
        rules = [Rule("anchor", 1), Rule("pirt", 1), Rule("irt", 1), med]
        assert choose(rules, base, truth, rows, folds).estimator == served


def test_median_is_served_through_the_artifact_as_computed(tmp_path):
    """The median forced into the served choice: predict == the median of its members' artifact estimates == the
    saved artifact's estimate (with its tree file: fill is a member)."""
    Y, p0 = fitted()
    p, n = copy.deepcopy(p0), 30
    for s in p.layout_.scenarios:
        p.choices_[(s, n)].t1 = MEDIAN
    p.served_.models.clear()
    served = p.predict(Y, n=n)
    am = p.artifact_model(n)
    L = p.layout_
    Ya = {s: Y[:, am.anchor_sets[s].items] for s in L.scenarios}
    res = am.evaluate(Ya)
    art = p.to_artifact("small-sim", n)
    for s in L.scenarios:
        members = art["scenarios"][s]["stacks"][MEDIAN]["members"]
        assert FILL in members and len(members) == 7
        mine = np.median([res[(s, e)]["estimate"] for e in members], axis=0)
        np.testing.assert_allclose(served[served.scenario == s].estimate, mine, rtol=0, atol=1e-12)
    row = 2
    df = saved_estimate(art, Y, L.items, row, tmp_path)
    assert list(df.estimator) == [MEDIAN] * len(L.scenarios)
    want = served[served.model == row].set_index("scenario").estimate
    np.testing.assert_allclose(df.estimate, [want[s] for s in L.scenarios], rtol=0, atol=1e-12)
    # an artifact whose median names a member outside names.MEDIANS is refused with the member's JSON path
    s0, bad = L.scenarios[0], copy.deepcopy(art)
    bad["scenarios"][s0]["stacks"][MEDIAN]["members"][0] = "anchor"
    with pytest.raises(ArtifactError, match=rf"\$\.scenarios\.{s0}\.stacks\.median\.members: unknown name 'anchor'"):
        saved_estimate(bad, Y, L.items, row, tmp_path / "bad")
