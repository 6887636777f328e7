"""``tinybench anchors`` and ``tinybench estimate`` on an exported tiny benchmark; their error cases."""
from __future__ import annotations

import json

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
    np.testing.assert_allclose(got[tb.COLUMNS[5:11]].to_numpy(float), want[tb.COLUMNS[5:11]].to_numpy(float), atol=1e-12)
    rc, out, _ = run(capsys, "estimate", "--artifact", str(board["folder"] / "tiny_benchmark.json"), "--answers", str(f),
                     "--json", "--no-learned")
    assert rc == 0 and {s["source"] for s in json.loads(out)["scenarios"]} == {"json"}
    # a scenario left out entirely is skipped with a note
    only_a = {k: v for k, v in board["answers"].items() if k in board["art"]["scenarios"]["a"]["anchors"]["items"]}
    rc, out, _ = run(capsys, "estimate", "--artifact", str(board["folder"]), "--answers", str(write_csv(tmp_path / "a.csv", only_a)))
    assert rc == 0 and "note: scenario 'b': no anchor answered, skipped" in out


@pytest.mark.parametrize("case,match", [
    ("unknown", "not anchors of the sim tiny benchmark"),
    ("partial", "scenario 'a': 1 of 5 anchors not answered"),
    ("range", "outside [0, 1]"),
    ("header", "needs a header with 'item' and 'score'"),
    ("nofile", "no such file"),
    ("noartifact", "no tiny benchmark there"),
    ("format", "format version 9 is not supported"),
])
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
    elif case == "format":
        raw = {k: v for k, v in board["art"].items() if k != "_folder"}
        (tmp_path / "tb.json").write_text(json.dumps({**raw, "format": "tinybench.tiny_benchmark/9"}))
        artifact = str(tmp_path / "tb.json")
    rc, out, err = run(capsys, "estimate", "--artifact", artifact, "--answers", str(f))
    assert rc == 2 and out == ""
    assert err.startswith("tinybench estimate: error: ") and len(err.strip().splitlines()) == 1
    assert match in err
    if case == "partial":  # allowed on request
        rc, out, _ = run(capsys, "estimate", "--artifact", artifact, "--answers", str(f), "--allow-missing")
        assert rc == 0 and "4/5" in out


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
