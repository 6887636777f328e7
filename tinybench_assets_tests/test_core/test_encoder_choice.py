"""The encoder choice per scenario (core/routing/encoder_choice.py, defs/encoder_pick.py): MiniLM for few questions,
else a kNN check on a sample of training questions; test questions never change it."""

import hashlib
from types import SimpleNamespace

import numpy as np
import pandas as pd

from tinybench_assets.core.routing import encoder_choice as choice
from tinybench_assets.defs import encoder_pick
from tinybench_assets.io.store import Store


def clustered(n=400, models=5, seed=0):
    """Questions in 8 topics; each model is good on some topics. (informative embeddings, noise embeddings, Y)."""
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, 8, n)
    skill = rng.uniform(0.1, 0.9, (8, models))
    Y = (rng.uniform(size=(n, models)) < skill[topic]).astype(float)
    centres = rng.normal(size=(8, 32))
    good = centres[topic] + 0.3 * rng.normal(size=(n, 32))
    noise = rng.normal(size=(n, 32))
    unit = lambda E: (E / np.linalg.norm(E, axis=1, keepdims=True)).astype(np.float32)  # noqa: E731
    return unit(good), unit(noise), Y


def test_minilm_pays_only_where_its_neighbours_predict_better():
    good, noise, Y = clustered()
    assert choice.compare(noise, good, Y).minilm_pays  # "MiniLM" informative, "static" noise
    check = choice.compare(good, good, Y)
    assert not check.minilm_pays and check.diff == 0  # as good: the static one
    assert not choice.compare(good, noise, Y).minilm_pays


def test_the_sample_depends_only_on_the_training_ids():
    ids = [f"q{i}" for i in range(2000)]
    s = choice.training_sample(ids, 100)
    assert len(s) == 100 and list(s) == sorted(s)
    shuffled = list(np.random.default_rng(0).permutation(ids))
    assert {ids[i] for i in s} == {shuffled[i] for i in choice.training_sample(shuffled, 100)}


class FakeEncoder:
    """A deterministic encoder that records what it embedded: topic words make similar vectors."""

    def __init__(self, encoder_id, sharp):
        self.encoder_id, self.sharp, self.seen = encoder_id, sharp, []

    def encode(self, texts, log=None):
        self.seen += list(texts)
        out = []
        for t in texts:
            topic = int(t.split()[1])
            rng = np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16))
            v = rng.normal(size=32) + (np.eye(32)[topic] * 3 if self.sharp else 0)
            out.append(v / np.linalg.norm(v))
        return np.asarray(out, dtype=np.float32)


def _scenario(n, test_text="topic {t} test question {i}", flip=False, seed=0):
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, 8, n)
    split = np.where(np.arange(n) % 5 == 0, "test", "train")
    text = [
        (test_text if s == "test" else "topic {t} question {i}").format(t=t, i=i)
        for i, (t, s) in enumerate(zip(topic, split))
    ]
    skill = np.random.default_rng(1).uniform(0.1, 0.9, (8, 4))
    Y = (rng.uniform(size=(n, 4)) < skill[topic]).astype(float)
    if flip:
        Y[split == "test"] = 1 - Y[split == "test"]
    q = pd.DataFrame({"item": [f"i{i}" for i in range(n)], "text": text, "split": split})
    return q, dict(zip(q["item"], Y))


def _pick(tmp_path, monkeypatch, q, answers, sharp_minilm=True):
    static, dense = FakeEncoder("static:fake@1", sharp=False), FakeEncoder("minilm-fake", sharp=sharp_minilm)
    monkeypatch.setattr(encoder_pick.StaticEncoder, "ensure", classmethod(lambda cls, **kw: static))
    monkeypatch.setattr(encoder_pick, "training_answers", lambda db, key, items: np.vstack([answers[i] for i in items]))
    resource = SimpleNamespace(model_name="auto", num_threads=1, get=lambda: dense)
    pick = encoder_pick.pick_encoder(Store(tmp_path / "tb.duckdb"), "b.s", q, resource)
    return pick, static, dense


def test_few_questions_take_minilm_without_a_check(tmp_path, monkeypatch):
    q, answers = _scenario(300)
    pick, static, dense = _pick(tmp_path, monkeypatch, q, answers)
    assert pick.encoder is dense and pick.rule.startswith("few questions") and not static.seen and not dense.seen


def test_the_check_picks_minilm_where_it_pays_and_static_where_not(tmp_path, monkeypatch):
    q, answers = _scenario(2500)
    pick, static, dense = _pick(tmp_path, monkeypatch, q, answers)
    assert pick.encoder is dense and pick.check["minilm_pays"] and pick.check["n"] == choice.SAMPLE
    pick2, static2, _ = _pick(tmp_path / "b", monkeypatch, q, answers, sharp_minilm=False)
    assert pick2.encoder is static2 and not pick2.check["minilm_pays"]


def test_test_questions_never_change_the_choice(tmp_path, monkeypatch):
    """Leakage: other texts and answers on the test questions give the same sample, figures and verdict, and the
    encoders never see a test question during the choice."""
    q, answers = _scenario(2500)
    q2, answers2 = _scenario(2500, test_text="completely different {i} text {t}", flip=True)
    pick, static, dense = _pick(tmp_path / "a", monkeypatch, q, answers)
    pick2, _, _ = _pick(tmp_path / "b", monkeypatch, q2, answers2)
    assert pick.check == pick2.check and pick.rule == pick2.rule
    tests = set(q.loc[q["split"] == "test", "text"])
    assert not tests & set(static.seen) and not tests & set(dense.seen)


def test_a_named_encoder_is_used_as_named(tmp_path, monkeypatch):
    q, answers = _scenario(2500)
    dense = FakeEncoder("local:my-model", sharp=True)
    resource = SimpleNamespace(model_name="/models/my-model", num_threads=1, get=lambda: dense)
    pick = encoder_pick.pick_encoder(Store(tmp_path / "tb.duckdb"), "b.s", q, resource)
    assert pick.encoder is dense and pick.rule.startswith("named") and not dense.seen
