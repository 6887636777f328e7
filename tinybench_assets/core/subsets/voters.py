"""Voters, guessers, chance levels and model families for MAGI subsets.

Pure numpy/pandas. The voter rule (documented in docs/magi.md):

* a model's *family* is its base architecture x size (x MoE) from the leaderboard's aggregate table
  (``arch``, ``size``, ``moe``); when the table lacks the model, or says ``arch == "error"`` / size <= 0,
  the family comes from the model name (the name without organisation, lower-cased, with digits-only
  version numbers and fine-tune suffixes after the size token dropped, e.g. ``llama-2-7b``);
* a model whose id carries no family is its own family (:func:`own_family`): an id the reader generated for a file
  that names no models (a headerless 0/1 matrix: ``<scenario>[.<split>].model<i>``, a position in a file), and every
  model of a board that the rules above put in one family (:func:`one_family_each`);
* merges (the table's ``merged`` flag, or merge words in the name: merge, slerp, ties, dare, passthrough)
  and flagged models never vote, nor do *guessers* (models at or below chance on the pool);
* families are visited from the most to the least populated (ties by name) and up to
  ``per_family`` (3) representatives of each are taken: its best models by full score, then
  spread down the family (the best, then the family's quantiles), until ``n_voters`` (60) are chosen.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

CHANCE_BY_SCENARIO = {"arc": 0.25, "arc_challenge": 0.25, "mmlu": 0.25, "hellaswag": 0.25, "winogrande": 0.5}
MERGE_WORDS = re.compile(r"(merg|slerp|(^|[-_.])ties([-_.]|$)|(^|[-_.])dare([-_.]|$)|passthrough|frankenmerge)", re.I)
SIZE_TOKEN = re.compile(r"(\d+(?:\.\d+)?)\s*[bm](?![a-z])", re.I)
# the model ids io/matrix_drops.py generates for a matrix without model names: <scenario>[.<split>].model<i>
GENERATED_MODEL_ID = re.compile(r"^[^/]+\.model\d+$")


def chance_per_item(scenarios, choices: dict[str, float] | None = None) -> np.ndarray:
    """Expected score of a uniform random guesser per item, shape (n_items,).

    ``scenarios`` : array of str, shape (n_items,). Known multiple-choice scenarios (ARC, MMLU: 4 choices)
    get 1 / n_choices; anything else (generative GSM8K; TruthfulQA, whose stored prompts do not list the
    choices) gets 0. ``choices`` overrides or adds scenario -> chance.
    """
    table = {**CHANCE_BY_SCENARIO, **(choices or {})}
    return np.array([float(table.get(str(s), 0.0)) for s in scenarios])


def is_merge(name: str) -> bool:
    return bool(MERGE_WORDS.search(str(name).split("/")[-1]))


def family_from_name(name: str) -> str:
    """A base-family key from a Hugging Face id alone: name without the organisation, up to its size token."""
    base = str(name).split("/")[-1].lower()
    m = SIZE_TOKEN.search(base)
    if m:
        return base[: m.end()].rstrip("-_.") or base
    return re.split(r"[-_.]", base)[0] or base


def own_family(name: str) -> bool:
    """Whether a model id names no family: an id the reader generated (``combine.model0``,
    :func:`~tinybench_assets.io.matrix_drops.read_matrix`). Such an id is a row's position in one file; its stem is
    the file's scenario, shared by every model of the file, so the name rule would put the whole file in one
    family. Each such model is its own family instead."""
    return bool(GENERATED_MODEL_ID.match(str(name)))


def one_family_each(keys: pd.Series, own=None) -> pd.Series:
    """``keys`` (a family key per model, indexed by model), or ``own`` (default: the model ids) when the keys put
    two or more models in a single family.

    The rule for boards without family information: one family for the whole board says nothing about which models
    are near-twins (models named only by an anonymous stem, or a board of one author's variants of one base), and
    it leaves nothing to split: a grouped split puts every model on one side, leave-family-out cross-validation has
    no training models. Each model is then its own family, so splits and folds go by model, as a random split does;
    near-twins may sit on both sides, which is what one family could not prevent either. A board with two or more
    families keeps them."""
    if len(keys) < 2 or keys.nunique() > 1:
        return keys
    own = keys.index.astype(str) if own is None else own
    return pd.Series(list(own), index=keys.index, name=keys.name)


BASE_TOKEN = re.compile(
    r"(?<![a-z])(llama|mistral|mixtral|qwen|gemma|falcon|phi|yi|solar|deepseek|internlm)"
    r"[-_ ]?(\d+(?:\.\d+)?)?(?![a-z])",
    re.I,
)


def base_family(name: str) -> str | None:
    """The base model a fine-tune's name declares, as ``<base>[-<version>]-<size>``, or None when the name names
    no known base and size: ``cognitivecomputations/dolphin-2.9-llama3-8b`` and ``meta-llama/Meta-Llama-3-8B``
    both give ``llama-3-8b``; ``dolphin-2.6-mistral-7b`` and ``Mistral-7B-v0.1`` give ``mistral-7b``. Used to flag
    a reference's fine-tunes as not fair when the aggregate table does not know them (voters are unaffected)."""
    base = str(name).split("/")[-1].lower()
    size = SIZE_TOKEN.search(base)
    m = BASE_TOKEN.search(base[: size.start()] if size else "")
    if not (m and size):
        return None
    version = f"-{m.group(2)}" if m.group(2) else ""
    return f"{m.group(1).lower()}{version}-{size.group(1)}{size.group(0)[-1].lower()}"


def read_aggregate(path: str | Path | None) -> pd.DataFrame | None:
    """The leaderboard's aggregate table (name, arch, size, merged, moe, flagged, ...), or None when absent."""
    if path is None or not Path(path).is_file():
        return None
    return pd.read_csv(path)


def model_families(models, aggregate: pd.DataFrame | None = None, each: bool = True) -> pd.DataFrame:
    """Family, merge and flag per model.

    Returns a DataFrame indexed by model with columns ``family`` (str), ``merged`` (bool), ``flagged`` (bool),
    ``family_source`` ("aggregate" | "name" | "model": the model is its own family, :func:`own_family`, or, with
    ``each``, :func:`one_family_each` found a single family for the whole board).
    """
    models = list(models)
    agg = None
    if aggregate is not None and len(aggregate):
        agg = aggregate.drop_duplicates("name").set_index("name")
    rows = []
    for m in models:
        fam, src, merged, flagged = None, "name", is_merge(m), False
        if own_family(m):
            fam, src = str(m), "model"
        elif agg is not None and m in agg.index:
            r = agg.loc[m]
            arch = str(r.get("arch", "error"))
            try:
                size = float(r.get("size", -1))
            except (TypeError, ValueError):
                size = -1.0
            merged = merged or bool(r.get("merged", False))
            flagged = bool(r.get("flagged", False))
            if arch not in ("error", "nan", "None") and size > 0:
                moe = "-moe" if bool(r.get("moe", False)) else ""
                fam, src = f"{arch}-{size:.0f}b{moe}" if size >= 1 else f"{arch}-{size:.2f}b{moe}", "aggregate"
        rows.append(
            {
                "model": m,
                "family": fam or family_from_name(m),
                "merged": merged,
                "flagged": flagged,
                "family_source": src,
            }
        )
    out = pd.DataFrame(rows).set_index("model")
    if each and len(out):
        fam = one_family_each(out["family"])
        out.loc[fam.to_numpy() != out["family"].to_numpy(), "family_source"] = "model"
        out["family"] = fam
    return out


def guessers(Y: np.ndarray, chance: np.ndarray, z: float = 2.0) -> np.ndarray:
    """Models at or below chance on the pool, shape (n_models,) bool.

    A model is a guesser when its pool accuracy is at most the pool's chance level plus ``z`` binomial
    standard errors of a random guesser (z = 0: strictly at or below chance).
    ``Y`` : (n_models, n_items) 0/1, ``chance`` : (n_items,).
    """
    Y = np.asarray(Y, dtype=float)
    n = Y.shape[1]
    level = chance.mean()
    se = np.sqrt(np.sum(chance * (1 - chance))) / max(n, 1)
    return np.nanmean(Y, axis=1) <= level + z * se


def select_voters(
    models,
    full_score: np.ndarray,
    families: pd.DataFrame,
    guesser: np.ndarray,
    *,
    n_voters: int = 60,
    per_family: int = 3,
) -> np.ndarray:
    """Indices of the voters (sorted), following the module's rule.

    Parameters
    ----------
    models : list of str, length M.  full_score : (M,) real full-benchmark score (higher better; NaN allowed).
    families : model_families(models) frame.  guesser : (M,) bool.
    """
    models = list(models)
    fam = families.loc[models]
    ok = ~fam["merged"].to_numpy() & ~fam["flagged"].to_numpy() & ~np.asarray(guesser, bool)
    score = np.nan_to_num(np.asarray(full_score, dtype=float), nan=-np.inf)
    df = pd.DataFrame(
        {"i": np.arange(len(models)), "family": fam["family"].to_numpy(), "score": score, "model": models}
    )[ok]
    sizes = df.groupby("family").size().rename("n").reset_index().sort_values(["n", "family"], ascending=[False, True])
    chosen: list[int] = []
    for family in sizes["family"]:
        g = df[df.family == family].sort_values(["score", "model"], ascending=[False, True])
        k = min(per_family, len(g))
        # the family's best model, then models spread down its ranking (quantiles)
        pos = np.unique(np.round(np.linspace(0, len(g) - 1, k) if k > 1 else [0]).astype(int))
        pos = pos[: max(0, n_voters - len(chosen))]
        chosen.extend(g["i"].to_numpy()[pos].tolist())
        if len(chosen) >= n_voters:
            break
    return np.array(sorted(chosen), dtype=int)
