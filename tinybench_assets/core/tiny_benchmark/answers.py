"""A new model's answers to the anchors: reading them from a file (:func:`read_answers`), checking every
score, and laying them out per scenario in the artifact's anchor order (``_prepare_answers``)."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Iterable

import numpy as np


class AnswerError(ValueError):
    """The answers are unusable: unknown or missing items, scores that are not numbers in [0, 1], empty, ..."""


def _score(value, where: str) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        x = float(value)
    elif isinstance(value, str):
        if not value.strip():
            raise AnswerError(f"{where}: empty score (leave out the item instead of an empty score)")
        try:
            x = float(value)
        except ValueError:
            raise AnswerError(f"{where}: score {value!r} is not a number") from None
    else:
        raise AnswerError(f"{where}: score {value!r} is not a number")
    if not math.isfinite(x):
        raise AnswerError(f"{where}: score {value!r} is not a finite number")
    if not 0.0 <= x <= 1.0:
        raise AnswerError(f"{where}: score {x:g} is outside [0, 1] (binarize it as the leaderboard does)")
    return x


def _no_dups(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise AnswerError(f"item {k!r} appears twice")
        seen[k] = v
    return seen


def read_answers(path) -> dict[str, float]:
    """A new model's answers from a file: {item id: score in [0, 1]}.

    Accepted: CSV with a header holding ``item`` and ``score`` columns (others are ignored), a JSON object
    ``{item: score}``, or a JSON list ``[{"item": ..., "score": ...}, ...]``. Errors (AnswerError) name the file
    and the row or entry.
    """
    path = Path(path)
    if not path.is_file():
        raise AnswerError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise AnswerError(f"{path}: not a UTF-8 text file ({e})") from None
    if not text.strip():
        raise AnswerError(f"{path}: the file is empty")
    out: dict[str, float] = {}
    if path.suffix.lower() == ".json" or text.lstrip()[:1] in "{[":
        try:
            data = json.loads(text, object_pairs_hook=_no_dups)
        except json.JSONDecodeError as e:
            raise AnswerError(f"{path}: not valid JSON ({e})") from None
        except AnswerError as e:
            raise AnswerError(f"{path}: {e}") from None
        if isinstance(data, dict):
            for k, v in data.items():
                out[str(k)] = _score(v, f"{path}: item {k!r}")
        elif isinstance(data, list):
            for i, rec in enumerate(data):
                where = f"{path}: entry {i}"
                if not isinstance(rec, dict) or "item" not in rec or "score" not in rec:
                    raise AnswerError(f"{where}: expected an object with 'item' and 'score'")
                k = str(rec["item"])
                if k in out:
                    raise AnswerError(f"{where}: item {k!r} appears twice")
                out[k] = _score(rec["score"], f"{where} (item {k!r})")
        else:
            raise AnswerError(f"{path}: expected a JSON object {{item: score}} or a list of {{item, score}} objects")
    else:
        reader = csv.DictReader(io.StringIO(text))
        fields = [f.strip().lower() for f in (reader.fieldnames or [])]
        if "item" not in fields or "score" not in fields:
            raise AnswerError(
                f"{path}: the CSV needs a header with 'item' and 'score' columns (found {reader.fieldnames})"
            )
        reader.fieldnames = fields
        for rec in reader:
            row = reader.line_num
            k = (rec.get("item") or "").strip()
            if not k:
                raise AnswerError(f"{path}, row {row}: empty item id")
            if k in out:
                raise AnswerError(f"{path}, row {row}: item {k!r} appears twice")
            out[k] = _score((rec.get("score") or "").strip(), f"{path}, row {row} (item {k!r})")
    if not out:
        raise AnswerError(f"{path}: no answers in the file")
    return out


def _few(xs: Iterable, k: int = 5) -> str:
    xs = list(xs)
    s = ", ".join(repr(x) for x in xs[:k])
    return s + (f", ... ({len(xs)} in all)" if len(xs) > k else "")


def _prepare_answers(art: dict, answers: dict, allow_missing: bool, allow_extra: bool):
    """Anchor answer arrays {scenario: (1, n_s) with NaN = unanswered}, answered scenarios and notes."""
    if answers is None or len(answers) == 0:
        raise AnswerError("no answers given")
    where = {}
    for s in art["scenario_order"]:
        for i, item in enumerate(art["scenarios"][s]["anchors"]["items"]):
            where[item] = (s, i)
    unknown = [k for k in answers if k not in where]
    notes = []
    if unknown:
        pool = {it for s in art["scenario_order"] for it in art["scenarios"][s]["items"]}
        in_pool = [k for k in unknown if k in pool]
        foreign = [k for k in unknown if k not in pool]
        if foreign or not allow_extra:
            msg = (
                f"{len(unknown)} answered item(s) are not anchors of the {art.get('leaderboard', '?')} tiny benchmark "
                f"(n={art['n']}): {_few(unknown)}"
            )
            if in_pool:
                msg += f"; {len(in_pool)} of them are pool items that are not anchors"
            if foreign:
                msg += f"; {len(foreign)} are not items of this leaderboard at all"
            raise AnswerError(msg + " (list the anchors with `tinybench anchors`)")
        notes.append(f"ignored {len(in_pool)} answered pool item(s) that are not anchors")
    Ya, answered = {}, []
    for s in art["scenario_order"]:
        items = art["scenarios"][s]["anchors"]["items"]
        y = np.full((1, len(items)), np.nan)
        for i, item in enumerate(items):
            if item in answers:
                y[0, i] = _score(answers[item], f"item {item!r}")
        k = int(np.isfinite(y).sum())
        if k == 0:
            notes.append(f"scenario {s!r}: no anchor answered, skipped")
        elif k < len(items):
            miss = [it for it, val in zip(items, y[0]) if not np.isfinite(val)]
            if not allow_missing:
                raise AnswerError(
                    f"scenario {s!r}: {len(miss)} of {len(items)} anchors not answered ({_few(miss, 3)}); "
                    "answer every anchor or allow missing ones (allow_missing=True / --allow-missing)"
                )
            notes.append(f"scenario {s!r}: {len(miss)} of {len(items)} anchors not answered; estimated from the rest")
            answered.append(s)
        else:
            answered.append(s)
        Ya[s] = y
    return Ya, answered, notes
