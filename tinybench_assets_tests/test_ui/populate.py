"""Populate a small store and Dagster instance for the browser test (run as a subprocess, so the
Definitions' default resources read the test's TINYBENCH_* variables and DAGSTER_HOME, as the webserver does).

    python -m tinybench_assets_tests.test_ui.populate

Writes a slice of the real openllm leaderboard (the first MODELS models of arc and mmlu) into
$TINYBENCH_INCOMING, ingests it, then materializes the foundation assets and irt_model of PARTITION with the
asset checks of those assets, through the project's own ``refresh_scenario`` job (runs recorded in the instance); and
one evaluation, ``EVALUATION``, through ``refresh_evaluation`` (a held-out model's answers to a simulated tiny benchmark
put in openllm's artifact folder: the 30-model slice exports none here).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tinybench_assets import paths

PARTITION = "openllm.arc"
SCENARIOS = ("arc", "mmlu")
MODELS = 30
ASSETS = ("raw_responses", "response_matrix", "binarized_responses", "irt_model")
EVALUATION = "openllm/held-out"
RUN_CONFIG = {
    "ops": {"irt_model": {"config": {"dims": [1, 2], "test_fraction": 0.25}}},
    "resources": {"torch_device": {"config": {"device": "cpu", "num_threads": 1}}},
}


def write_landing(incoming: Path) -> None:
    from tinybench_assets.testing.openllm_slice import write_openllm_slice

    write_openllm_slice(incoming, n_models=MODELS, scenarios=SCENARIOS)


def write_evaluation(incoming: Path, artifacts: Path) -> None:
    import numpy as np

    from tinybench_assets.core import tiny_benchmark as tb
    from tinybench_assets_tests.test_core.test_tiny_benchmark import answers_of, fitted, texts

    rm, test, pred = fitted(learned=False)
    art = tb.export_tiny_benchmark(pred, leaderboard="sim", n=5, item_texts=texts(rm))
    tb.save_artifact(art, pred, artifacts / "openllm")
    row = next(r for r in test if np.isfinite(rm.scores[r]).all())
    answers = answers_of(tb.load_artifact(artifacts / "openllm"), rm, row)
    path = incoming / "evaluations" / "openllm" / "held-out.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("item,score\n" + "".join(f"{k},{v:g}\n" for k, v in answers.items()))


def main() -> int:
    import dagster as dg

    from tinybench_assets.definitions import defs

    t0 = time.time()
    write_landing(Path(paths.incoming_dir()))
    instance = dg.DagsterInstance.get()
    repo = defs.get_repository_def()
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    res = repo.get_job("ingest_landing").execute_in_process(instance=instance, run_config=quiet, raise_on_error=False)
    if not res.success:
        print("ingest_landing failed", file=sys.stderr)
        return 1
    job = repo.get_job("refresh_scenario")
    selection = [dg.AssetKey(a) for a in ASSETS]
    res = job.execute_in_process(
        instance=instance,
        partition_key=PARTITION,
        asset_selection=selection,
        run_config={**RUN_CONFIG, **quiet},
        raise_on_error=False,
    )
    checks = [
        (e.asset_check_evaluation_data.check_name, e.asset_check_evaluation_data.passed)
        for e in res.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    write_evaluation(Path(paths.incoming_dir()), Path(paths.artifacts_dir()))
    instance.add_dynamic_partitions("evaluations", [EVALUATION])
    ev = repo.get_job("refresh_evaluation").execute_in_process(
        instance=instance, partition_key=EVALUATION, run_config=quiet, raise_on_error=False
    )
    print(
        f"populated {PARTITION} ({', '.join(ASSETS)}) and {EVALUATION} in {time.time() - t0:.1f} s; runs "
        f"{'ok' if res.success and ev.success else 'FAILED'}; checks {checks}",
        flush=True,
    )
    return 0 if res.success and ev.success else 1


if __name__ == "__main__":
    sys.exit(main())
