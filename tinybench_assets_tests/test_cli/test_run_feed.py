"""What run-all prints while its steps run (issue 52): the assets' log lines read from the Dagster event log as they
land, a heartbeat for a step that says nothing, and the end of a long step (cli/run_feed.py); on a tiny job, then on a
small real slice through `tinybench run-all` (scenario partitions in worker processes, the leaderboard after them)."""

import json
import os
import re
import subprocess
import time
from pathlib import Path

import dagster as dg
import pytest

from tinybench_assets import paths
from tinybench_assets.cli.run_feed import RUN_ALL_TAG, RunFeed
from tinybench_assets.io.store import Store
from tinybench_assets.testing import reliability_data as rd

pytestmark = pytest.mark.timeout(600)


@dg.asset
def slow(context: dg.AssetExecutionContext) -> None:
    context.log.info("__ASSET_JOB: first line")  # the partition (here the job's name) that begins a line is left out
    time.sleep(1.5)  # the heartbeat is 0.4 s: several of them
    context.log.info("second line\nover two lines")


@dg.asset(deps=[slow])
def broken(context: dg.AssetExecutionContext) -> None:
    raise dg.Failure("no data for this")


def _feed_lines(heartbeat_s: float = 0.4) -> list:
    lines = []
    job = dg.Definitions(assets=[slow, broken]).resolve_implicit_global_asset_job_def()
    with dg.instance_for_test() as instance:
        job.execute_in_process(instance=instance, tags={RUN_ALL_TAG: "another run-all"}, raise_on_error=False)
        with RunFeed(instance, {RUN_ALL_TAG: "this one"}, say=lines.append, heartbeat_s=heartbeat_s, poll_s=0.05):
            job.execute_in_process(instance=instance, tags={RUN_ALL_TAG: "this one"}, raise_on_error=False)
    return lines


def test_feed_prints_the_lines_a_heartbeat_and_the_failure():
    lines = _feed_lines()
    part = "__ASSET_JOB"  # an unpartitioned run: its job's name stands for the partition
    said = [ln for ln in lines if " running for " not in ln]
    assert said[:2] == [f"  {part} slow: first line", f"  {part} slow: second line over two lines"], lines
    assert re.fullmatch(rf"  {part} slow done in [12] s", said[2]), lines  # a step longer than the heartbeat
    assert said[3] == f"  {part} broken FAILED after 0 s: dagster._core.definitions.events.Failure: no data for this"
    beats = [ln for ln in lines if ln.startswith(f"  {part}: slow running for ")]
    assert 2 <= len(beats) <= 6, lines  # about every 0.35-0.4 s of the 1.5 s without a line, none after it ended
    assert lines.index(beats[0]) < lines.index(said[1])  # while the step ran
    assert not [ln for ln in lines if "broken running" in ln]  # a quick step: no heartbeat
    assert len(lines) == len(said) + len(beats)  # nothing of the other run-all's run


def _routerdc_slice(root, n_train: int = 80, n_test: int = 20) -> dict:
    """Two RouterDC scenarios (question text, 7 models), the first questions of each file: a project for run-all."""
    src, dst = Path(paths.default_data_dir()) / "routerdc", root / "incoming" / "routerdc"
    dst.mkdir(parents=True)
    for sc in ("arc_challenge", "mmlu"):
        for split, n in (("train", n_train), ("test", n_test)):
            records = json.loads((src / f"{sc}_{split}.json").read_text())[:n]
            (dst / f"{sc}_{split}.json").write_text(json.dumps(records))
    return rd.project_env(root)


def _user_lines(instance, tag: str) -> set:
    """Every line an asset logged (INFO or higher) in the runs of one run-all, as the feed prints it."""
    out = set()
    for run in instance.get_runs(dg.RunsFilter(tags={RUN_ALL_TAG: tag})):
        part = run.tags.get("dagster/partition") or run.job_name
        for rec in instance.get_records_for_run(run.run_id, limit=100_000).records:
            e = rec.event_log_entry
            if e.dagster_event is None and e.level >= 20 and e.user_message:
                out.add(RunFeed._line(part, e.step_key, e.user_message))
    return out


def test_run_all_prints_progress_while_steps_run_and_the_same_lines_are_in_the_event_log(tmp_path):
    if not (Path(paths.default_data_dir()) / "routerdc").is_dir():
        pytest.skip("real data not found")
    env = {**_routerdc_slice(tmp_path), "TINYBENCH_HEARTBEAT_S": "1", "TINYBENCH_PROGRESS_S": "0.5"}
    env.pop("TINYBENCH_SCENARIO_JOBS", None)  # the default: scenario partitions in one-thread worker processes
    t0 = time.monotonic()
    done = subprocess.run(
        rd.run_all_cmd("--scenario-jobs", "2"), env=env, cwd=rd.ROOT, capture_output=True, text=True, timeout=600
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "2 scenario partition(s) to refresh in 2 processes at once" in out, out
    lines = out.splitlines()
    # progress with done / total while the embedding step runs, in both worker processes, and the heartbeat
    for key in ("routerdc.arc_challenge", "routerdc.mmlu"):
        assert f"  {key} question_embeddings: texts embedded: 100 of 100 (100 %)" in out, out
        assert any(ln.startswith(f"  {key}: irt_model running for ") for ln in lines), out
        assert f"  {key} router_accuracy: router CV fold 5/5 done" in out, out
    assert re.search(r"^  routerdc leaderboard_router: router CV fold 1/5 done", out, re.M), out
    # every line the feed printed from the runs (not its heartbeat or step ends) is a line of their event log
    instance = rd.instance_for(env)
    tag = {r.tags[RUN_ALL_TAG] for r in instance.get_runs()}
    assert len(tag) == 1, tag  # every run of the run-all, in its process and in the workers, carries its id
    logged = _user_lines(instance, tag.pop())
    fed = [ln for ln in lines if re.match(r"  routerdc\S* [a-z_]+: ", ln) and " running for " not in ln]
    assert len(fed) >= 10 and set(fed) <= logged, sorted(set(fed) - logged)
    # the steps say where their time went
    meta = {
        e.asset_materialization.asset_key.to_user_string(): e.asset_materialization.metadata
        for e in (
            instance.get_latest_materialization_event(dg.AssetKey(k))
            for k in ("question_embeddings", "router_accuracy", "irt_model")
        )
    }
    assert set(meta["question_embeddings"]["time_breakdown"].value) >= {"encode", "read questions", "store table"}
    assert "cross-validation (router choice)" in meta["router_accuracy"]["time_breakdown"].value
    assert {"choose D", "final fit"} <= set(meta["irt_model"]["time_breakdown"].value)
    assert Store(env["TINYBENCH_DUCKDB"]).partition_keys() == ["routerdc.arc_challenge", "routerdc.mmlu"]
    print(f"run-all on the slice: {time.monotonic() - t0:.0f} s, {len(lines)} lines ({os.cpu_count()} cores)")
