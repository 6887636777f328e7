"""A tiny benchmark from an unknown source is safe to load: nothing is unpickled (hostile pickles planted as
predictor.pkl, as the tree file, inside the tree file's arrays, or behind a version 1 JSON never run), and
malformed JSON or tree arrays give an ArtifactError naming the file and the problem, never a crash or a hang.
Also: the pure-numpy tree evaluator equals sklearn's predict bit for bit."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import pickle
import shutil
import zipfile

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingRegressor

from tinybench_assets.cli import main
from tinybench_assets.core import tiny_benchmark as tb
from tinybench_assets.core.tiny_benchmark import ArtifactError
from tinybench_assets.core.tiny_benchmark import files as tb_files
from tinybench_assets.core.tiny_benchmark.trees import (
    ARRAYS,
    BANK_ARRAYS,
    TreeEnsemble,
    ensembles,
    hgb_arrays,
    pack,
    write_tree_file,
)
from tinybench_assets_tests.test_core.test_tiny_benchmark import answers_of, fitted, texts


class _Plant:
    """Unpickling this object creates ``marker`` (as a real attack would run any code)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def hostile_pickle(marker) -> bytes:
    return pickle.dumps(_Plant(marker))


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A valid saved artifact (its folder, JSON dict and tree arrays) and one full model's answers; scenario "b"
    recommends the stack over the learned estimators, so the default estimate reads the tree file."""
    rm, test, pred = fitted()
    pred = copy.deepcopy(pred)
    selection = pred.named_steps["selector"].selection_
    c = selection[(5, "b", "tinybench")]["t1"][0]
    selection[(5, "b", "tinybench")] = {"t1": (c, "stack"), "t2": (c, "stack")}
    folder = tmp_path_factory.mktemp("good")
    art = tb.export_tiny_benchmark(pred, leaderboard="sim", n=5, item_texts=texts(rm))
    tb.save_artifact(art, None, folder)
    row = next(r for r in test if np.isfinite(rm.scores[r]).all())
    loaded = tb.load_artifact(folder)
    assert loaded["scenarios"]["b"]["recommended_learned"]["t1"] == "stack"
    return {
        "folder": folder,
        "raw": json.loads((folder / "tiny_benchmark.json").read_text()),
        "trees": art["_trees"],
        "answers": answers_of(loaded, rm, row),
        "ref": tb.estimate_from_artifact(loaded, answers_of(loaded, rm, row)),
    }


def copy_of(good, tmp_path):
    folder = tmp_path / "art"
    shutil.copytree(good["folder"], folder)
    return folder


def vouch(folder, raw=None):
    """Rewrite the JSON so that its sha256 vouches for whatever tree file is in the folder."""
    raw = json.loads((folder / "tiny_benchmark.json").read_text()) if raw is None else raw
    raw["learned"]["sha256"] = hashlib.sha256((folder / "learned_models.npz").read_bytes()).hexdigest()
    (folder / "tiny_benchmark.json").write_text(json.dumps(raw))


def every_use(folder, answers, capsys=None):
    """Load and estimate in every way a user can; returns the ArtifactErrors' messages (None where it worked)."""
    out = []
    for call in (
        lambda: tb.estimate_from_artifact(folder, answers),
        lambda: tb.estimate_from_artifact(tb.load_artifact(folder), answers, estimator="gbm_joint"),
        lambda: tb.evaluate_artifact(tb.load_artifact(folder), {s: np.zeros((1, 5)) for s in ("a", "b")}),
    ):
        try:
            call()
            out.append(None)
        except ArtifactError as e:
            out.append(str(e))
    return out


# ---------------------------------------------------------------------------------------------- no pickle, ever
@pytest.mark.timeout(120)
def test_hostile_pickles_are_never_loaded(good, tmp_path, capsys):
    marker = tmp_path / "PWNED"
    control = tmp_path / "control"
    pickle.loads(hostile_pickle(control))  # the payload does work when unpickled ...
    assert control.exists()
    payload = hostile_pickle(marker)

    # 1. a hostile predictor.pkl beside a good artifact (where the pipeline keeps its own): ignored
    folder = copy_of(good, tmp_path / "1")
    (folder / "predictor.pkl").write_bytes(payload)
    assert every_use(folder, good["answers"]) == [None, None, None]
    np.testing.assert_array_equal(
        tb.estimate_from_artifact(folder, good["answers"])[tb.COLUMNS[5:11]].to_numpy(float),
        good["ref"][tb.COLUMNS[5:11]].to_numpy(float),
    )

    # 2. the pickle as the tree file, with a JSON vouching for it: not a zip of plain arrays
    folder = copy_of(good, tmp_path / "2")
    (folder / "learned_models.npz").write_bytes(payload)
    vouch(folder)
    errs = every_use(folder, good["answers"])
    assert all(e and "learned_models.npz: not a readable tree file" in e for e in errs), errs

    # 3. the pickle inside the tree file: an object array (np.save pickles it) in place of "value"
    folder = copy_of(good, tmp_path / "3")
    with zipfile.ZipFile(folder / "learned_models.npz", "w") as zf:
        for k, (_dt, _) in ARRAYS.items():
            buf = io.BytesIO()
            arr = np.array([_Plant(marker)], dtype=object) if k == "value" else good["trees"][k]
            np.save(buf, arr, allow_pickle=True)
            zf.writestr(k + ".npy", buf.getvalue())
    vouch(folder)
    errs = every_use(folder, good["answers"])
    assert all(e and "learned_models.npz: value.npy: dtype |O, expected <f8" in e for e in errs), errs

    # 4. a version 1 artifact (it had predictor.pkl for the learned estimators), its JSON vouching for the pickle
    folder = copy_of(good, tmp_path / "4")
    (folder / "predictor.pkl").write_bytes(payload)
    raw = dict(
        good["raw"],
        format="tinybench.tiny_benchmark/1",
        predictor={"file": "predictor.pkl", "sha256": hashlib.sha256(payload).hexdigest()},
    )
    (folder / "tiny_benchmark.json").write_text(json.dumps(raw))
    errs = every_use(folder, good["answers"])
    assert all(e and "version 1 is not supported" in e and "re-export" in e for e in errs), errs

    # 5. a JSON naming the pickle as its tree file
    folder = copy_of(good, tmp_path / "5")
    (folder / "predictor.pkl").write_bytes(payload)
    raw = json.loads(json.dumps(good["raw"]))
    raw["learned"].update(file="predictor.pkl", sha256=hashlib.sha256(payload).hexdigest())
    (folder / "tiny_benchmark.json").write_text(json.dumps(raw))
    with pytest.raises(ArtifactError, match=r"\$\.learned\.file: 'predictor\.pkl' is not one of learned_models\.npz"):
        tb.load_artifact(folder)

    # the command line too
    ans = tmp_path / "answers.json"
    ans.write_text(json.dumps(good["answers"]))
    for case in ("1", "2", "3", "4", "5"):
        rc = main(["estimate", "--artifact", str(tmp_path / case / "art"), "--answers", str(ans)])
        out = capsys.readouterr()
        assert rc == (0 if case == "1" else 2), (case, out.err)
        assert rc == 0 or (out.err.startswith("tinybench estimate: error: ") and len(out.err.strip().splitlines()) == 1)
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------- malformed trees
def _mutated(trees, **changes):
    out = {k: v.copy() for k, v in trees.items()}
    for k, f in changes.items():
        out[k] = f(out[k])
    return out


def _first_split(trees):
    return int(np.flatnonzero(trees["is_leaf"] == 0)[0])


def _set(i, v):
    def f(a):
        a[i] = v
        return a

    return f


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "case,match",
    [
        ("child_out_of_range", r"left: node 0 of tree 0 points to 1000000: children must lie after"),
        ("cycle_to_root", r"right: node 0 of tree 0 points to 0: children must lie after"),
        ("self_loop", r"left: node 0 of tree 0 points to 0"),
        ("negative_child", r"left: node 0 of tree 0 points to -5"),
        ("feature_too_large", r"feature: node 0 of tree 0 splits on feature 999, the model has \d+ features"),
        ("nan_threshold", r"threshold: NaN in a split"),
        ("inf_leaf", r"value: a leaf value is not finite"),
        ("leaf_flag_2", r"is_leaf: values other than 0 / 1"),
        ("node_count", r"n_nodes: every tree must have"),
        ("node_sum", r"value: \d+ entries, the trees have \d+ nodes"),
        ("tree_count", r"n_trees: counts must be >= 1 and sum to"),
        ("huge_tree_count", r"n_trees: counts must be >= 1 and sum to"),
        ("model_count", r"7 baselines / 7 tree counts for the 8 models"),
        ("float_feature_nan", r"feature\.npy: dtype <f8, expected <i4"),
        ("huge_header", r"left\.npy: the header claims 1000000000000 values, more than the member holds"),
        ("huge_member", r"its members claim \d+ bytes uncompressed"),
        ("missing_member", r"missing"),
        ("extra_member", r"unexpected"),
        ("two_d", r"right\.npy: shape \(\d+, 1\), expected a 1-d array"),
        ("not_a_zip", r"not a readable tree file"),
        ("truncated", r"not a readable tree file|truncated"),
        ("bank_out_of_range", r"bank_answers: values outside \[0, 1\]"),
        ("bank_nan", r"bank_answers: values outside \[0, 1\]"),
        ("bank_values_inf", r"bank_values: values outside \[0, 1\], or a scenario without any"),
        ("bank_size", r"bank_answers / bank_values: \d+ / \d+ values, the JSON's bank needs \d+ models"),
        ("bank_missing", r"bank_answers: missing, but the JSON's learned.bank lists an answer bank"),
        ("bank_half", r"missing"),
    ],
)
def test_malformed_tree_files_are_refused(good, tmp_path, case, match):
    folder = copy_of(good, tmp_path)
    path = folder / "learned_models.npz"
    t = good["trees"]
    i = _first_split(t)
    assert i == 0
    arrays = None
    if case == "child_out_of_range":
        arrays = _mutated(t, left=_set(0, 1_000_000))
    elif case == "cycle_to_root":
        arrays = _mutated(t, right=_set(0, 0))
    elif case == "self_loop":
        arrays = _mutated(t, left=_set(0, 0))
    elif case == "negative_child":
        arrays = _mutated(t, left=_set(0, -5))
    elif case == "feature_too_large":
        arrays = _mutated(t, feature=_set(0, 999))
    elif case == "nan_threshold":
        arrays = _mutated(t, threshold=_set(0, np.nan))
    elif case == "inf_leaf":
        arrays = _mutated(t, value=_set(int(np.flatnonzero(t["is_leaf"])[0]), np.inf))
    elif case == "leaf_flag_2":
        arrays = _mutated(t, is_leaf=_set(3, 2))
    elif case == "node_count":
        arrays = _mutated(t, n_nodes=_set(0, 0))
    elif case == "node_sum":
        arrays = _mutated(t, n_nodes=_set(0, t["n_nodes"][0] + 1))
    elif case == "tree_count":
        arrays = _mutated(t, n_trees=_set(0, t["n_trees"][0] + 1))
    elif case == "huge_tree_count":
        arrays = _mutated(t, n_trees=_set(0, 2**62))
    elif case == "model_count":
        arrays = _mutated(t, baseline=lambda a: a[:-1], n_trees=lambda a: a[:-1])
    elif case == "bank_out_of_range":
        arrays = _mutated(t, bank_answers=_set(0, 2.0))
    elif case == "bank_nan":
        arrays = _mutated(t, bank_answers=_set(0, np.nan))
    elif case == "bank_values_inf":
        arrays = _mutated(t, bank_values=_set(0, np.inf))
    elif case == "bank_size":
        arrays = _mutated(t, bank_values=lambda a: a[:-1])
    elif case == "bank_missing":  # the JSON lists a bank, the tree file has none
        arrays = {k: v for k, v in t.items() if k not in BANK_ARRAYS}
    elif case == "bank_half":  # one of the bank's two members
        arrays = {k: v for k, v in t.items() if k != "bank_values"}
    if arrays is not None:
        write_tree_file(arrays, path)
    elif case in ("float_feature_nan", "huge_header", "missing_member", "extra_member", "two_d", "huge_member"):
        with zipfile.ZipFile(path, "w") as zf:
            for k in ARRAYS:
                a = t[k]
                buf = io.BytesIO()
                if case == "float_feature_nan" and k == "feature":
                    a = np.where(np.arange(len(a)) == 0, np.nan, a.astype(float))
                if case == "two_d" and k == "right":
                    a = a[:, None]
                if case == "huge_header" and k == "left":
                    np.lib.format.write_array_header_1_0(
                        buf, {"descr": "<i4", "fortran_order": False, "shape": (10**12,)}
                    )
                    buf.write(b"\0" * 64)
                else:
                    np.save(buf, a)
                if case == "missing_member" and k == "threshold":
                    continue
                zf.writestr(k + ".npy", buf.getvalue())
            if case == "extra_member":
                zf.writestr("payload.pkl", hostile_pickle(tmp_path / "PWNED"))
        if case == "huge_member":  # a zip member claiming an enormous uncompressed size
            data = bytearray(path.read_bytes())
            k = data.rfind(b"PK\x01\x02")  # the last central directory entry: uncompressed size at offset 24
            data[k + 24 : k + 28] = (0xFFFFFFF0).to_bytes(4, "little")
            path.write_bytes(bytes(data))
    elif case == "not_a_zip":
        path.write_bytes(b"\x93NUMPY not a zip at all" * 10)
    elif case == "truncated":
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    vouch(folder)
    errs = every_use(folder, good["answers"])
    for e in errs:
        assert e is not None and "learned_models.npz" in e, errs
        assert __import__("re").search(match, e), (match, e)
    # the JSON estimators never read the tree file
    assert (tb.estimate_from_artifact(folder, good["answers"], use_learned=False).source == "json").all()
    assert not (tmp_path / "PWNED").exists()


# ---------------------------------------------------------------------------------------------- malformed JSON
def _edit(raw, path, value):
    d = raw
    for k in path[:-1]:
        d = d[k]
    if value is KeyError:
        del d[path[-1]]
    else:
        d[path[-1]] = value


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "path,value,match",
    [
        (
            ("scenarios", "a", "anchors", "local", 0),
            None,
            r"\$\.scenarios\.a\.anchors\.local\[0\]: expected an integer, found 'None'",
        ),
        (("scenarios", "a", "anchors", "local", 0), 1.5, r"anchors\.local\[0\]: expected an integer"),
        (("scenarios", "a", "anchors", "local", 0), 20, r"anchors\.local\[0\]: 20 is outside \[0, 19\]"),
        (("scenarios", "a", "anchors", "local"), [0, 0, 1, 2, 3], r"anchors\.local: an index appears twice"),
        (("scenarios", "a", "anchors", "weights"), [0.5, 0.5], r"anchors\.weights: 2 values, expected 5"),
        (("scenarios", "a", "anchors", "items", 0), "zz", r"anchors: items and local \(pool indices\) disagree"),
        (("scenarios", "a", "n_items"), 10**12, r"n_items: 1000000000000 is outside"),
        (("scenarios", "a", "n_items"), 21, r"\$\.scenarios\.a\.items: expected a list of 21 strings"),
        (("scenarios", "a", "irt", "sep", "a", 3), [1.0] * 9, r"irt\.sep\.a\[3\]: expected \d+ numbers"),
        (("scenarios", "b", "irt", "joint", "b"), [0.0], r"irt\.joint\.b: 1 values, expected 20"),
        (("scenarios", "a", "irt", "sep", "b", 0), "nan", r"irt\.sep\.b: 'nan' where a number was expected"),
        (("scenarios", "a", "balance_weights", 0), None, r"balance_weights: holds a value that is not a finite number"),
        (("irt_dims", "joint"), 10**9, r"irt_dims\.joint: 1000000000 is outside"),
        (("scenarios", "a", "lambdas", "sep"), KeyError, r"\$\.scenarios\.a\.lambdas: lacks the key 'sep'"),
        (
            ("scenarios", "a", "stacks", "stack", "members", 0),
            "os.system",
            r"stacks\.stack\.members: unknown name 'os\.system'",
        ),
        (("scenarios", "a", "stacks", "stack", "w_t1"), [1.0], r"stacks\.stack\.w_t1: 1 values"),
        (
            ("scenarios", "a", "estimators", "anchor", "interval_t1", "scale"),
            "exp",
            r"interval_t1\.scale: 'exp' is not one of binomial, none",
        ),
        (
            ("scenarios", "a", "estimators", "anchor", "calibration_t2", "x"),
            [0.5, 0.1],
            r"calibration_t2\.y: 2 values, expected 2|calibration_t2\.[xy]",
        ),
        (
            ("scenarios", "a", "estimators", "anchor", "calibration_t2", "slope"),
            -0.1,
            r"calibration_t2: not an isotonic map \(slope -0\.1: expected a finite number >= 0\)",
        ),
        (("scenarios", "a", "estimators", "anchor", "calibration_t2", "slope"), "1", r"calibration_t2\.slope: '1'"),
        (("scenarios", "a", "estimators", "evil"), {}, r"estimators\.evil: unknown estimator"),
        (("scenarios", "a", "recommended", "t1"), "gbm", r"recommended\.t1: 'gbm' is not one of"),
        (("learned", "models", 0, "n_features"), 10**9, r"learned\.models\[0\]\.n_features: 1000000000 is outside"),
        (("learned", "models", 0, "kind"), "../../x", r"learned\.models\[0\]\.kind"),
        (("learned", "file"), "../../../etc/passwd", r"\$\.learned\.file: '\.\./\.\./\.\./etc/passwd' is not one of"),
        (("learned", "models"), [], r"need learned regressors that \$\.learned\.models lacks"),
        (("scenario_order",), ["a", "a"], r"scenario_order: expected distinct scenario names"),
        (("alpha",), "0.1", r"\$\.alpha: .0\.1. where a number was expected"),
        (("alpha",), 7, r"\$\.alpha: expected a number in \(0, 1\)"),
        (("scenarios", "b", "anchors", "items", 0), None, r"anchors\.items\[0\]: expected a string"),
    ],
)
def test_malformed_json_is_refused(good, tmp_path, path, value, match):
    folder = copy_of(good, tmp_path)
    raw = json.loads(json.dumps(good["raw"]))
    _edit(raw, path, value)
    (folder / "tiny_benchmark.json").write_text(json.dumps(raw))
    with pytest.raises(ArtifactError, match=match) as e:
        tb.load_artifact(folder)
    assert str(e.value).startswith(str(folder / "tiny_benchmark.json") + ": ")
    with pytest.raises(ArtifactError, match=match):  # a dict given directly is checked the same way
        tb.estimate_from_artifact(raw, good["answers"])


@pytest.mark.timeout(120)
def test_non_json_deep_and_huge_files(good, tmp_path, monkeypatch):
    f = tmp_path / "tiny_benchmark.json"
    text = json.dumps(good["raw"])
    for bad, match in (
        (text.replace('"b_sep": ', '"b_sep": NaN, "x": ', 1), "non-standard JSON constant NaN"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply|not valid JSON"),
        (text[: len(text) // 2], "not valid JSON"),
        ("\udcff", "not valid JSON"),
    ):
        f.write_bytes(bad.encode("utf-8", "surrogateescape"))
        with pytest.raises(ArtifactError, match=match):
            tb.load_artifact(f)
    f.write_text(text)
    monkeypatch.setattr(tb_files, "MAX_JSON_BYTES", 1000)
    with pytest.raises(ArtifactError, match=r"bytes, more than the 1000 a tiny benchmark may have"):
        tb.load_artifact(f)


# ---------------------------------------------------------------------------------------------- the evaluator
def _hgb(X, y, **kw):
    return HistGradientBoostingRegressor(max_iter=40, random_state=0, **kw).fit(X, y)


def test_tree_ensemble_equals_sklearn_predict():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 6))
    X[rng.random(X.shape) < 0.15] = np.nan  # missing values in training: NaN goes left or right per split
    X[:, 5] = np.round(X[:, 5], 1)  # ties on split values
    y = np.nansum(X[:, :3], axis=1) + rng.normal(scale=0.1, size=600)
    Xt = rng.normal(size=(300, 6))
    Xt[rng.random(Xt.shape) < 0.3] = np.nan
    Xt[:20] = np.nan
    Xt[20:30, 0], Xt[30:40, 1] = np.inf, -np.inf
    Xt[40:60, 5] = np.round(Xt[40:60, 5], 1)
    for est in (
        _hgb(X, y),
        _hgb(X, y, max_leaf_nodes=5, l2_regularization=1.0),
        _hgb(np.nan_to_num(X), y),
    ):  # no NaN in training
        arrays = pack([hgb_arrays(est, 6)])
        (ens,) = ensembles(arrays, [6], "test")
        assert isinstance(ens, TreeEnsemble)
        np.testing.assert_array_equal(ens.predict(Xt), est.predict(Xt))
        np.testing.assert_array_equal(ens.predict(X), est.predict(X))
        assert ens.predict(Xt[:0]).shape == (0,)
        with pytest.raises(ValueError, match="takes 6 features"):
            ens.predict(Xt[:, :5])


def test_export_refuses_what_the_evaluator_cannot_reproduce():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 4, 200), rng.normal(size=200)]).astype(float)
    y = X[:, 0] + rng.normal(size=200)
    with pytest.raises(ArtifactError, match="categorical"):
        hgb_arrays(_hgb(X, y, categorical_features=[0]), 2)
    with pytest.raises(ArtifactError, match="link is LogLink"):
        hgb_arrays(_hgb(X, np.abs(y) + 0.1, loss="poisson"), 2)
    with pytest.raises(ArtifactError, match="takes 2 features, the artifact gives it 3"):
        hgb_arrays(_hgb(X, y), 3)
    with pytest.raises(ArtifactError, match="not a fitted HistGradientBoostingRegressor"):
        hgb_arrays(object(), 2)


def test_the_artifact_package_has_no_way_to_unpickle():
    """Safe by construction: no module of core/tiny_benchmark imports a deserializer that can run code, or calls
    np.load / torch.load / eval / exec (the tree file is read by trees.read_tree_file from plain .npy bytes)."""
    import ast
    from pathlib import Path

    banned_modules = {"pickle", "_pickle", "cPickle", "dill", "cloudpickle", "joblib", "shelve", "marshal", "skops"}
    banned_calls = {"load", "loads", "eval", "exec", "literal_eval", "__import__"}
    for f in sorted(Path(tb.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                assert not {a.name.split(".")[0] for a in node.names} & banned_modules, (f.name, ast.dump(node))
            elif isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] not in banned_modules, (f.name, node.module)
            elif isinstance(node, ast.Call):
                fn = node.func
                name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
                owner = getattr(fn.value, "id", "") if isinstance(fn, ast.Attribute) else ""
                assert not (name in banned_calls and owner != "json"), (f.name, node.lineno, ast.unparse(fn))
