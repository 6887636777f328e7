"""MAGI and parallel-forms assets materialize on a real slice (40 openllm models, arc + mmlu) and store their tables."""

import json
from pathlib import Path

import dagster as dg
import numpy as np

from tinybench_assets.defs.assets import responses, subsets
from tinybench_assets.io.store import Store
from tinybench_assets_tests.test_defs.test_definitions import resources_for


def test_magi_assets_on_slice(landing, monkeypatch):
    artifacts = landing["root"] / "artifacts"
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(artifacts))
    instance = dg.DagsterInstance.ephemeral()
    res = resources_for(landing)
    assert dg.materialize([responses.landing_ingest], instance=instance, resources=res).success
    for key in ("openllm.arc", "openllm.mmlu"):
        assert dg.materialize(
            [responses.raw_responses, responses.response_matrix, responses.binarized_responses],
            partition_key=key,
            instance=instance,
            resources=res,
        ).success
    cfg = {
        "ops": {
            "magi_subset_assets": {
                "config": {
                    "n_trials": 6,
                    "n_voters": 12,
                    "keep_fraction_min": 0.15,
                    "keep_fraction_max": 0.3,
                    "max_fraction": 0.35,
                }
            },
            "parallel_forms": {"config": {"form_size": 60, "exclude_subscenarios": ["mmlu/astronomy"]}},
        }
    }
    result = dg.materialize(
        subsets.leaderboard_assets, partition_key="openllm", instance=instance, resources=res, run_config=cfg
    )
    assert result.success
    store = Store(landing["db"])
    n_items = 202  # arc 100 + mmlu 102
    ranks = store.query(
        "SELECT method, count(*) AS n, max(rank) AS r FROM magi_rankings WHERE leaderboard = 'openllm' GROUP BY 1"
    )
    assert len(ranks) == 6 and (ranks["n"] == n_items).all() and (ranks["r"] == n_items).all()
    sub = store.query("SELECT method, sum(in_subset::INT) AS k, sum(padded::INT) AS p FROM magi_subset GROUP BY 1")
    assert (sub["k"] > 0).all() and (sub["k"] < n_items).all() and (sub["p"] <= sub["k"]).all()
    scores = store.query("SELECT * FROM magi_scores WHERE method = 'ref_vs_voters'")
    ref = scores[scores.role == "reference"]
    assert len(ref) == 1 and ref["not_fair"].all()
    assert not scores[(scores.role == "voter")]["guesser"].any()
    pen = store.query("SELECT * FROM magi_voter_penalty WHERE method = 'irt'")
    assert np.allclose(pen["penalty_before"], 0.0)  # IRT rankings are fitted without the voters
    assert len(store.query("SELECT * FROM magi_penalty_curve")) > 0
    search = store.query("SELECT method, sum(chosen::INT) AS c, sum(pareto::INT) AS p FROM magi_search GROUP BY 1")
    assert (search["c"] == 1).all() and (search["p"] >= 1).all()
    trends = store.query("SELECT DISTINCT role FROM magi_score_trends")
    assert set(trends["role"]) == {"reference", "voter", "top"}
    export = json.loads((Path(artifacts) / "openllm" / "magi_subset.json").read_text())
    # export_method auto: recompute the rule from the stored tune figures (max_fraction 0.35 in this run's config)
    summ = store.query("SELECT * FROM magi_summary WHERE leaderboard = 'openllm' AND method <> 'full'")
    ok = summ[
        (summ.method != "ref_vs_voters")
        & (summ.tune_kendall_tau_nonvoters >= 0.3)
        & (summ.tune_fraction_of_pool <= 0.35 + 1e-12)
        & (summ.tune_mean_abs_voter_penalty <= 0.5)
        & (summ.tune_guesser_advantage <= 0)
    ]
    assert len(ok)  # this slice has qualifying subsets (else the rule's fallback would be under test)
    assert export["method"] == ok.sort_values("tune_top10_std", ascending=False).iloc[0]["method"]
    assert export["method"] != "ref_vs_voters" and export["items"] and "scoring_rule" in export
    marked = store.query("SELECT DISTINCT method FROM magi_subset WHERE exported")
    assert list(marked["method"]) == [export["method"]]
    assert export["items"][0]["text"]  # item texts from the items table
    forms = store.query("SELECT * FROM parallel_forms WHERE leaderboard = 'openllm'")
    a, b = set(forms[forms.form == "A"]["item"]), set(forms[forms.form == "B"]["item"])
    assert len(a) == len(b) == 60 and not a & b
    strata = store.query("SELECT * FROM parallel_forms_strata")
    assert strata["subscenario"].str.startswith("mmlu/").any() and "arc" in set(strata["subscenario"])
    assert not forms["subscenario"].eq("mmlu/astronomy").any()
    assert (
        store.query("SELECT count(*) AS n FROM parallel_forms_strata WHERE subscenario = 'mmlu/astronomy'")["n"][0] == 0
    )
    stats = store.query("SELECT * FROM parallel_forms_stats")
    assert stats["l1_subscenario_a_b"].iloc[0] < 0.2 and stats["corr_pearson"].iloc[0] > 0.5
    meta = result.asset_materializations_for_node("magi_subset_assets")
    charts = [m for m in meta if "penalty_chart" in m.metadata]
    sub_meta = [m for m in meta if "exported_method" in m.metadata][0].metadata
    assert sub_meta["exported_method"].value == export["method"] and "tune" in sub_meta["export_rule"].value
    assert sum(sub_meta["exported_scenarios"].value.values()) == len(export["items"])
    # a misspelt export_method fails the run with a message naming it, before anything stored is replaced
    before = store.query("SELECT * FROM magi_subset ORDER BY method, item")
    artifact_text = (Path(artifacts) / "openllm" / "magi_subset.json").read_text()
    bad = {
        "ops": {
            "magi_subset_assets": {
                "config": {**cfg["ops"]["magi_subset_assets"]["config"], "export_method": "irt_info"}
            }
        }
    }
    failed = dg.materialize(
        [subsets.magi_subset_assets],
        partition_key="openllm",
        instance=instance,
        resources=res,
        run_config=bad,
        raise_on_error=False,
        selection=[subsets.magi_subset_assets],
    )
    assert not failed.success
    errors = [e.event_specific_data.error.to_string() for e in failed.all_events if e.is_step_failure]
    assert errors and "export_method 'irt_info'" in errors[0] and "irt_information" in errors[0]
    assert store.query("SELECT * FROM magi_subset ORDER BY method, item").equals(before)
    assert (Path(artifacts) / "openllm" / "magi_subset.json").read_text() == artifact_text
    assert charts and len(charts[0].metadata["penalty_chart"].value) < 200_000


def test_every_magi_asset_has_a_description_and_the_magi_group():
    specs = [spec for a in subsets.leaderboard_assets for spec in a.specs]
    names = {spec.key.to_user_string() for spec in specs}
    assert names == set(subsets.MAGI_ASSETS) | {"parallel_forms"}
    for spec in specs:
        assert spec.group_name == "magi" and spec.description and len(spec.description) > 30, spec.key
