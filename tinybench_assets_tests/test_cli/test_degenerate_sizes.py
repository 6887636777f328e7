"""Degenerate leaderboards land and run without a traceback: a 2-model, 1-item long table and a 3-question wide table
with thousands of model columns. Every asset that needs more says so in a `skipped` note, and run-all's summary counts
failed and skipped assets instead of calling everything up to date."""

from pathlib import Path

import numpy as np
import pandas as pd

from tinybench_assets import paths
from tinybench_assets.cli import main


def test_tiny_and_lopsided_leaderboards_are_skipped_with_notes_not_failed(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"  # this project's own Dagster instance
    home.mkdir()
    (home / "dagster.yaml").write_text((paths.PROJECT_ROOT / "dagster.yaml.template").read_text())
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    incoming = Path(paths.incoming_dir())
    (incoming / "pair").mkdir(parents=True)
    pd.DataFrame({"model": ["org/a", "org/b"], "scenario": "quiz", "item": "q1", "score": [1.0, 0.0]}).to_csv(
        incoming / "pair" / "quiz.csv", index=False
    )
    rng = np.random.default_rng(0)
    wide = pd.DataFrame(
        {
            "sample_id": ["w1", "w2", "w3"],
            "prompt": ["one?", "two?", "three?"],
            **{f"org/m{k}": rng.integers(0, 2, 3).astype(float) for k in range(3000)},
        }
    )
    (incoming / "wide").mkdir()
    wide.to_csv(incoming / "wide" / "exam.csv", index=False)

    assert main(["run-all", "--no-seed"]) == 0
    out = capsys.readouterr().out
    summary = next(line for line in out.splitlines() if "leaderboard(s) up to date" in line)
    assert "2 of 2 scenario partition(s) and 2 of 2 leaderboard(s) up to date" in summary and "0 failed" in summary
    assert "skipped irt_model[pair.quiz]: too small for an IRT fit: 2 training model(s) x 1 answered item(s)" in out
    assert (
        "training model(s) x 3 answered item(s)"
        in out.split("skipped irt_model[wide.exam]: too small for an IRT fit: ")[1]
    )
    assert (
        "skipped irt_joint[pair]" in out and "skipped anchor_sets[wide]" in out and "skipped magi_subset[wide]" in out
    )
    assert "min_items=20" in out  # the wide leaderboard's 3 questions: no pool to choose anchors from
    assert main(["run-all", "--no-seed"]) == 0  # the second run finds nothing to do
    assert "0 asset materialization(s)" in capsys.readouterr().out
