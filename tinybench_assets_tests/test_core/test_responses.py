import numpy as np
import pandas as pd
import pytest

from tinybench_assets.core.responses import ResponseMatrix, binarize, choose_threshold


def _matrix():
    df = pd.DataFrame(
        {
            "model": ["m1"] * 5 + ["m2"] * 5,
            "scenario": "mmlu",
            "subscenario": ["a", "a", "a", "b", "b"] * 2,
            "item": ["i1", "i2", "i3", "i4", "i5"] * 2,
            "score": [1, 0, 1, 1, 1, 0, 0, 0, 1, 0],
        }
    )
    return ResponseMatrix.from_long(df)


def test_from_long_and_balance_weights():
    m = _matrix()
    assert m.shape == (2, 5)
    w = m.balance_weights()
    # subject a has 3 items, b has 2: each subject weighs the same in total, weights average 1
    assert np.allclose(w[:3], 5 / (2 * 3)) and np.allclose(w[3:], 5 / (2 * 2))
    assert np.isclose(w.mean(), 1.0)
    acc = m.accuracy()["mmlu"]
    assert np.isclose(acc["m1"], 0.5 * (2 / 3) + 0.5 * 1.0)
    assert np.isclose(acc["m2"], 0.5 * 0.0 + 0.5 * 0.5)


def test_missing_cells_are_nan_and_round_trip():
    m = _matrix()
    long = m.to_long().iloc[:-1]
    m2 = ResponseMatrix.from_long(long)
    assert np.isnan(m2.scores).sum() == 1
    assert m2.mask.sum() == 9


def test_binarize_identity_positive_and_threshold():
    y = np.array([[0, 1, 1], [1, 0, np.nan]])
    out, c, rule = binarize(y)
    assert rule == "identity" and c is None and np.array_equal(np.isnan(out), np.isnan(y))
    probs = np.array([[0.0, 0.3, 0.9], [0.26, 0.0, 0.5]])
    out, c, rule = binarize(probs, rule="positive")
    assert rule == "positive" and c == 0.0 and out.tolist() == [[0, 1, 1], [1, 0, 1]]
    with pytest.raises(ValueError):
        binarize(probs, rule="nope")


def test_tutorial_threshold_minimizes_accuracy_shift():
    rng = np.random.default_rng(0)
    y = np.clip(rng.beta(2, 2, size=(30, 200)), 0, 1)
    c = choose_threshold(y)
    err = lambda t: np.mean(np.abs((y > t).mean(1) - y.mean(1)))  # noqa: E731
    assert err(c) <= min(err(t) for t in np.linspace(0, 1, 101)) + 1e-12
    out, c2, rule = binarize(y)
    assert rule == "tutorial_threshold" and c2 == c
