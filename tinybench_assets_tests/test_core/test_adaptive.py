"""Adaptive testing: the session (item choice, answers, stop rules, state) and `tinybench adaptive` on a store."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tinybench_assets import paths
from tinybench_assets.cli import main
from tinybench_assets.core.estimation.adaptive import AdaptiveSession, item_gain, map_abilities, simulate
from tinybench_assets.io.store import Store


def _bank(I=300, D=2, seed=0):
    rng = np.random.default_rng(seed)
    a = np.abs(rng.normal(1.0, 0.5, (I, D)))
    b = rng.normal(0, 1.5, I)
    return a, b, [f"q{j:03d}" for j in range(I)]


def _answers(a, b, theta, seed=1):
    p = 1 / (1 + np.exp(-(a @ theta - b)))
    return (np.random.default_rng(seed).random(len(b)) < p).astype(float)


def test_first_item_is_the_most_informative_at_the_prior_mean():
    a, b, items = _bank()
    s = AdaptiveSession(a, b, items, rule="fisher")
    p = 1 / (1 + np.exp(b))
    assert s.next_item() == items[int(np.argmax(p * (1 - p) * (a**2).sum(1)))]
    assert np.allclose(
        item_gain(np.zeros((1, 2)), np.eye(2)[None], a, b, rule="fisher")[0], p * (1 - p) * (a**2).sum(1)
    )
    # the accuracy rule: the drop in the posterior variance of the pool accuracy, checked by brute force
    gain = item_gain(np.zeros((1, 2)), np.eye(2)[None], a, b, rule="accuracy")[0]
    g = (p * (1 - p)) @ a / len(b)
    for j in (0, 7, 42):
        H1 = np.eye(2) + p[j] * (1 - p[j]) * np.outer(a[j], a[j])
        assert gain[j] == pytest.approx(g @ g - g @ np.linalg.solve(H1, g), rel=1e-9)
    assert AdaptiveSession(a, b, items).next_item() == items[int(np.argmax(gain))]
    with pytest.raises(ValueError, match="unknown item rule"):
        item_gain(np.zeros((1, 2)), np.eye(2)[None], a, b, rule="nope")


def test_map_ability_moves_toward_the_answers():
    a, b, _ = _bank(I=50, D=1)
    A, B = a[None], b[None]
    hi, _ = map_abilities(A, B, np.ones((1, 50)))
    lo, _ = map_abilities(A, B, np.zeros((1, 50)))
    mid, H = map_abilities(A, B, np.where(np.arange(50) % 2 == 0, 1.0, np.nan)[None])  # NaN: not asked
    assert lo[0, 0] < 0 < hi[0, 0] and np.isfinite(mid).all() and H.shape == (1, 1, 1)


def test_session_records_stops_and_round_trips_its_state():
    a, b, items = _bank()
    y = _answers(a, b, np.array([1.0, 0.5]))
    s = AdaptiveSession(a, b, items, max_items=12)
    while not s.done:
        it = s.next_item()
        s.record(it, y[items.index(it)])
    assert len(s.asked) == 12 and s.next_item() is None
    est = s.estimate()
    assert 0 <= est["lower"] <= est["estimate"] <= est["upper"] <= 1 and est["n"] == 12
    # the same answers restored into a fresh session give the same estimate and the same next choice
    t = AdaptiveSession(a, b, items, max_items=20).restore(s.state())
    assert t.estimate()["estimate"] == pytest.approx(est["estimate"]) and t.next_item() not in s.state()["asked"]
    # the session follows the batched simulation exactly
    sim = simulate(y[None], a, b, np.ones(len(b)), (12,))
    assert [items[j] for j in sim[12]["asked"][0]] == s.state()["asked"]
    with pytest.raises(ValueError, match="already answered"):
        t.record(s.state()["asked"][0], 1)
    with pytest.raises(KeyError, match="unknown item"):
        t.record("nope", 1)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        t.record(t.next_item(), 2)


def test_session_stops_on_interval_width_and_skips_items():
    a, b, items = _bank()
    y = _answers(a, b, np.zeros(2))
    s = AdaptiveSession(a, b, items, max_items=200, target_width=0.15)
    while not s.done:
        it = s.next_item()
        if len(s.skipped) < 3:
            s.skip(it)  # unavailable: never chosen again, not counted
            assert s.next_item() != it
            continue
        s.record(it, y[items.index(it)])
    assert s.estimate()["width"] <= 0.15 and 3 < len(s.asked) < 200 and len(s.skipped) == 3


def test_a_pool_exhausted_by_skips_and_answers_is_done():
    """5 items, 2 skipped (the model has no answer to them): after the other 3 answers the session is done and asks
    nothing more (counting the skipped items as askable, a batch run's loop would go on forever)."""
    a, b, items = _bank(I=5)
    s = AdaptiveSession(a, b, items, max_items=30)
    for it in items[:2]:
        s.skip(it)
    for it in items[2:]:
        assert not s.done
        s.record(it, 1.0)
    assert s.done and s.next_item() is None


def test_the_served_estimator_has_the_lowest_validation_error():
    """AdaptiveEstimator serves, per budget, the estimator whose validation MAE is lowest."""
    from tinybench_assets.core.estimation.adaptive import ESTIMATORS, AdaptiveEstimator

    a, b, _ = _bank(I=80)
    rng = np.random.default_rng(3)
    theta = rng.normal(0, 1, (60, 2))
    Y = (rng.random((60, 80)) < 1 / (1 + np.exp(-(theta @ a.T - b)))).astype(float)
    truth = Y.mean(1)
    fit = AdaptiveEstimator().fit(simulate(Y, a, b, np.ones(80), (5, 15)), truth)
    for n in (5, 15):
        maes = {e: fit.val_mae_[(n, e)] for e in ESTIMATORS}
        assert len(set(maes.values())) > 1 and fit.served_[n] == min(maes, key=maes.get), (n, maes)


@pytest.fixture()
def store_with_irt():
    """A store holding one leaderboard with two scenarios' fitted item parameters (as irt_model writes them)."""
    db = Store(paths.duckdb_path())
    a, b, items = _bank(I=120)
    with db.connect() as con:
        for scen in ("alpha", "beta"):
            df = pd.DataFrame(
                {
                    "partition_key": f"board.{scen}",
                    "item": items,
                    "scenario": scen,
                    "subscenario": scen,
                    "b": b,
                    "a": [list(r) for r in a],
                }
            )
            con.register("df", df)
            con.execute("INSERT INTO irt_items SELECT partition_key, item, scenario, subscenario, b, a FROM df")
            con.unregister("df")
    return a, b, items


def test_cli_item_by_item_and_from_a_batch(store_with_irt, tmp_path, capsys):
    a, b, items = store_with_irt
    y = _answers(a, b, np.array([0.8, 0.2]))
    state = tmp_path / "run.json"
    base = ["adaptive", "--leaderboard", "board", "--scenario", "alpha", "--state", str(state)]
    for i in range(8):  # --max-items on the first call only: the state file keeps it
        assert main([*base, *(["--max-items", "8"] if i == 0 else []), "next"]) == 0
        item = capsys.readouterr().out.strip()
        assert item in items
        assert main([*base, "answer", item, str(y[items.index(item)])]) == 0
        assert "board.alpha" in capsys.readouterr().out
    assert main([*base, "next"]) == 0 and capsys.readouterr().out.startswith("done")
    assert main([*base, "estimate", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["n"] == 8 and rep["done"] and rep["budget"] == "own" and rep["lower"] <= rep["estimate"] <= rep["upper"]
    # the same test driven from a batch file of answers gives the same estimate
    answers = tmp_path / "answers.csv"
    pd.DataFrame({"item": items, "score": y}).to_csv(answers, index=False)
    assert (
        main(
            [
                "adaptive",
                "--leaderboard",
                "board",
                "--scenario",
                "alpha",
                "--max-items",
                "8",
                "run",
                "--answers",
                str(answers),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["estimate"] == pytest.approx(rep["estimate"])
    # a batch lacking some chosen items skips them and still asks 8
    pd.DataFrame({"item": items[::2], "score": y[::2]}).to_csv(answers, index=False)
    assert (
        main(
            [
                "adaptive",
                "--leaderboard",
                "board",
                "--scenario",
                "alpha",
                "--max-items",
                "8",
                "--state",
                str(tmp_path / "partial.json"),
                "run",
                "--answers",
                str(answers),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["n"] == 8
    asked = json.loads((tmp_path / "partial.json").read_text())["asked"]
    assert len(asked) == 8 and set(asked) <= set(items[::2])  # a skipped item is never scored


def test_cli_errors_are_one_line_and_exit_2(store_with_irt, tmp_path, capsys):
    assert main(["adaptive", "--leaderboard", "board", "--state", str(tmp_path / "s.json"), "next"]) == 2
    assert "alpha, beta" in capsys.readouterr().err  # several scenarios: say which exist
    assert main(["adaptive", "--leaderboard", "nope", "--scenario", "x", "estimate"]) == 2
    assert "no scenario" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"scenario": "board.beta", "asked": [], "answers": []}))
    assert main(["adaptive", "--leaderboard", "board", "--scenario", "alpha", "--state", str(bad), "estimate"]) == 2
    assert "not board.alpha" in capsys.readouterr().err
    state = tmp_path / "ok.json"
    assert (
        main(["adaptive", "--leaderboard", "board", "--scenario", "alpha", "--state", str(state), "answer", "zzz", "1"])
        == 2
    )
    assert "unknown item" in capsys.readouterr().err
