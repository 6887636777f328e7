"""run-all materializes only what is stale or missing (Dagster code and data versions): a second run with nothing
new materializes nothing, a changed drop refreshes its own partition and leaderboard, --force redoes everything."""

import json
import re
import shutil

import pytest

from tinybench_assets import cli, paths

pytestmark = pytest.mark.timeout(600)


def _run_all(capsys, *extra) -> tuple[int, str]:
    rc = cli.main(["run-all", "--no-seed", *extra])
    return rc, capsys.readouterr().out


def _materialized(out: str) -> dict[str, int]:
    """{partition or leaderboard: materializations} from run-all's per-partition lines."""
    found = {}
    for _kind, key, rest in re.findall(r"^\s+(scenario|leaderboard) (\S+)\s+ok in\s+[\d.]+ s\s+\((.*)\)$", out, re.M):
        found[key] = 0 if rest.startswith("fresh") else int(rest.split()[0])
    return found


@pytest.fixture()
def project(landing, tmp_path, monkeypatch):
    shutil.rmtree(landing["incoming"] / "openllm")  # RouterDC only: small, and two scenarios to tell apart
    # and a second leaderboard (a small synthetic one, no question text): a drop in one leaderboard must leave the other
    from tinybench_assets.testing import reliability_data as rd

    rd.write_table(
        rd.long_table(9, 30, scenario="mmlu", seed=4), landing["incoming"] / "twin" / "mmlu.parquet"
    )  # < 10 models: no estimation fits
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((paths.PROJECT_ROOT / "dagster.yaml.template").read_text())
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("TINYBENCH_INCOMING", str(landing["incoming"]))
    monkeypatch.setenv("TINYBENCH_DUCKDB", str(landing["db"]))
    monkeypatch.setenv("TINYBENCH_QUARANTINE", str(landing["quarantine"]))
    return landing


def test_warm_run_materializes_nothing_and_a_changed_drop_refreshes_only_its_partition(project, capsys):
    rc, cold = _run_all(capsys)
    assert rc == 0, cold
    first = _materialized(cold)
    assert set(first) == {"routerdc.gsm8k", "routerdc.mmlu", "routerdc", "twin.mmlu", "twin"}, cold
    assert all(n > 0 for n in first.values()), cold

    rc, warm = _run_all(capsys)
    assert rc == 0, warm
    assert "nothing new" in warm
    assert _materialized(warm) == {"routerdc.gsm8k": 0, "routerdc.mmlu": 0, "routerdc": 0, "twin.mmlu": 0, "twin": 0}, (
        warm
    )
    assert re.search(r"\b0 asset materialization", warm), warm

    # a new version of one drop: its scenario and its leaderboard refresh; the other scenario re-reads its own
    # (unchanged) drops at most, and nothing below raw_responses runs there
    path = project["incoming"] / "routerdc" / "gsm8k-train.json"
    recs = json.loads(path.read_text())
    path.write_text(json.dumps(recs[:-5]))
    rc, one = _run_all(capsys)
    assert rc == 0, one
    after = _materialized(one)
    # every asset of the changed scenario but model_prices, whose content (the leaderboard's prices) did not change
    assert after["routerdc.gsm8k"] == first["routerdc.gsm8k"] - 1, one
    assert after["routerdc"] > 0, one
    assert after["routerdc.mmlu"] <= 1, one  # raw_responses at most (same content -> same data version)
    # the other leaderboard: its scenario re-reads its drops at most, its leaderboard assets stay as they are (Dagster
    # alone calls them stale: they read every scenario partition through an AllPartitionMapping; refresh.py corrects it)
    assert after["twin.mmlu"] <= 1 and after["twin"] == 0, one

    rc, forced = _run_all(capsys, "--force")
    assert rc == 0, forced
    assert _materialized(forced)["routerdc.mmlu"] == first["routerdc.mmlu"], forced


def test_code_versions_cover_every_asset_and_fail_on_a_missing_source(monkeypatch):
    from tinybench_assets.definitions import defs
    from tinybench_assets.orchestration import versions

    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        assert graph.get(key).code_version, f"{key.to_user_string()} has no code version"
    monkeypatch.setitem(versions.SOURCES, "broken", ("core/no_such_module.py",))
    with pytest.raises(FileNotFoundError, match="no_such_module"):
        versions.code_version("broken")
