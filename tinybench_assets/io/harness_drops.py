"""lm-evaluation-harness per-sample output (``lm_eval --log_samples``) as drops and as one model's answers.

Layout, as the harness's ``--output_path`` writes it: ``<incoming>/<leaderboard>/<org__name>/samples_<task>_<timestamp>.jsonl``,
one folder per model (``org__name`` -> ``org/name``), one JSON object per line with ``doc_id``, ``doc``,
``arguments``, ``doc_hash`` and the task's metric per sample (a number or a string holding one).

* scenario: the task name (cleaned: ``metabench_gsm8k_secondary``);
* item: ``<task>.<doc_hash[:16]>``, stable across models and runs (``<task>.<doc_id>`` when a line has no
  ``doc_hash``);
* score: the task's metric, by this rule: ``TINYBENCH_HARNESS_METRIC`` when it names one (``acc_norm``, or per
  leaderboard ``myboard=acc_norm``, or per task ``myboard:arc_easy=acc_norm``, comma-separated); else the only metric
  field of the lines; else the first of :data:`METRIC_PREFERENCE` present; else the alphabetically first (noted);
* question text (for the router): the first of ``doc``'s ``question`` / ``sentence`` / ``query`` / ``text`` /
  ``prompt`` / ``problem``, else the first prompt in ``arguments``.

Several timestamps of one task for one model are several drops: they land in name order (oldest first), so the
latest wins every item both scored; the reader notes it. A bad line is an error naming the file, the line and the
field, and the file is quarantined like any other.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from .drop_types import ITEM_COLUMNS, Drop, DropError, clean_name, dedupe_responses

FILE_RE = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[0-9.\-:]+)\.jsonl$")
#: fields of a harness sample that are not metrics
SAMPLE_FIELDS = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "doc_hash",
    "prompt_hash",
    "target_hash",
    "filter",
    "metrics",
}
METRIC_PREFERENCE = ("acc", "exact_match", "acc_norm", "f1", "em", "mc2", "mc1", "pass@1", "bleu", "rouge1")
DOC_TEXT_FIELDS = ("question", "sentence", "query", "text", "prompt", "problem", "ctx", "input")
FORMAT = "harness_jsonl"


def is_harness_file(path: Path) -> bool:
    return FILE_RE.match(Path(path).name) is not None


def task_of(path: Path) -> tuple[str, str]:
    """(task, timestamp) of a samples file name."""
    m = FILE_RE.match(Path(path).name)
    if m is None:
        raise DropError(path, "not an lm-evaluation-harness samples file (expected samples_<task>_<timestamp>.jsonl)")
    return m["task"], m["stamp"]


def model_of(folder: Path) -> str:
    """The model of a harness output folder: ``org__name`` -> ``org/name``."""
    return folder.name.replace("__", "/")


def metric_override(leaderboard: str, task: str, env: str | None = None) -> str | None:
    """The metric ``TINYBENCH_HARNESS_METRIC`` names for this leaderboard and task (module docstring), or None."""
    spec = os.environ.get("TINYBENCH_HARNESS_METRIC", "") if env is None else env
    found = {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        where, _, metric = part.rpartition("=")
        board, _, t = where.partition(":")
        found[(board or None, t or None)] = metric.strip()
    for key in ((leaderboard, task), (leaderboard, None), (None, None)):
        if key in found:
            return found[key]
    return None


def choose_metric(fields: set[str], leaderboard: str, task: str) -> tuple[str, str]:
    """(metric, why) for the metric fields seen in a file (module docstring's rule)."""
    chosen = metric_override(leaderboard, task)
    if chosen:
        return chosen, "TINYBENCH_HARNESS_METRIC"
    if len(fields) == 1:
        return next(iter(fields)), "the only metric field"
    for m in METRIC_PREFERENCE:
        if m in fields:
            return m, f"first of {list(METRIC_PREFERENCE)} present (fields: {sorted(fields)})"
    if not fields:
        return "", "no metric field"
    return sorted(fields)[0], f"alphabetically first of {sorted(fields)} (set TINYBENCH_HARNESS_METRIC to choose)"


def _text(sample: dict) -> str | None:
    doc = sample.get("doc")
    if isinstance(doc, dict):
        for f in DOC_TEXT_FIELDS:
            if isinstance(doc.get(f), str) and doc[f].strip():
                return doc[f]
    args = sample.get("arguments")
    if isinstance(args, dict):
        for v in args.values():
            if isinstance(v, dict):
                first = next(iter(v.values()), None)
                if isinstance(first, str):
                    return first
    elif isinstance(args, list) and args and isinstance(args[0], list) and args[0] and isinstance(args[0][0], str):
        return args[0][0]
    return None


def read_samples(path: Path, leaderboard: str = "default") -> tuple[pd.DataFrame, list[str]]:
    """One samples file as rows ``line, item, doc_id, doc_hash, score, text`` (score: the chosen metric as float),
    plus notes. Raises DropError naming the line and field of a bad sample."""
    path = Path(path)
    task, _ = task_of(path)
    samples = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                s = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DropError(path, f"line {i} is not JSON ({exc.msg})", row=i) from None
            if not isinstance(s, dict):
                raise DropError(path, f"line {i} is not a JSON object", row=i)
            samples.append((i, s))
    if not samples:
        raise DropError(path, "empty file: no samples")
    fields = set().union(*(set(s) - SAMPLE_FIELDS for _, s in samples))
    fields = {f for f in fields if not isinstance(samples[0][1].get(f), (dict, list))}
    metric, why = choose_metric(fields, leaderboard, task)
    if not metric:
        raise DropError(path, f"no metric field in the samples (fields: {sorted(samples[0][1])})")
    rows = []
    for i, s in samples:
        if metric not in s:
            raise DropError(path, f"line {i} has no {metric!r} field ({why})", row=i, column=metric)
        try:
            score = float(s[metric])
        except (TypeError, ValueError):
            raise DropError(path, f"line {i}: {metric} = {s[metric]!r} is not a number", row=i, column=metric) from None
        if not (np.isfinite(score) and 0.0 <= score <= 1.0):
            raise DropError(path, f"line {i}: {metric} = {score} is outside [0, 1]", row=i, column=metric)
        doc_hash = s.get("doc_hash")
        if isinstance(doc_hash, str) and doc_hash:
            key = doc_hash[:16]
        elif s.get("doc_id") is not None:
            key = str(s["doc_id"])
        else:
            raise DropError(path, f"line {i} has neither doc_hash nor doc_id", row=i, column="doc_hash")
        rows.append(
            {
                "line": i,
                "item": f"{task}.{key}",
                "doc_id": s.get("doc_id"),
                "doc_hash": doc_hash,
                "score": score,
                "text": _text(s),
            }
        )
    notes = [f"{path.name}: score = {metric!r} ({why}); items = {task}.<doc_hash[:16]>"]
    return pd.DataFrame(rows), notes


def _sibling_runs(path: Path, task: str) -> tuple[list[str], list[str]]:
    """(older, newer) file names of the same task in the same model folder."""
    mine = task_of(path)[1]
    older, newer = [], []
    for other in sorted(path.parent.glob("samples_*.jsonl")):
        m = FILE_RE.match(other.name)
        if m is None or other == path or m["task"] != task:
            continue
        (older if m["stamp"] < mine else newer).append(other.name)
    return older, newer


def read_harness(path: Path, leaderboard: str, sha: str) -> Drop:
    """A samples file as a drop of one model (its folder) on one scenario (its task)."""
    path = Path(path)
    task, _ = task_of(path)
    model = model_of(path.parent)
    rows, notes = read_samples(path, leaderboard)
    scen = clean_name(task)
    resp = pd.DataFrame(
        {
            "leaderboard": leaderboard,
            "scenario": scen,
            "subscenario": scen,
            "item": rows["item"].to_numpy(),
            "model": model,
            "score": rows["score"].to_numpy(),
        }
    )
    drop = Drop(path=path, leaderboard=leaderboard, format=FORMAT, sha256=sha)
    dup = resp.duplicated("item", keep=False).to_numpy()
    if dup.any():  # one document twice: the same score collapses (noted), different scores are an error
        lines = rows["line"].to_numpy()
        try:
            drop.responses = dedupe_responses(resp, path)
        except DropError:
            item = resp["item"].to_numpy()[dup][0]
            at = lines[resp["item"].to_numpy() == item]
            raise DropError(
                path,
                f"document {item!r} scored twice with different values (lines {', '.join(map(str, at[:5]))})",
                row=int(at[1]),
            ) from None
        notes.append(f"{int(dup.sum() - resp[dup]['item'].nunique())} repeated document(s) collapsed")
    else:
        drop.responses = resp
    texts = rows.dropna(subset=["text"]).drop_duplicates("item")
    if len(texts):
        drop.items = pd.DataFrame(
            {
                "leaderboard": leaderboard,
                "scenario": scen,
                "subscenario": scen,
                "item": texts["item"].to_numpy(),
                "text": texts["text"].astype(str).to_numpy(),
                "split": None,
            }
        )[ITEM_COLUMNS]
    older, newer = _sibling_runs(path, task)
    if newer:
        notes.append(
            f"a later run of {task} for {model} ({newer[-1]}) lands after this one and wins every item both scored"
        )
    if older:
        notes.append(
            f"this run of {task} for {model} lands after {len(older)} older one(s) ({older[-1]}) and wins "
            "every item both scored"
        )
    drop.binarize_rules = {scen: "auto"}
    drop.notes = notes
    return drop


def read_answers_folder(path: Path) -> dict[str, float]:
    """One model's answers from a samples file or a folder of them: {item: score}, items named as the drops name
    them; where several runs of a task are there, the latest wins."""
    path = Path(path)
    files = sorted(path.glob("samples_*.jsonl")) if path.is_dir() else [path]
    if not files:
        raise DropError(path, "no samples_<task>_<timestamp>.jsonl file in the folder")
    answers: dict[str, float] = {}
    for f in sorted(files, key=lambda f: task_of(f)[1]):  # oldest first: the latest run wins
        rows, _ = read_samples(f, f.parent.parent.name)  # <leaderboard>/<org__name>/samples_*.jsonl
        answers.update(zip(rows["item"], rows["score"].astype(float)))
    return answers


def harness_selection(items: list[str], folder: Path) -> tuple[dict[str, list[int]], list[str]]:
    """What ``lm_eval --samples`` needs to run just ``items`` (ids ``<task>.<doc_hash[:16]>``): {task: [doc_id, ...]},
    read from a model folder of samples files that covers them (any model's full run); plus the items it lacks."""
    where: dict[str, tuple[str, int]] = {}
    for f in sorted(Path(folder).glob("samples_*.jsonl")):
        task = task_of(f)[0]
        rows, _ = read_samples(f, f.parent.parent.name)
        for item, doc_id in zip(rows["item"], rows["doc_id"]):
            if doc_id is not None and not (isinstance(doc_id, float) and np.isnan(doc_id)):
                where[item] = (task, int(doc_id))
    out: dict[str, list[int]] = {}
    for item in items:
        if item in where:
            task, doc_id = where[item]
            out.setdefault(task, []).append(doc_id)
    return {t: sorted(set(ids)) for t, ids in out.items()}, [i for i in items if i not in where]
