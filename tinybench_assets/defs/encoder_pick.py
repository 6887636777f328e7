"""What ``question_embeddings`` runs to pick a scenario's encoder and embed its questions with it.

With the encoder resource's ``model_name`` ``auto`` (the default) the encoder is chosen per scenario on training
questions only (core/routing/encoder_choice.py): MiniLM for few questions, else MiniLM where a sample check shows it
pays, the static encoder (io/static_encoder.py) otherwise. A named model (``all-MiniLM-L6-v2``, ``static``, a local
sentence-transformers folder) embeds every scenario.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tinybench_assets.core.routing import encoder_choice as choice
from tinybench_assets.io.embeddings import embed_cached
from tinybench_assets.io.static_encoder import StaticEncoder
from tinybench_assets.io.store import load_matrix

AUTO, STATIC = "auto", "static"


@dataclass
class Pick:
    """The encoder that embeds a scenario and why (``rule``, the sample check's figures where it ran)."""

    encoder: object
    rule: str
    check: dict = field(default_factory=dict)
    seconds: float = 0.0  # the check's embedding time (both encoders, the sample only)
    embedded: int = 0  # texts the check embedded (both encoders; cached ones not counted)

    def metadata(self) -> dict:
        out = {"encoder_rule": self.rule}
        if self.check:
            out["encoder_check"] = self.check
        return out


def named_encoder(resource) -> object:
    """The encoder a resource names outright (not ``auto``): ``static`` is the distilled one, anything else an
    ``Encoder`` (the packaged MiniLM or a local sentence-transformers folder)."""
    if resource.model_name == STATIC:
        return StaticEncoder.ensure(threads=resource.num_threads)
    return resource.get()


def training_answers(db, key: str, items) -> np.ndarray:
    """0/1 correctness (questions x models, NaN where a model has no answer) of ``items``, from the binarized matrix."""
    m = load_matrix(db, key, binarized=True)
    col = {it: j for j, it in enumerate(m.items)}
    Y = np.full((len(items), len(m.models)), np.nan)
    pos = [(i, col[it]) for i, it in enumerate(items) if it in col]
    if pos:
        rows, cols = map(list, zip(*pos))
        Y[rows] = np.asarray(m.scores, dtype=float)[:, cols].T
    return Y


def pick_encoder(db, key: str, q: pd.DataFrame, resource, log=None) -> Pick:
    """The scenario's encoder. ``q``: its questions with text (item, text, split); only rows whose split is not
    ``test`` are read."""
    if resource.model_name != AUTO:
        return Pick(named_encoder(resource), f"named by the encoder resource ({resource.model_name})")
    dense = resource.get()  # the packaged MiniLM with the resource's device, threads, batch size and precision
    if choice.few(len(q)):
        return Pick(dense, f"few questions ({len(q)} <= {choice.FEW_QUESTIONS}): MiniLM")
    train = q[q["split"] != "test"].reset_index(drop=True)
    sample = train.iloc[choice.training_sample(train["item"].tolist())].reset_index(drop=True)
    static = StaticEncoder.ensure(threads=resource.num_threads, log=log)
    texts = sample["text"].tolist()
    Es, st_s = embed_cached(db, static, texts, log=log)
    Em, st_m = embed_cached(db, dense, texts, log=log)
    check = choice.compare(Es, Em, training_answers(db, key, sample["item"].tolist()))
    verdict = "MiniLM pays" if check.minilm_pays else "MiniLM does not pay: static"
    rule = (
        f"{len(q)} questions > {choice.FEW_QUESTIONS}: kNN check on {check.n} training questions, Brier static "
        f"{check.brier_static:.4f} vs MiniLM {check.brier_minilm:.4f} (z {check.z:.2f}; MiniLM needs > {choice.Z}): "
        f"{verdict}"
    )
    if log:
        log(f"{key}: encoder {rule}")
    chosen = dense if check.minilm_pays else static
    return Pick(chosen, rule, check.to_dict(), st_s["seconds"] + st_m["seconds"], st_s["embedded"] + st_m["embedded"])
