"""Bank-adaptive testing (core/estimation/adaptive_bank.py): the leaderboard's own answers as the prior, tuned on
validation models; the session asks what the batch simulation asks; `tinybench adaptive --method bank` on a store."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tinybench_assets import paths
from tinybench_assets.cli import main
from tinybench_assets.core.estimation.adaptive_bank import (
    BankAdaptive,
    BankSession,
    bank_matrix,
    simulate_bank,
    tune_bank,
)
from tinybench_assets.io.store import Store


def _world(n_models=900, I=120, seed=0):
    """0/1 answers of models with a 2-D ability on 2PL items (a skill mix, so the answers are not one-dimensional),
    balance weights that differ by item, and each model's weighted pool accuracy."""
    rng = np.random.default_rng(seed)
    a = np.abs(rng.normal(1.0, 0.5, (I, 2)))
    b = rng.normal(0, 1.2, I)
    theta = rng.normal(0, 1, (n_models, 2))
    Y = (rng.random((n_models, I)) < 1 / (1 + np.exp(-(theta @ a.T - b)))).astype(float)
    w = rng.uniform(0.5, 2.0, I)
    return Y, w, Y @ w / w.sum()


def test_bank_matrix_fills_missing_answers_and_drops_empty_models():
    Y = np.array([[1, 0, np.nan], [np.nan] * 3, [0, 1, 1], [1, 1, 0]], dtype=float)
    B = bank_matrix(Y)
    assert B.shape == (3, 3) and not np.isnan(B).any()
    assert B[0, 2] == pytest.approx(0.5)  # the item's mean over the bank
    assert len(bank_matrix(np.ones((50, 4)), max_models=20)) == 20
    with pytest.raises(ValueError, match="empty"):
        bank_matrix(np.full((3, 4), np.nan))


def test_estimate_is_exact_once_every_item_is_asked_and_items_are_never_repeated():
    Y, w, acc = _world(n_models=300, I=25)
    B, Yt = Y[:250], Y[250:]
    sim = simulate_bank(Yt, B, w, (10, 25), eps_select=0.2, eps_estimate=(0.1,))
    assert np.allclose(sim[25]["estimates"][0.1], acc[250:], atol=1e-5)
    assert all(len(set(r)) == 10 for r in sim[10]["asked"])
    # an item a model cannot be asked (NaN) is never asked
    Yn = Yt.copy()
    Yn[:, 3] = np.nan
    assert not (simulate_bank(Yn, B, w, (10,))[10]["asked"] == 3).any()


def test_binary_fast_path_equals_the_general_likelihood():
    """0/1 answers use mismatch counts; a bank with one soft item takes the general path: same items, estimates."""
    Y, w, _ = _world(n_models=300, I=40, seed=7)
    B, Yt = Y[:250], Y[250:]
    soft = np.hstack([B, np.full((250, 1), 0.5)])  # one extra item of negligible weight, never askable
    Ys = np.hstack([Yt, np.full((50, 1), np.nan)])
    ws = np.append(w, 1e-9)
    fast = simulate_bank(Yt, B, w, (5, 12), 0.2, (0.1, 0.3))
    slow = simulate_bank(Ys, soft, ws, (5, 12), 0.2, (0.1, 0.3))
    for n in (5, 12):
        same = (fast[n]["asked"] == slow[n]["asked"]).all(1)
        assert same.mean() >= 0.9  # float32 near-ties may part a rare model's path, not more
        for e in (0.1, 0.3):
            assert np.allclose(fast[n]["estimates"][e][same], slow[n]["estimates"][e][same], atol=1e-5)


def test_session_asks_and_estimates_what_the_simulation_does():
    Y, w, _ = _world(n_models=400, I=80, seed=1)
    B, Yt = bank_matrix(Y[:350]), Y[350:353]
    items = [f"q{j:02d}" for j in range(80)]
    params = tune_bank(Y[:350], w, (8, 12))
    es, ee = params["12"]["eps_select"], params["12"]["eps_estimate"]
    sim = simulate_bank(Yt, B, w, (12,), es, (ee,))
    for m in range(3):
        s = BankSession(B, items, w, params=params, max_items=12)
        while not s.done:
            it = s.next_item()
            s.record(it, Yt[m, items.index(it)])
        assert [items.index(i) for i in s.state()["asked"]] == sim[12]["asked"][m].tolist()
        e = s.estimate()
        assert e["estimate"] == pytest.approx(sim[12]["estimates"][ee][m], abs=1e-5)
        assert e["lower"] <= e["estimate"] <= e["upper"] and e["method"] == "bank"
        t = BankSession(B, items, w, params=params, max_items=12).restore(s.state())
        assert t.estimate() == pytest.approx(e) and t.done
    # shorter than every tuned length (8): the posterior's own range, wide at first, never the n=8 calibration
    fresh = BankSession(B, items, w, params=params, max_items=12).estimate()
    assert fresh["n"] == 0 and fresh["lower"] <= fresh["estimate"] <= fresh["upper"]
    assert fresh["width"] > 2 * e["width"]
    # at the shortest tuned length itself, the n = 8 calibration serves
    from tinybench_assets.core.estimation.calibration import ConformalInterval

    s8 = BankSession(B, items, w, params=params, max_items=8)
    while not s8.done:
        it = s8.next_item()
        s8.record(it, Yt[0, items.index(it)])
    e8, p8 = s8.estimate(), params["8"]
    ci = ConformalInterval(p8["alpha"], p8["scale"], p8["floor"])
    ci.q_lo_, ci.q_hi_ = p8["q_lo"], p8["q_hi"]
    lo, hi = ci.predict(np.array([e8["estimate"]]))
    assert e8["n"] == 8 and (e8["lower"], e8["upper"]) == pytest.approx((lo[0], hi[0]))


def test_tuned_on_validation_beats_random_items_improves_with_n_and_covers():
    Y, w, acc = _world(n_models=1500, I=120, seed=2)
    fit, val, test = np.arange(0, 800), np.arange(800, 1100), np.arange(1100, 1500)
    ba = BankAdaptive().fit(bank_matrix(Y[fit]), Y[val], acc[val], w, (10, 20))
    assert set(ba.choice_) == {10, 20} and all(es in ba.eps_select for es, _ in ba.choice_.values())
    out = ba.predict(Y[test], bank_matrix(Y[:1100]))
    rng = np.random.default_rng(0)
    for n, (e, lo, hi) in out.items():
        mae = np.abs(e - acc[test]).mean()
        rand = np.mean([abs(Y[m, rng.choice(120, n, replace=False)].mean() - acc[m]) for m in test])
        assert mae < 0.75 * rand, (n, mae, rand)
        assert 0.8 <= np.mean((acc[test] >= lo) & (acc[test] <= hi)) <= 0.98
    assert np.abs(out[20][0] - acc[test]).mean() < np.abs(out[10][0] - acc[test]).mean()


def test_choices_see_validation_answers_only():
    """The tuned settings and intervals do not move when the models later estimated change their answers."""
    Y, w, acc = _world(n_models=900, seed=3)
    fit, val, test = np.arange(0, 500), np.arange(500, 700), np.arange(700, 900)
    Yflip = Y.copy()
    Yflip[test] = 1 - Yflip[test]
    a = BankAdaptive().fit(bank_matrix(Y[fit]), Y[val], acc[val], w, (10,))
    b = BankAdaptive().fit(bank_matrix(Yflip[fit]), Yflip[val], acc[val], w, (10,))
    assert a.params() == b.params()
    # the check can fail: other validation answers give other settings or intervals
    c = BankAdaptive().fit(bank_matrix(Y[fit]), 1 - Y[val], 1 - acc[val], w, (10,))
    assert c.params() != a.params()


def test_tune_bank_validates_on_models_outside_its_bank_and_picks_the_lowest_error():
    """The validation error tune_bank reports (and sizes its interval on) is that of models simulated on a bank
    without them: about the error new models get. A bank holding the validation models themselves looks 5x better."""
    Y, w, acc = _world(n_models=400, I=120, seed=6)
    p = tune_bank(Y[:300], w, n_values=(10,), seed=0)["10"]
    sim = simulate_bank(Y[300:], bank_matrix(Y[:300]), w, (10,), p["eps_select"], (p["eps_estimate"],))
    mae_new = float(np.abs(sim[10]["estimates"][p["eps_estimate"]] - acc[300:]).mean())
    assert 0.6 * mae_new <= p["val_mae"] <= 1.6 * mae_new, (p["val_mae"], mae_new)
    # the settings are the grid's lowest validation error
    val, bank = np.arange(200, 300), bank_matrix(Y[:200])
    ba = BankAdaptive().fit(bank, Y[val], acc[val], w, (10,))
    grid = [
        float(np.abs(x - acc[val]).mean())
        for es in ba.eps_select
        for x in simulate_bank(Y[val], bank, w, (10,), es, ba.eps_estimate)[10]["estimates"].values()
    ]
    assert ba.val_mae_[10] == pytest.approx(min(grid)) and max(grid) > min(grid)


@pytest.fixture()
def store_with_bank():
    """A store with one scenario's item parameters, balance weights, responses and binarized answers of 299 models."""
    Y, w, _ = _world(n_models=300, I=60, seed=4)
    items = [f"q{j:02d}" for j in range(60)]
    db = Store(paths.duckdb_path())
    rng = np.random.default_rng(5)
    with db.connect() as con:
        irt = pd.DataFrame(
            {
                "partition_key": "board.alpha",
                "item": items,
                "scenario": "alpha",
                "subscenario": "alpha",
                "b": rng.normal(0, 1, 60),
                "a": [[1.0] for _ in items],
            }
        )
        con.register("irt", irt)
        con.execute("INSERT INTO irt_items SELECT partition_key, item, scenario, subscenario, b, a FROM irt")
        mi = pd.DataFrame(
            {
                "partition_key": "board.alpha",
                "col": range(60),
                "item": items,
                "subscenario": "alpha",
                "balance_weight": w,
                "split": None,
                "mean_score": Y.mean(0),
            }
        )
        con.register("mi", mi)
        con.execute("INSERT INTO matrix_items SELECT * FROM mi")
        bz = pd.DataFrame(
            [
                ("board.alpha", f"org{m % 40}/model-{m}", items[j], int(Y[m, j]))
                for m in range(1, 300)
                for j in range(60)
            ],
            columns=["partition_key", "model", "item", "y"],
        )
        con.register("bz", bz)
        con.execute("INSERT INTO binarized SELECT * FROM bz")
        # the responses the binarized cells come from (the bank is read as the pipeline stores it)
        con.execute(
            "INSERT INTO responses SELECT partition_key, 'board', 'alpha', 'alpha', item, model, "
            "CAST(y AS DOUBLE), 'drop-1' FROM bz"
        )
        for name in ("irt", "mi", "bz"):
            con.unregister(name)
    return Y[0], w, items  # model 0 is not in the bank: the model under test


def test_cli_bank_method_item_by_item_equals_batch(store_with_bank, tmp_path, capsys):
    y, w, items = store_with_bank
    state = tmp_path / "run.json"
    base = ["adaptive", "--leaderboard", "board", "--scenario", "alpha", "--state", str(state), "--max-items", "10"]
    for _ in range(10):
        assert main([*base, "next"]) == 0
        item = capsys.readouterr().out.strip()
        assert main([*base, "answer", item, str(y[items.index(item)])]) == 0
        assert "bank, own budget" in capsys.readouterr().out
    saved = json.loads(state.read_text())
    assert saved["method"] == "bank" and "10" in saved["bank_params"]  # tuned once, kept with the answers
    assert main([*base, "estimate", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["method"] == "bank" and rep["n"] == 10 and rep["lower"] <= rep["estimate"] <= rep["upper"]
    assert abs(rep["estimate"] - float(y @ w / w.sum())) < 0.15
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
                "10",
                "run",
                "--answers",
                str(answers),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["estimate"] == pytest.approx(rep["estimate"], abs=1e-6)
    # an IRT test's state cannot go on as a bank test
    assert main([*base, "--method", "irt", "estimate"]) == 2
    assert "cannot go on" in capsys.readouterr().err
    assert (
        main(
            [
                "adaptive",
                "--leaderboard",
                "board",
                "--scenario",
                "alpha",
                "--method",
                "irt",
                "--max-items",
                "10",
                "run",
                "--answers",
                str(answers),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["method"] == "irt"
