"""RouterDC JSON drops: a ``.json`` file in the landing folder holding a list of ``{"question": str, "scores":
{model: score}}`` records, one per question.

The scenario and the train/test split come from the file name (``mmlu_train.json`` -> ``mmlu``, ``train``;
``gsm8k-test.json`` -> ``gsm8k``, ``test``; without a split suffix the whole stem is the scenario). Item ids are
``<scenario>.<split>.<record>`` (``<scenario>.<record>`` without a split), record counted from 0. Every score must
be a number in [0, 1]; a record without ``question`` or a non-empty ``scores`` object is an error naming the record.
Scores binarize with ``auto`` when every one is a multiple of 0.1 (sampled accuracy), else with ``positive`` (a
non-zero score is the probability of the gold choice). :mod:`tinybench_assets.io.drops`'s ``read_drop`` sends a
``.json`` file here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .drop_types import ROUTERDC_NAME_RE, Drop, DropError, clean_name


def routerdc_scenario(path: Path) -> tuple[str, str | None]:
    """(scenario, split) of a RouterDC JSON drop from its file name (``mmlu_train.json`` -> mmlu, train)."""
    m = ROUTERDC_NAME_RE.match(Path(path).stem)
    return (clean_name(m["scenario"]), m["split"].lower()) if m else (clean_name(Path(path).stem), None)


def read_routerdc(path: Path, leaderboard: str, sha: str) -> Drop:
    """Read and validate a RouterDC JSON drop (see the module docstring); raises DropError."""
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DropError(path, f"unreadable JSON ({exc})") from exc
    if not isinstance(records, list):
        raise DropError(
            path, f"unknown format: expected a JSON list of {{question, scores}} records, got {type(records).__name__}"
        )
    if not records:
        raise DropError(path, "empty file: the JSON list has no records")
    scenario, split = routerdc_scenario(path)
    models, items, texts, rows = [], [], [], []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict) or "question" not in rec or "scores" not in rec:
            raise DropError(
                path,
                "record lacks 'question' or 'scores'",
                row=i + 1,
                column="question" if isinstance(rec, dict) and "question" not in rec else "scores",
            )
        if not isinstance(rec["scores"], dict) or not rec["scores"]:
            raise DropError(path, "'scores' must be a non-empty {model: score} object", row=i + 1, column="scores")
        item = f"{scenario}.{split}.{i}" if split else f"{scenario}.{i}"
        items.append(item)
        texts.append(str(rec["question"]))
        for model, s in rec["scores"].items():
            if s is None or not isinstance(s, (int, float)) or isinstance(s, bool) or np.isnan(s):
                raise DropError(path, f"score for model {model!r} is {s!r}, not a number", row=i + 1, column="scores")
            if s < 0 or s > 1:
                raise DropError(path, f"score {s!r} for model {model!r} outside [0, 1]", row=i + 1, column="scores")
            models.append(model)
            rows.append((item, float(s)))
    drop = Drop(path=path, leaderboard=leaderboard, format="routerdc_json", sha256=sha)
    drop.responses = pd.DataFrame(
        {
            "leaderboard": leaderboard,
            "scenario": scenario,
            "subscenario": scenario,
            "item": [r[0] for r in rows],
            "model": models,
            "score": [r[1] for r in rows],
        }
    )
    drop.items = pd.DataFrame(
        {
            "leaderboard": leaderboard,
            "scenario": scenario,
            "subscenario": scenario,
            "item": items,
            "text": texts,
            "split": split,
        }
    )
    # Multiple choice: a non-zero score is the probability of the gold choice -> correct iff score > 0.
    # Sampled accuracy (gsm8k): every score is a multiple of 1/k -> the tutorial threshold.
    s = drop.responses["score"].to_numpy()
    on_grid = np.allclose(s * 10, np.round(s * 10), atol=1e-9)
    drop.binarize_rules = {scenario: "auto" if on_grid else "positive"}
    return drop
