"""The packaged sentence encoder loads offline; the DuckDB cache embeds each (encoder, text) once."""

import os

import numpy as np
import pytest

from tinybench_assets.io import embeddings
from tinybench_assets.io.embeddings import Encoder, embed_cached, load_cached, text_key
from tinybench_assets.io.store import Store


@pytest.fixture(scope="module")
def encoder():
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # set by conftest: no hub access at all
    return Encoder(device="cpu", num_threads=1, batch_size=8)


def test_encoder_loads_offline_and_embeds(encoder):
    E = encoder.encode(
        ["A cat sits on the mat.", "A kitten is sitting on a rug.", "Quarterly corporate tax filings are due."]
    )
    assert E.shape == (3, 384) and E.dtype == np.float32
    assert np.allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-5)
    assert E[0] @ E[1] > E[0] @ E[2] + 0.2
    assert encoder.encoder_id == "sentence-transformers/all-MiniLM-L6-v2"


def test_unknown_model_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="offline"):
        Encoder("no/such-model").model_path()


def test_cache_embeds_only_new_texts(tmp_path, encoder):
    store = Store(tmp_path / "tb.duckdb")
    texts = ["What is 2 + 2?", "Name the capital of France.", "What is 2 + 2?"]
    E1, st1 = embed_cached(store, encoder, texts)
    assert st1["embedded"] == 2 and st1["cached"] == 0 and st1["unique"] == 2 and E1.shape == (3, 384)
    assert np.allclose(E1[0], E1[2])
    E2, st2 = embed_cached(store, encoder, texts)
    assert st2["embedded"] == 0 and st2["cached"] == 2 and np.allclose(E1, E2, atol=1e-6)
    E3, st3 = embed_cached(store, encoder, texts + ["Who wrote Hamlet?"])
    assert st3["embedded"] == 1 and np.allclose(E3[:3], E1, atol=1e-6)
    fresh = encoder.encode(["Who wrote Hamlet?"])[0]
    assert np.allclose(E3[3], fresh, atol=1e-5)
    keys = [text_key(encoder.cache_id, t) for t in texts]
    assert np.allclose(load_cached(store, encoder.cache_id, keys), E1, atol=1e-6)
    with pytest.raises(KeyError, match="question_embeddings"):
        load_cached(store, encoder.cache_id, [text_key(encoder.cache_id, "never embedded")])
    # another encoder id never reuses these vectors
    assert text_key("local:other", texts[0]) != keys[0]


TEXTS = [
    "The field of psychology arose out of which of the following?\nA. Biochemistry\nB. Physics\nC. Philosophy",
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many "
    "clips did Natalia sell altogether in April and May?",
    "Which gas makes up most of Earth's atmosphere?",
    "What is 2 + 2?",
]


def test_bfloat16_matches_float32_and_never_shares_its_cache(tmp_path):
    """bfloat16 autocast (the default on CPUs with native bfloat16) gives the float32 embeddings to a cosine of
    0.9999; the two precisions never read each other's cached vectors."""
    f32 = Encoder(device="cpu", num_threads=1, precision="float32")
    b16 = Encoder(device="cpu", num_threads=1, precision="bfloat16")
    E32, E16 = f32.encode(TEXTS), b16.encode(TEXTS)
    assert E16.dtype == np.float32 and np.allclose(np.linalg.norm(E16, axis=1), 1.0, atol=1e-5)
    cos = (E32 * E16).sum(1)
    assert cos.min() > 0.9999, cos
    assert not np.array_equal(E32, E16)  # bfloat16 did run
    assert f32.cache_id == f32.encoder_id and b16.cache_id == b16.encoder_id + "@bf16"
    store = Store(tmp_path / "tb.duckdb")
    _, st = embed_cached(store, f32, TEXTS)
    _, st16 = embed_cached(store, b16, TEXTS)
    assert st["embedded"] == st16["embedded"] == len(TEXTS)


def test_auto_precision_follows_the_cpu_and_the_probe(monkeypatch):
    # native bfloat16 and a probe that finds it faster -> bfloat16; explicit precision always wins
    monkeypatch.setattr(embeddings, "cpu_has_native_bf16", lambda: True)
    monkeypatch.setattr(embeddings, "_PROBE", {1: (0.2, 0.1)})
    assert Encoder(device="cpu", num_threads=1).resolved_precision() == "bfloat16"
    assert Encoder(device="cpu", num_threads=1, precision="float32").resolved_precision() == "float32"
    # the flag alone is not enough: a host that reports avx512_bf16 but runs bfloat16 slower gets float32
    # (measured: 190 ms bfloat16 vs 101-127 ms float32 on such a host)
    monkeypatch.setattr(embeddings, "_PROBE", {1: (0.11, 0.19)})
    assert Encoder(device="cpu", num_threads=1).resolved_precision() == "float32"
    monkeypatch.setattr(embeddings, "_PROBE", {1: (0.12, 0.11)})  # a gain under 1.25x is not worth the cache split
    assert Encoder(device="cpu", num_threads=1).resolved_precision() == "float32"
    # the real probe runs once per thread count and its decision is the rule applied to what it timed
    monkeypatch.setattr(embeddings, "_PROBE", {})
    decided = embeddings.bf16_autocast_pays(1)
    f32, b16 = embeddings._PROBE[1]
    assert 0 < f32 < 5 and 0 < b16 < 5 and decided == (b16 * embeddings.BF16_MIN_SPEEDUP <= f32)
    monkeypatch.setattr(embeddings, "cpu_has_native_bf16", lambda: False)
    assert Encoder(device="cpu", num_threads=1).resolved_precision() == "float32"
    with pytest.raises(ValueError, match="precision"):
        Encoder(precision="int8")


def test_the_probe_sees_past_a_busy_moment():
    """The probe takes the best of interleaved runs and tries again while bfloat16 has not clearly paid: a first
    attempt slowed by another process (the 47 vs 41 ms that once settled a store on float32) does not decide; a
    machine where bfloat16 is really slower still gets float32 after every attempt."""
    busy = iter([0.047, 0.041] * embeddings.PROBE_REPEATS + [0.060, 0.023] * 100)
    calls = []

    def contended(bf16: bool) -> float:
        calls.append(bf16)
        return next(busy)

    f32, b16 = embeddings.probe_best(contended)
    assert (f32, b16) == (0.047, 0.023) and b16 * embeddings.BF16_MIN_SPEEDUP <= f32
    assert len(calls) == 4 * embeddings.PROBE_REPEATS  # the second attempt settles it: no third
    assert calls[:4] == [False, True, False, True]  # interleaved: both precisions under the same load
    calls.clear()
    slower = embeddings.probe_best(lambda bf16: calls.append(bf16) or (0.19 if bf16 else 0.11))
    assert slower == (0.11, 0.19) and len(calls) == 2 * embeddings.PROBE_REPEATS * embeddings.PROBE_ATTEMPTS


def test_auto_precision_is_settled_once_per_store(tmp_path, monkeypatch):
    """The probe decides once per store: a later probe that would decide otherwise (a busy machine) does not change
    the precision a re-run embeds in, so the same texts give the same cached vectors; an explicit precision wins."""
    store = Store(tmp_path / "s.duckdb")
    monkeypatch.setattr(embeddings, "cpu_has_native_bf16", lambda: True)
    monkeypatch.setattr(embeddings, "_PROBE", {1: (0.2, 0.1)})  # bfloat16 2x faster
    first = Encoder(device="cpu", num_threads=1)
    assert embeddings.settle_precision(store, first) == "bfloat16" and first.cache_id.endswith("@bf16")
    monkeypatch.setattr(embeddings, "_PROBE", {1: (0.1, 0.2)})  # the probe now finds bfloat16 slower
    assert Encoder(device="cpu", num_threads=1).resolved_precision() == "float32"  # unsettled: the probe alone
    again = Encoder(device="cpu", num_threads=1)
    assert embeddings.settle_precision(store, again) == "bfloat16" and again.cache_id == first.cache_id
    row = store.query("SELECT * FROM encoder_precision")
    assert len(row) == 1 and row.precision[0] == "bfloat16" and row.probe_float32_ms[0] == pytest.approx(200.0)
    explicit = Encoder(device="cpu", num_threads=1, precision="float32")
    assert embeddings.settle_precision(store, explicit) == "float32" and explicit.cache_id == explicit.encoder_id


def test_a_store_settled_on_bfloat16_warns_on_a_cpu_without_it(tmp_path, monkeypatch):
    """A store shared by machines (PostgreSQL) keeps the precision it settled on; a machine without native bfloat16
    then embeds emulated, slower than float32: the log says so and what to do, once texts are to be embedded."""
    store = Store(tmp_path / "s.duckdb")
    monkeypatch.setattr(embeddings, "cpu_has_native_bf16", lambda: True)
    monkeypatch.setattr(embeddings, "_PROBE", {1: (0.2, 0.1)})
    monkeypatch.setattr(Encoder, "encode", lambda self, texts, log=None: np.eye(len(texts), 4, dtype=np.float32))
    logs: list[str] = []
    embed_cached(store, Encoder(device="cpu", num_threads=1), ["a", "b"], log=logs.append)
    assert embeddings.SLOW_BF16 not in logs  # decided here: bfloat16 pays on this machine
    monkeypatch.setattr(embeddings, "cpu_has_native_bf16", lambda: False)  # the same store on another machine
    logs.clear()
    embed_cached(store, Encoder(device="cpu", num_threads=1), ["a", "b"], log=logs.append)
    assert logs == []  # every text cached: nothing runs slowly, nothing to say
    _, st = embed_cached(store, enc := Encoder(device="cpu", num_threads=1), ["a", "c"], log=logs.append)
    assert st["embedded"] == 1 and enc.cache_id.endswith("@bf16") and embeddings.SLOW_BF16 in logs
    assert "precision to float32" in embeddings.SLOW_BF16
