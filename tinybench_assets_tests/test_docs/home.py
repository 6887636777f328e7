"""The small project the docs examples run in: real slices of ../shared/data landed as a user would land them, then
``tinybench run-all --no-seed`` (the README's main job, on less data), plus the two files a user brings: a new model's
answers to the anchors and a file of questions to route.

- openllm: 12 models x arc + mmlu (a small leaderboard: anchors, estimators and a tiny benchmark from
  leave-family-out cross-validation).
- routerdc: mmlu, 80 training and 40 test questions (a router without costs).
- routerbench: mbpp, 80 training and 40 test questions with per-question dollar costs (a router with costs).

``answers.csv`` holds the answers of an openllm model the leaderboard does not hold (the first one after the board's
12 that answered every anchor), to the anchors the run exported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from tinybench_assets import paths
from tinybench_assets.testing.openllm_slice import write_openllm_slice

ROOT = paths.PROJECT_ROOT
BOARD_MODELS = 12
SCENARIOS = ("arc", "mmlu")
QUESTIONS = (
    "Which planet in the solar system has the largest mass? A. Earth B. Jupiter C. Mars D. Venus",
    "What is 17 multiplied by 23?",
)


def env(home: Path) -> dict[str, str]:
    """The environment of a user's shell in ``home`` (what scripts/env.sh sets, pointed at the home)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("TINYBENCH_", "DAGSTER_", "PYTEST_"))}
    e.update(
        DAGSTER_HOME=str(home / ".dagster_home"),
        TINYBENCH_DUCKDB=str(home / "data" / "tinybench.duckdb"),
        TINYBENCH_INCOMING=str(home / "data" / "incoming"),
        TINYBENCH_QUARANTINE=str(home / "data" / "quarantine"),
        TINYBENCH_ARTIFACTS=str(home / "data" / "artifacts"),
        TINYBENCH_DEFAULT_DATA=str(home / "seed"),
        TINYBENCH_SCENARIO_JOBS="1",
        TINYBENCH_TORCH_THREADS="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONHASHSEED="0",
    )
    return e


def _slice_rows(src: Path, dst: Path, n: int) -> None:
    if src.suffix == ".json":
        dst.write_text(json.dumps(json.loads(src.read_text())[:n]))
    else:
        pd.read_csv(src).head(n).to_csv(dst, index=False)


def land(seed: Path) -> None:
    """The slices, in the layout of ../shared/data (the home's default data: a plain ``run-all`` seeds the same)."""
    shared = Path(paths.default_data_dir())
    write_openllm_slice(seed, n_models=BOARD_MODELS, scenarios=SCENARIOS, common=True)
    for board, names in (
        ("routerdc", ("mmlu_train.json", "mmlu_test.json")),
        ("routerbench", ("mbpp_train.csv", "mbpp_test.csv")),
    ):
        (seed / board).mkdir(parents=True, exist_ok=True)
        for name in names:
            _slice_rows(shared / board / name, seed / board / name, 80 if "train" in name else 40)


def new_model_answers(home: Path) -> dict[str, float]:
    """A model outside the board, its 0/1 answers to every exported anchor."""
    from tinybench_assets.core.tiny_benchmark import load_artifact

    art = load_artifact(home / "data" / "artifacts" / "openllm")
    anchors = {s: art["scenarios"][s]["anchors"]["items"] for s in art["scenario_order"]}
    shared = Path(paths.default_data_dir()) / "openllm"
    resp = pd.concat(pd.read_parquet(shared / f"{s}.responses.parquet") for s in SCENARIOS)
    board = set(pd.read_parquet(home / "seed" / "openllm" / "arc.responses.parquet", columns=["model"])["model"])
    want = {it for items in anchors.values() for it in items}
    have = resp[resp["item"].isin(want)].dropna(subset=["score"])
    counts = have.groupby("model")["item"].nunique()
    model = next(m for m in sorted(counts.index) if m not in board and counts[m] == len(want))
    rows = have[have["model"] == model]
    return {r.item: float(r.score) for r in rows.itertuples()}


def build(home: Path) -> Path:
    """The home, ready for the examples; raises with run-all's output when the main job fails."""
    (home / ".dagster_home").mkdir(parents=True)
    shutil.copy(ROOT / "dagster.yaml.template", home / ".dagster_home" / "dagster.yaml")
    (home / ".venv").symlink_to(ROOT / ".venv")
    land(home / "seed")
    e = env(home)
    cmd = [str(ROOT / ".venv" / "bin" / "tinybench"), "run-all"]  # seeds data/incoming from the home's default data
    r = subprocess.run(cmd, cwd=home, env=e, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(
            f"the docs' project home: run-all exited {r.returncode}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
        )
    (home / "run_all.log").write_text(r.stdout + r.stderr)
    answers = new_model_answers(home)
    (home / "answers.csv").write_text("item,score\n" + "".join(f"{k},{v:g}\n" for k, v in sorted(answers.items())))
    (home / "questions.csv").write_text("id,question\n" + "".join(f'q{i},"{q}"\n' for i, q in enumerate(QUESTIONS)))
    return home


if __name__ == "__main__":  # build one by hand: python -m tinybench_assets_tests.test_docs.home /tmp/docs_home
    print(build(Path(sys.argv[1])))
