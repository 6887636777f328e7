"""Boards without families (issue 51): ids the reader generated, and a board the family rule puts in one family, give
one family per model (core/subsets/voters.py, core/estimation/groups.py); a MAGI search trial whose objectives are not
finite is pruned, never chosen while another trial scored, and no trial reaches optuna as NaN
(core/subsets/optimizer.py)."""

import logging

import numpy as np
import optuna
import pandas as pd
import pytest

from tinybench_assets.core.estimation.groups import group_summary, grouped_test_mask, model_groups
from tinybench_assets.core.subsets import SubsetParams, build_subset, optimizer, prepare
from tinybench_assets.core.subsets.optimizer import search_method, unscored_trials
from tinybench_assets.core.subsets.rankings import rank_mean_score
from tinybench_assets.core.subsets.voters import model_families, one_family_each, own_family
from tinybench_assets.io.matrix_drops import _generated_ids

GENERATED = [f"combine.model{i}" for i in range(12)]


def test_the_readers_generated_ids_are_each_their_own_family():
    ids = [*_generated_ids("combine", 3, "models"), *_generated_ids("arc.train", 2, "models")]
    assert all(own_family(m) for m in ids)
    assert not any(own_family(m) for m in ["org/model1", "combine.0", "gpt-4", "llama-2-7b.model", "a/b.model3"])
    fam = model_families(ids)
    assert fam["family"].tolist() == ids and set(fam["family_source"]) == {"model"}
    groups = model_groups(ids)
    assert groups.nunique() == len(ids) and groups["combine.model0"] == "|combine.model0"
    assert "family_rule" not in group_summary(groups)  # each id is its own family by the id rule, no fallback


def test_two_headerless_files_of_one_board_are_not_two_families():
    """Without the id rule the stems (the files' scenarios) would make two families, each holding one scenario's
    models: a leave-family-out fold would leave no training model for its scenario."""
    ids = [f"mmlu.model{i}" for i in range(6)] + [f"arc.model{i}" for i in range(6)]
    assert model_groups(ids).nunique() == 12 and model_families(ids)["family"].nunique() == 12


def test_a_board_the_rule_puts_in_one_family_gets_one_family_per_model():
    models = ["Foo", "foo-v2", "foo_chat", "foo.instruct"]  # no organisation, no size token: every stem is "foo"
    assert model_families(models, each=False)["family"].nunique() == 1  # the name rule alone
    fam = model_families(models)
    assert fam["family"].tolist() == models and set(fam["family_source"]) == {"model"}
    groups = model_groups(models)
    assert groups.tolist() == [f"|{m}" for m in models]
    summary = group_summary(groups)
    assert summary["n_groups"] == 4 and "one family per model" in summary["family_rule"]
    mask = grouped_test_mask(groups.to_numpy(), 0.5, seed=0)
    assert 0 < mask.sum() < len(models)  # a grouped split has two sides again (one group: all on one side)


def test_boards_with_families_keep_them():
    models = ["a/llama-7b-x", "a/llama-7b-y", "b/llama-7b-z"]
    groups = model_groups(models)  # one name family, two organisations: two groups, no fallback
    assert groups.tolist() == ["a|llama-7b", "a|llama-7b", "b|llama-7b"] and "family_rule" not in group_summary(groups)
    # MAGI's voter families have no organisation: one family for the board, so one per model
    assert model_families(models)["family"].nunique() == 3
    assert model_families(["x/qwen-7b", "y/mistral-7b", "z/mistral-7b"])["family"].tolist() == [
        "qwen-7b",
        "mistral-7b",
        "mistral-7b",
    ]
    assert one_family_each(pd.Series(["f"], index=["m"])).tolist() == ["f"]  # one model: nothing to fall back from
    assert model_groups(["solo"]).tolist() == ["|solo"]


def _setup(models, seed=0):
    rng = np.random.default_rng(seed)
    ability = np.linspace(-1.5, 1.5, len(models))
    Y = (rng.random((len(models), 200)) < 1 / (1 + np.exp(-(ability[:, None] - rng.normal(size=200))))).astype(float)
    return prepare(Y, models, [f"q{j}" for j in range(200)], ["s"] * 200, ["s"] * 200, np.zeros(200), Y.mean(axis=1))


def test_magi_setup_of_a_headerless_board_has_fair_tune_models():
    s = _setup(GENERATED)
    assert s.not_fair.sum() == 1 and s.not_fair[s.reference]  # the reference alone, not its whole (stem) family
    assert len(s.voters) == 6 and np.isfinite(_metrics(s)["top10_std"])


def _metrics(s) -> dict:
    return build_subset(s, rank_mean_score(s.Yv), SubsetParams(keep_fraction=0.2)).metrics


@pytest.fixture()
def optuna_records():
    """Optuna's log records (its logger does not propagate to the root logger)."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("optuna")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


def test_a_search_whose_trials_cannot_be_scored_prunes_them_and_keeps_the_plain_point(optuna_records):
    s = _setup(GENERATED)
    s.not_fair[:] = True  # no fair tune model: top10_std is NaN in every trial (the bug's symptom)
    assert np.isnan(_metrics(s)["top10_std"])
    ranking = rank_mean_score(s.Yv)
    res = search_method(s, "mean_score", lambda k: ranking, n_trials=6, seed=0)
    t = res.trials
    assert len(t) == 6 and not t.scored.any() and not t.pareto.any()
    assert t.chosen.tolist() == [True] + [False] * 5 and res.params.keep_fraction == 0.2  # the plain MAGI point
    assert unscored_trials({"mean_score": res}) == {"mean_score": 6}
    assert not [r for r in optuna_records if r.levelno >= logging.WARNING]  # no "The value nan is not acceptable"


def test_unscored_trials_are_pruned_and_the_search_goes_on(monkeypatch, optuna_records):
    s = _setup(GENERATED)
    ranking = rank_mean_score(s.Yv)
    real_build, real_study, studies = optimizer.build_subset, optuna.create_study, []

    def some_nan(setup, rk, p, seed=0):  # small subsets cannot be scored
        ev = real_build(setup, rk, p, seed=seed)
        if p.keep_fraction < 0.14:
            ev.metrics["guesser_advantage"] = float("nan")
        return ev

    monkeypatch.setattr(optimizer, "build_subset", some_nan)
    monkeypatch.setattr(optuna, "create_study", lambda **kw: studies.append(real_study(**kw)) or studies[-1])
    res = search_method(s, "mean_score", lambda k: ranking, n_trials=20, seed=1)
    t = res.trials
    assert (~t.scored == (t.keep_fraction < 0.14)).all() and (~t.scored).any() and t.scored.sum() >= 2
    assert not t[~t.scored].pareto.any() and t[t.chosen].scored.all() and t[t.chosen].pareto.all()
    assert res.params.keep_fraction >= 0.14
    assert unscored_trials({"mean_score": res}) == {"mean_score": int((~t.scored).sum())}
    states = [tr.state for tr in studies[0].trials]
    assert states.count(optuna.trial.TrialState.PRUNED) == int((~t.scored).sum())
    assert set(states) == {optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.COMPLETE}  # none failed
    assert not [r for r in optuna_records if r.levelno >= logging.WARNING]


def test_the_magi_report_notes_unscored_trials(tmp_path):
    """The asset's metadata when a method's trials could not be scored: how many, and why (UNSCORED_NOTE)."""
    from tinybench_assets.defs.assets.subsets import MagiConfig
    from tinybench_assets.defs.magi_report import magi_metadata, magi_tables, search

    s = _setup(GENERATED)
    s.not_fair[:] = True
    config = MagiConfig(methods=["mean_score"], n_trials=4, guard=False)
    result, export, _ = search(s, config)
    meta = magi_metadata(s, result, export, magi_tables(s, result, export, config, "b"), config, tmp_path / "m.json")
    assert meta["magi_subset"]["unscored_trials"].data == {"mean_score": 4}
    assert meta["magi_subset"]["unscored_note"] == optimizer.UNSCORED_NOTE
    s2 = _setup(GENERATED)
    result2, export2, _ = search(s2, config)
    meta2 = magi_metadata(s2, result2, export2, magi_tables(s2, result2, export2, config, "b"), config, tmp_path / "n")
    assert "unscored_trials" not in meta2["magi_subset"]
