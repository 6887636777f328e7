"""Mixed-traffic routing (task routers, the out-of-distribution guard), the questions' own split and RouteLLM's
measures, on synthetic data whose answers are known."""

import json

import numpy as np
import pytest

from tinybench_assets.core.routing.families import simplicity
from tinybench_assets.core.routing.gap import gap_measures, gap_report, preference, strong_weak
from tinybench_assets.core.routing.guard import GuardedRouter
from tinybench_assets.core.routing.metrics import route
from tinybench_assets.core.routing.saved import load_router, save_router
from tinybench_assets.core.routing.select import select_router
from tinybench_assets.core.routing.served import RouterFileError, ServedRouter
from tinybench_assets.core.routing.split import question_split
from tinybench_assets.core.routing.surface import SurfaceFeatures, router_input
from tinybench_assets.core.routing.task import TaskRouter


def two_tasks(n=300, d=16, seed=0):
    """Questions of two tasks far apart in embedding space; model 0 is right on task A, model 1 on task B (80 %)."""
    g = np.random.default_rng(seed)
    centres = g.normal(size=(2, d)) * 3
    task = np.repeat([0, 1], n // 2)
    E = centres[task] + g.normal(size=(n, d))
    Y = np.empty((n, 2))
    Y[:, 0] = np.where(task == 0, g.random(n) < 0.8, g.random(n) < 0.3)
    Y[:, 1] = np.where(task == 1, g.random(n) < 0.8, g.random(n) < 0.3)
    return E.astype(np.float32), Y, np.array(["A", "B"])[task]


def test_question_split_is_seeded_stratified_and_order_free():
    items = [f"q{i}" for i in range(1000)]
    groups = ["x"] * 900 + ["y"] * 100
    s = question_split(items, groups)
    assert (s == "test").sum() == 200
    assert (s[:900] == "test").sum() == 180 and (s[900:] == "test").sum() == 20  # stratified
    perm = np.random.default_rng(1).permutation(1000)
    s2 = question_split(np.array(items, dtype=object)[perm], np.array(groups, dtype=object)[perm])
    assert (s2 == s[perm]).all()  # a question's side does not depend on the order
    assert (question_split(items, groups, seed=1) != s).any()


def test_task_router_routes_each_task_to_its_best_model_without_the_label(tmp_path):
    E, Y, task = two_tasks()
    r = TaskRouter().fit(E[::2], Y[::2], task[::2])
    assert (r.tasks_[r.recognise(E[1::2])] == task[1::2]).mean() > 0.98
    picks = route(r.predict_proba(E[1::2]), Y[::2].mean(axis=0))
    assert (picks == (task[1::2] == "B")).mean() > 0.98
    save_router(r, tmp_path / "r.npz", {"models": ["m0", "m1"]})
    back, meta = load_router(tmp_path / "r.npz")
    assert np.allclose(back.predict_proba(E[1::2]), r.predict_proba(E[1::2]))
    with pytest.raises(ValueError, match="needs each training question's task"):
        TaskRouter().fit(E, Y)


def test_surface_features_tell_tasks_apart_where_embeddings_cannot(tmp_path):
    """Two tasks whose embeddings are drawn from one distribution, written in two templates ("Question: ... Answer:"
    and options "A. ... B."): the embedding alone recognises half; with the surface features every question."""
    g = np.random.default_rng(3)
    n, words = 400, ["cell", "energy", "river", "price", "angle", "voter", "metal", "orbit", "tax", "gene"]
    task = np.repeat([0, 1], n // 2)
    body = [" ".join(g.choice(words, 8)) for _ in range(n)]
    texts = [f"Question: {b}?\nAnswer:" if t == 0 else f"{b}?\nA. yes\nB. no" for b, t in zip(body, task)]
    E = g.normal(size=(n, 16)).astype(np.float32)
    Y = np.stack([task == 0, task == 1], axis=1).astype(float)
    names = np.array(["arc", "mmlu"])[task]
    surface = SurfaceFeatures(256)
    F = surface.join(E, texts)
    assert F.shape == (n, 16 + 256) and np.allclose(np.linalg.norm(F[:, 16:], axis=1), 1.0)
    assert np.array_equal(SurfaceFeatures.from_params(surface.params()).transform(texts), F[:, 16:])  # stateless
    assert router_input(None, E, texts) is E and np.array_equal(router_input(surface.params(), E, texts), F)
    plain = TaskRouter().fit(E[::2], Y[::2], names[::2])
    joined = TaskRouter().fit(F[::2], Y[::2], names[::2])
    assert (plain.tasks_[plain.recognise(E[1::2])] == names[1::2]).mean() < 0.7
    assert (joined.tasks_[joined.recognise(F[1::2])] == names[1::2]).mean() == 1.0
    with pytest.raises(ValueError, match="3 texts for 400"):
        surface.join(E, texts[:3])


def test_served_router_round_trips_and_refuses_what_it_cannot_serve(tmp_path):
    """One class writes the router file (the assets) and reads it (tinybench route): the same routes after a round
    trip, a guarded router's strangers sent to the best training model, and a file that lacks what serving needs,
    serves another partition or is not a router is refused naming the file."""
    E, Y, task = two_tasks()
    g = GuardedRouter(TaskRouter().fit(E[::2], Y[::2], task[::2])).fit(E[::2], Y[::2])
    meta = {"partition": "board", "models": ["m0", "m1"], "prior": [0.4, 0.6], "encoder": "x", "margin": 0.0}
    ServedRouter(g, meta).save(tmp_path / "r.npz")
    back = ServedRouter.load(tmp_path / "r.npz", partition="board")
    X = np.vstack([E[1::2], 50 * np.ones((1, E.shape[1]), dtype=np.float32)])  # the last question: a stranger
    P, picks, ood = back.route(back.inputs(X, ["q"] * len(X)))
    P0, picks0, ood0 = ServedRouter(g, meta).route(X)
    assert np.allclose(P, P0) and (picks == picks0).all() and (ood == ood0).all()
    assert ood[-1] and picks[-1] == 1 and (picks[:-1] == (task[1::2] == "B")).mean() > 0.95
    plain = int(np.argmax(P[-1]))  # a prior that puts the other model first: the stranger follows the prior, not P
    _, picks2, ood2 = ServedRouter(g, {**meta, "prior": [0.6, 0.4] if plain else [0.4, 0.6]}).route(X)
    assert ood2[-1] and picks2[-1] == 1 - plain
    with pytest.raises(RouterFileError, match="is for partition board, not other"):
        ServedRouter.load(tmp_path / "r.npz", partition="other")
    save_router(g, tmp_path / "bare.npz", {"models": ["m0", "m1"]})
    with pytest.raises(RouterFileError, match=r"bare.npz: meta lacks prior, encoder"):
        ServedRouter.load(tmp_path / "bare.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a router")
    with pytest.raises(RouterFileError, match="cannot read router .*junk.npz"):
        ServedRouter.load(tmp_path / "junk.npz")


def test_selection_serves_the_task_router_and_says_who_sits_out():
    E, Y, task = two_tasks(n=600)
    sel = select_router(E, Y, groups=task, n_boot=200)
    assert sel.served in ("task_prior", "knn_task", "ensemble", "logistic", "knn_vote", "knn_shrunk")
    assert sel.best[sel.served][1] > sel.best["best_single"][1] + 0.2
    assert set(sel.sat_out) == {"knn_irt", "knn_irt_cal"}  # two models: no IRT fit
    assert "three" in sel.sat_out["knn_irt"] or "3" in sel.sat_out["knn_irt"]
    sel1 = select_router(E, Y, n_boot=200)  # no tasks: the task families sit out
    assert {"task_prior", "knn_task"} <= set(sel1.sat_out)


def test_guard_flags_questions_unlike_every_training_question(tmp_path):
    E, Y, task = two_tasks()
    g = GuardedRouter(TaskRouter().fit(E, Y, task)).fit(E, Y)
    far = -E[:3] * 10 + 40  # nowhere near the training questions
    sim, ood = g.novelty(np.vstack([E[:5], far]))
    assert not ood[:5].any() and ood[5:].all()
    save_router(g, tmp_path / "g.npz", {"models": ["m0", "m1"]})
    back, _ = load_router(tmp_path / "g.npz")
    assert (back.novelty(far)[1]).all() and float(back.threshold_) == pytest.approx(float(g.threshold_))


def test_gap_measures_random_perfect_and_a_hand_worked_case():
    g = np.random.default_rng(0)
    n = 4000
    weak, strong = (g.random(n) < 0.6).astype(float), (g.random(n) < 0.8).astype(float)
    rnd = gap_measures(g.random(n), weak, strong, n_boot=50)
    assert rnd["apgr"] == pytest.approx(0.5, abs=0.03) and rnd["cpt50"] == pytest.approx(0.5, abs=0.05)
    assert rnd["apgr_lo"] < rnd["apgr"] < rnd["apgr_hi"]
    perfect = gap_measures(strong - weak, weak, strong, n_boot=20)  # strong only where it helps
    assert perfect["apgr"] > 0.85 and perfect["cpt80"] < 0.3
    # 4 questions: the strong model alone is right on q0 and q1, both right on q2, both wrong on q3; the router ranks
    # q0 > q2 > q1 > q3: PGR at shares 0, 1/4, 1/2, 3/4, 1 is 0, 1/2, 1/2, 1, 1
    hw = gap_measures(np.array([4.0, 2.0, 3.0, 1.0]), np.array([0, 0, 1, 0.0]), np.array([1, 1, 1, 0.0]), n_boot=10)
    assert hw["apgr"] == pytest.approx((0.25 + 0.5 + 0.75 + 1.0) / 4)
    assert hw["cpt50"] == pytest.approx(0.25) and hw["cpt80"] == pytest.approx(0.5 + 0.25 * 0.6)


def test_gap_report_chooses_its_family_on_training_questions_only():
    E, Y, task = two_tasks(n=600)
    tr = np.arange(600) % 5 != 0
    sel = select_router(E[tr], Y[tr], groups=task[tr], n_boot=100)
    test_P = {f: sel.make(f).fit(E[tr], Y[tr], task[tr]).predict_proba(E[~tr]) for f in sel.best}
    flipped = {f: 1 - P for f, P in test_P.items()}  # test predictions turned upside down change no choice
    a = gap_report(sel.oof, test_P, Y[tr], Y[~tr], Y[tr].mean(axis=0), simplicity, n_boot=20)
    b = gap_report(sel.oof, flipped, Y[tr], Y[~tr], Y[tr].mean(axis=0), simplicity, n_boot=20)
    assert a["family"] == b["family"] and a["apgr"] > 0.7
    assert strong_weak([0.2, 0.9]) == (1, 0)
    assert preference(np.array([[0.1, 0.7]]), 1, 0)[0] == pytest.approx(0.6)


def test_surface_counts_are_scikit_learns_hashed_char_ngrams():
    """SurfaceFeatures hashes each distinct word once: the same counts as HashingVectorizer.transform on real
    questions (RouteLLM's and RouterDC's) and on white space, accents, CJK and emoji; the features bit for bit."""
    import pandas as pd

    from tinybench_assets.core.routing.knn import normalize_rows
    from tinybench_assets_tests.conftest import SHARED, _need_shared

    _need_shared()
    texts = pd.read_csv(SHARED / "routellm" / "mmlu.csv", nrows=400)["prompt"].tolist()
    texts += [r["question"] for r in json.loads((SHARED / "routerdc" / "gsm8k-test.json").read_text())[:200]]
    texts += ["", "   ", "a", "ab\n\ncd\t\te", "é ü ß 中文\u00a0nbsp\u2003em", "x\u2028y\x1cz", " a  a ", "🙂🙂 ok"]
    surface = SurfaceFeatures(512, ngram=(1, 3))
    want = surface._vectorizer().transform(texts)
    assert np.array_equal(surface.counts(texts).toarray(), want.toarray())
    want.data = np.sign(want.data) * np.log1p(np.abs(want.data))
    assert np.array_equal(normalize_rows(want.toarray()).astype(np.float32), surface.transform(texts))
    assert surface.counts([]).shape == (0, 512)


def test_an_ensembles_shared_inputs_are_written_once(tmp_path, monkeypatch):
    """Equal arrays of an ensemble's members (each keeps the training inputs) are written once and read back shared;
    a file without aliases (as written before) still loads."""
    import zipfile

    from tinybench_assets.core.routing import saved

    E, Y, task = two_tasks(n=200)
    r = select_router(E, Y, groups=task, n_boot=50, gate_level=0).make("ensemble").fit(E, Y, task)
    monkeypatch.setattr(saved, "ALIAS_MIN_BYTES", 0)
    save_router(r, tmp_path / "shared.npz", {"models": ["m0", "m1"]})
    monkeypatch.setattr(saved, "ALIAS_MIN_BYTES", 1 << 62)
    save_router(r, tmp_path / "copies.npz", {"models": ["m0", "m1"]})
    names = zipfile.ZipFile(tmp_path / "shared.npz").namelist()
    assert (
        sum(n.endswith(".E_.npy") for n in names)
        == 1
        < sum(n.endswith(".E_.npy") for n in zipfile.ZipFile(tmp_path / "copies.npz").namelist())
    )
    (a, meta_a), (b, meta_b) = load_router(tmp_path / "shared.npz"), load_router(tmp_path / "copies.npz")
    assert meta_a == meta_b == {"models": ["m0", "m1"]}
    assert np.array_equal(a.predict_proba(E), r.predict_proba(E)) and np.array_equal(
        b.predict_proba(E), r.predict_proba(E)
    )
    assert len({id(m.E_) for m in a.members if hasattr(m, "E_")}) == 1


def test_every_family_of_an_ensemble_saves_and_loads(tmp_path):
    """The ensemble is served where it wins (RouteLLM's MMLU): each member, knn_shrunk and the task families included,
    comes back from the router file with its family's name and the same predictions."""
    E, Y, task = two_tasks(n=200)
    sel = select_router(E, Y, groups=task, n_boot=50, gate_level=0)
    r = sel.make("ensemble").fit(E, Y, task)
    save_router(r, tmp_path / "e.npz", {"models": ["m0", "m1"]})
    back, _ = load_router(tmp_path / "e.npz")
    assert [m.name for m in back.members] == [m.name for m in r.members]
    assert {"knn_shrunk", "task_prior", "knn_task"} <= {m.name for m in back.members}
    assert np.allclose(back.predict_proba(E[:20]), r.predict_proba(E[:20]))
