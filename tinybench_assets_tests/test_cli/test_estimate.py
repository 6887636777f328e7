"""``tinybench anchors`` and ``tinybench estimate`` on an exported tiny benchmark; their error cases."""

from __future__ import annotations

import hashlib
import json
import pickle

import numpy as np
import pandas as pd
import pytest
import torch

from tinybench_assets.cli import main
from tinybench_assets.core import tiny_benchmark as tb
from tinybench_assets_tests.test_core.test_tiny_benchmark import answers_of, fitted, texts

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """$TINYBENCH_ARTIFACTS/sim holding the exported tiny benchmark, and one full model's answers."""
    root = tmp_path_factory.mktemp("artifacts")
    rm, test, pred = fitted()
    art = tb.export_tiny_benchmark(pred, leaderboard="sim", n=5, item_texts=texts(rm))
    tb.save_artifact(art, pred, root / "sim")
    art = tb.load_artifact(root / "sim")
    row = next(r for r in test if np.isfinite(rm.scores[r]).all())
    return {"root": root, "folder": root / "sim", "art": art, "answers": answers_of(art, rm, row)}


def write_csv(path, answers: dict):
    path.write_text("item,score\n" + "".join(f"{k},{v:g}\n" for k, v in answers.items()))
    return path


def run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_anchors_csv_json_and_text(board, capsys, tmp_path, monkeypatch):
    rc, out, err = run(capsys, "anchors", "--artifact", str(board["folder"]))
    assert rc == 0 and err == ""
    lines = out.strip().splitlines()
    assert lines[0] == "scenario,item,weight" and len(lines) == 1 + 10
    assert {ln.split(",")[1] for ln in lines[1:]} == set(board["answers"])
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(board["root"]))
    rc, out, _ = run(capsys, "anchors", "--leaderboard", "sim", "--format", "json", "--with-text")
    data = json.loads(out)
    assert rc == 0 and data["n"] == 5 and len(data["anchors"]) == 10
    assert all(a["text"] == f"Question {a['item']}?" for a in data["anchors"])
    # the only exported leaderboard is the default; --output writes a file
    rc, out, _ = run(capsys, "anchors", "--output", str(tmp_path / "anchors.csv"))
    assert rc == 0 and "10 anchors of 2 scenario(s)" in out
    assert list(pd.read_csv(tmp_path / "anchors.csv").columns) == ["scenario", "item", "weight"]


def test_estimate_prints_a_table_and_json(board, capsys, tmp_path):
    f = write_csv(tmp_path / "answers.csv", board["answers"])
    want = tb.estimate_from_artifact(board["art"], board["answers"])
    rc, out, err = run(capsys, "estimate", "--artifact", str(board["folder"]), "--answers", str(f))
    assert rc == 0 and err == ""
    assert "sim tiny benchmark: n=5 anchors per scenario" in out and "90% interval" in out
    for r in want.itertuples(index=False):
        line = next(ln for ln in out.splitlines() if ln.startswith(r.scenario + " "))
        assert f"{100 * r.estimate:.1f} %" in line and f"{100 * r.estimate_t2:.1f} %" in line and "5/5" in line
        assert r.estimator in line
        # which budget the estimate spent: own (this scenario's anchors) or joint (every scenario's)
        assert (" joint " if "joint" in r.estimator or r.estimator == "stack" else " own ") in line
    assert "budget: own = from this scenario's anchor answers only; joint" in out
    rc, out, _ = run(capsys, "estimate", "--artifact", str(board["folder"]), "--answers", str(f), "--json")
    data = json.loads(out)
    assert rc == 0 and [s["scenario"] for s in data["scenarios"]] == ["a", "b"]
    assert all(s["budget"] in ("own", "joint") for s in data["scenarios"])
    from tinybench_assets.cli.estimate import budget

    assert budget("gpirt_val") == "own" and budget("gbm_joint") == "joint" and budget("stack") == "joint"
    assert budget("stack_own") == "own"
    got = pd.DataFrame(data["scenarios"])
    np.testing.assert_allclose(
        got[tb.COLUMNS[5:11]].to_numpy(float), want[tb.COLUMNS[5:11]].to_numpy(float), atol=1e-12
    )
    rc, out, _ = run(
        capsys,
        "estimate",
        "--artifact",
        str(board["folder"] / "tiny_benchmark.json"),
        "--answers",
        str(f),
        "--json",
        "--no-learned",
    )
    assert rc == 0 and {s["source"] for s in json.loads(out)["scenarios"]} == {"json"}
    # a scenario left out entirely is skipped with a note
    only_a = {k: v for k, v in board["answers"].items() if k in board["art"]["scenarios"]["a"]["anchors"]["items"]}
    rc, out, _ = run(
        capsys, "estimate", "--artifact", str(board["folder"]), "--answers", str(write_csv(tmp_path / "a.csv", only_a))
    )
    assert rc == 0 and "note: scenario 'b': no anchor answered, skipped" in out


@pytest.mark.parametrize(
    "case,match",
    [
        ("unknown", "not anchors of the sim tiny benchmark"),
        ("partial", "scenario 'a': 1 of 5 anchors not answered"),
        ("range", "outside [0, 1]"),
        ("header", "needs a header with 'item' and 'score'"),
        ("nofile", "no such file"),
        ("noartifact", "no tiny benchmark there"),
        ("format", "format version 9 is not supported"),
        ("version1", "format version 1 is not supported: it kept its learned estimators in a pickle"),
        ("trees", "learned_models.npz: not a readable tree file"),
    ],
)
def test_estimate_errors_exit_2_with_one_line(board, capsys, tmp_path, case, match):
    ans = dict(board["answers"])
    first = board["art"]["scenarios"]["a"]["anchors"]["items"][0]
    artifact = str(board["folder"])
    f = tmp_path / "answers.csv"
    if case == "unknown":
        ans["nonexistent.item"] = 1.0
    elif case == "partial":
        del ans[first]
    elif case == "range":
        ans[first] = 3.0
    write_csv(f, ans)
    if case == "header":
        f.write_text("\n".join(f"{k},{v}" for k, v in ans.items()))
    elif case == "nofile":
        f = tmp_path / "missing.csv"
    elif case == "noartifact":
        artifact = str(tmp_path / "nowhere")
    elif case in ("format", "version1"):
        raw = {k: v for k, v in board["art"].items() if k != "_folder"}
        fmt = "tinybench.tiny_benchmark/" + ("9" if case == "format" else "1")
        (tmp_path / "tb.json").write_text(json.dumps({**raw, "format": fmt}))
        artifact = str(tmp_path / "tb.json")
    elif case == "trees":  # a tree file that is not one, with a JSON vouching for it
        raw = {k: v for k, v in board["art"].items() if k != "_folder"}
        (tmp_path / "learned_models.npz").write_bytes(b"junk")
        raw["learned"] = {**raw["learned"], "sha256": hashlib.sha256(b"junk").hexdigest()}
        (tmp_path / "tiny_benchmark.json").write_text(json.dumps(raw))
        artifact = str(tmp_path)
        write_csv(f, ans)
        rc, out, err = run(capsys, "estimate", "--artifact", artifact, "--answers", str(f), "--estimator", "gbm_joint")
        assert rc == 2 and match in err and len(err.strip().splitlines()) == 1
        rc, out, err = run(capsys, "estimate", "--artifact", artifact, "--answers", str(f), "--no-learned")
        assert rc == 0 and "[json]" in out  # the JSON estimators never read the tree file
        return
    rc, out, err = run(capsys, "estimate", "--artifact", artifact, "--answers", str(f))
    assert rc == 2 and out == ""
    assert err.startswith("tinybench estimate: error: ") and len(err.strip().splitlines()) == 1
    assert match in err
    if case == "partial":  # allowed on request
        rc, out, _ = run(capsys, "estimate", "--artifact", artifact, "--answers", str(f), "--allow-missing")
        assert rc == 0 and "4/5" in out


def test_leaderboard_folder_shared_with_the_pipelines_pickle(board, capsys, tmp_path, monkeypatch):
    """--leaderboard NAME reads $TINYBENCH_ARTIFACTS/NAME, where the pipeline also keeps its predictor.pkl: the
    estimate reads only the JSON and the tree file (a hostile pickle there is never loaded)."""
    import shutil

    root = tmp_path / "artifacts"
    shutil.copytree(board["folder"], root / "sim")
    marker, control = tmp_path / "PWNED", tmp_path / "control"
    payload = b"cbuiltins\nopen\n(S'%s'\nS'w'\ntR."  # protocol 0: open(path, "w") when unpickled
    pickle.loads(payload % str(control).encode())
    assert control.exists()  # the payload works
    (root / "sim" / "predictor.pkl").write_bytes(payload % str(marker).encode())
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(root))
    f = write_csv(tmp_path / "answers.csv", board["answers"])
    for extra in ([], ["--estimator", "gbm"], ["--no-learned"]):
        rc, out, err = run(capsys, "estimate", "--leaderboard", "sim", "--answers", str(f), "--json", *extra)
        assert rc == 0 and err == "", err
        src = {s["source"] for s in json.loads(out)["scenarios"]}
        assert src == ({"learned_models.npz"} if extra[:1] == ["--estimator"] else {"json"} if extra else src)
    assert not marker.exists()


def test_cli_usage_errors(board, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(tmp_path / "empty"))
    rc, _, err = run(capsys, "anchors")
    assert rc == 2 and "give --artifact FOLDER or --leaderboard NAME" in err
    with pytest.raises(SystemExit) as e:  # argparse: --answers is required
        main(["estimate", "--artifact", str(board["folder"])])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        main(["anchors", "--artifact", "x", "--leaderboard", "y"])
    capsys.readouterr()


def test_estimate_save_lands_the_answers_in_the_evaluations_folder(board, capsys, tmp_path):
    from pathlib import Path

    from tinybench_assets import paths

    f = write_csv(tmp_path / "My Model.csv", board["answers"])
    rc, out, err = run(capsys, "estimate", "--artifact", str(board["folder"]), "--answers", str(f), "--save")
    saved = Path(paths.incoming_dir()) / "evaluations" / "sim" / "my_model.csv"
    assert rc == 0 and saved.read_bytes() == f.read_bytes() and f"saved to {saved}" in err
    rc, _, err = run(
        capsys, "estimate", "--artifact", str(board["folder"]), "--answers", str(f), "--save", "--model", "x y"
    )
    assert rc == 0 and (saved.parent / "x_y.csv").exists()
    # nothing is saved when the answers cannot be estimated
    bad = write_csv(tmp_path / "bad.csv", {k: 3 for k in board["answers"]})
    rc, _, err = run(capsys, "estimate", "--artifact", str(board["folder"]), "--answers", str(bad), "--save")
    assert rc == 2 and "outside [0, 1]" in err and not (saved.parent / "bad.csv").exists()
