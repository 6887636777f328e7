"""The landing sensor with build_sensor_context: new file, same file again, changed file, bad file."""
import json
import os

import dagster as dg
import pandas as pd

from tinybench_assets.defs.resources import LandingResource
from tinybench_assets.defs.sensors import landing_sensor


def _tick(landing, instance, cursor):
    ctx = dg.build_sensor_context(
        instance=instance, cursor=cursor,
        resources={"landing": LandingResource(incoming=str(landing["incoming"]), quarantine=str(landing["quarantine"]))},
    )
    return landing_sensor(ctx), ctx


def _apply(instance, result):
    for req in result.dynamic_partitions_requests:
        instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))


def test_new_same_changed_and_bad_files(landing):
    instance = dg.DagsterInstance.ephemeral()
    result, _ = _tick(landing, instance, None)
    assert isinstance(result, dg.SensorResult)
    by_job = {}
    for r in result.run_requests:
        by_job.setdefault(r.job_name, []).append(r.partition_key)
    assert sorted(by_job["refresh_scenario"]) == ["openllm.arc", "openllm.mmlu", "routerdc.gsm8k", "routerdc.mmlu"]
    assert by_job["ingest_landing"] == [None]
    added = {req.partitions_def_name: sorted(req.partition_keys) for req in result.dynamic_partitions_requests}
    assert added == {"scenarios": ["openllm.arc", "openllm.mmlu", "routerdc.gsm8k", "routerdc.mmlu"], "leaderboards": ["openllm", "routerdc"]}
    _apply(instance, result)
    cursor = result.cursor

    # the same files again: nothing to do
    again, _ = _tick(landing, instance, cursor)
    assert isinstance(again, dg.SkipReason)

    # touched but identical bytes: still nothing (the sha256 in the cursor decides)
    path = landing["incoming"] / "openllm" / "arc.responses.parquet"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    touched, _ = _tick(landing, instance, cursor)
    assert isinstance(touched, dg.SkipReason)

    # a changed file: only its partition is refreshed, no new partitions
    df = pd.read_parquet(path)
    df.assign(score=1 - df["score"]).to_parquet(path, index=False)
    changed, _ = _tick(landing, instance, cursor)
    keys = [r.partition_key for r in changed.run_requests if r.job_name == "refresh_scenario"]
    assert keys == ["openllm.arc"]
    assert changed.dynamic_partitions_requests == []
    # a run key per (partition, file version): the same change is never requested twice
    changed2, _ = _tick(landing, instance, cursor)
    assert [r.run_key for r in changed2.run_requests] == [r.run_key for r in changed.run_requests]
    cursor = changed.cursor

    # a new leaderboard registers new partitions
    (landing["incoming"] / "newlb").mkdir()
    pd.DataFrame({"model": ["a", "b"], "scenario": "quiz", "item": ["q1", "q1"], "score": [1, 0]}).to_csv(
        landing["incoming"] / "newlb" / "quiz.csv", index=False)
    new, _ = _tick(landing, instance, cursor)
    added = {req.partitions_def_name: list(req.partition_keys) for req in new.dynamic_partitions_requests}
    assert added == {"scenarios": ["newlb.quiz"], "leaderboards": ["newlb"]}
    cursor = new.cursor

    # a bad file: no partition run, but an ingest run that will quarantine it
    (landing["incoming"] / "newlb" / "broken.csv").write_text("model,scenario,item,score\na,quiz,q2,9\n")
    bad, _ = _tick(landing, instance, cursor)
    assert [r.job_name for r in bad.run_requests] == ["ingest_landing"]
    assert "newlb/broken.csv" in json.loads(bad.cursor)
