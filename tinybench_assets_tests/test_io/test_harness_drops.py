"""lm-evaluation-harness samples files (``--log_samples``) land as drops: the real files of ../shared/data/harness and
multi-model folders built from them with varied scores."""

import json
import shutil

import pytest

from tinybench_assets.io.drops import DropError, landing_files, read_drop
from tinybench_assets.io.harness_drops import metric_override, read_answers_folder
from tinybench_assets.io.landing import ingest_landing
from tinybench_assets.io.store import Store
from tinybench_assets_tests.conftest import SHARED, _need_shared

MODEL = "EleutherAI__pythia-14m"
GSM = "samples_metabench_gsm8k_secondary_2024-11-26T10-50-23.349203.jsonl"
WINO = "samples_metabench_winogrande_permute_2024-11-26T10-47-32.305387.jsonl"


def _lines(name):
    return [json.loads(x) for x in (SHARED / "harness" / MODEL / name).read_text().splitlines() if x.strip()]


def _write(folder, name, samples):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(s) + "\n" for s in samples))


def _landed(tmp_path, scenario):
    return Store(tmp_path / "tb.duckdb").query(
        "SELECT r.model, r.item, r.score FROM landed_responses r JOIN drops d USING (drop_id) "
        "WHERE r.scenario = ? AND d.status = 'active' ORDER BY d.seq",
        [scenario],
    )


@pytest.fixture()
def board(tmp_path):
    """incoming/harness/<3 models>/: the real model's two files, and two more models whose scores differ."""
    _need_shared()
    incoming = tmp_path / "incoming"
    shutil.copytree(SHARED / "harness" / MODEL, incoming / "harness" / MODEL)
    for k, org in enumerate(("acme__tiny-1b", "acme__tiny-7b")):
        for name, metric in ((GSM, "exact_match"), (WINO, "acc")):
            rows = _lines(name)
            for i, r in enumerate(rows):  # values as the harness writes them in some versions: strings
                r[metric] = str(float((i + k) % 3 == 0))
            _write(incoming / "harness" / org, name, rows)
    return incoming


def test_the_real_files_ingest_with_their_field_names(board, tmp_path):
    drop = read_drop(board / "harness" / MODEL / WINO, "harness")
    assert drop.format == "harness_jsonl" and set(drop.responses["model"]) == {"EleutherAI/pythia-14m"}
    assert set(drop.responses["scenario"]) == {"metabench_winogrande_permute"}
    raw = _lines(WINO)
    assert len(drop.responses) == len({r["doc_hash"] for r in raw})
    first = drop.responses.iloc[0]
    assert (
        first["item"] == f"metabench_winogrande_permute.{raw[0]['doc_hash'][:16]}" and first["score"] == raw[0]["acc"]
    )
    assert "'acc'" in drop.notes[0] and len(drop.items) == len(drop.responses)
    assert drop.items["text"].iloc[0] == raw[0]["doc"]["sentence"]
    gsm = read_drop(board / "harness" / MODEL / GSM, "harness")
    assert "'exact_match'" in gsm.notes[0] and gsm.responses["score"].isin([0.0, 1.0]).all()
    assert gsm.items["text"].iloc[0] == _lines(GSM)[0]["doc"]["question"]

    report = ingest_landing(Store(tmp_path / "tb.duckdb"), board, tmp_path / "q")
    assert len(report.ingested) == 6 and not report.quarantined, report
    assert report.partitions == {"harness.metabench_gsm8k_secondary", "harness.metabench_winogrande_permute"}
    resp = _landed(tmp_path, "metabench_winogrande_permute")
    assert resp["model"].nunique() == 3 and resp.groupby("model").size().nunique() == 1
    assert set(resp[resp.model == "acme/tiny-7b"]["score"]) == {0.0, 1.0}  # the strings, read as numbers


def test_later_runs_win_bad_lines_quarantine_and_the_metric_can_be_chosen(board, tmp_path, monkeypatch):
    folder = board / "harness" / "acme__tiny-1b"
    later = WINO.replace("10-47-32", "23-59-59")
    rows = _lines(WINO)
    for r in rows:
        r["acc"] = 1.0
    _write(folder, later, rows)
    files = [p.name for p in landing_files(board) if p.parent == folder]
    assert files.index(later) == files.index(WINO) + 1  # the older run lands first, the later one wins
    assert "later run" in " ".join(read_drop(folder / WINO, "harness").notes)
    assert "lands after 1 older" in " ".join(read_drop(folder / later, "harness").notes)
    answers = read_answers_folder(folder)
    assert all(v == 1.0 for k, v in answers.items() if k.startswith("metabench_winogrande_permute."))
    ingest_landing(Store(tmp_path / "tb.duckdb"), board, tmp_path / "q")
    resp = _landed(tmp_path, "metabench_winogrande_permute")  # the active drops in landing order: the last wins
    tiny = resp[resp.model == "acme/tiny-1b"].groupby("item")["score"].last()
    assert (tiny == 1.0).all()

    bad = _lines(GSM)
    bad[3]["exact_match"] = "n/a"
    _write(board / "harness" / "acme__broken", GSM, bad)
    with pytest.raises(DropError, match=r"line 4: exact_match = 'n/a' is not a number"):
        read_drop(board / "harness" / "acme__broken" / GSM, "harness")
    report = ingest_landing(Store(tmp_path / "tb.duckdb"), board, tmp_path / "q")
    assert list(report.quarantined) == [f"harness/acme__broken/{GSM}"] and "line 4" in next(
        iter(report.quarantined.values())
    )
    assert (tmp_path / "q" / "harness" / "acme__broken" / GSM).exists()

    both = _lines(WINO)
    for r in both:
        r["acc_norm"] = 0.5
    _write(board / "other" / "m__x", WINO, both)
    assert "'acc'" in read_drop(board / "other" / "m__x" / WINO, "other").notes[0]  # acc before acc_norm
    monkeypatch.setenv("TINYBENCH_HARNESS_METRIC", "other:metabench_winogrande_permute=acc_norm")
    drop = read_drop(board / "other" / "m__x" / WINO, "other")
    assert (drop.responses["score"] == 0.5).all() and "TINYBENCH_HARNESS_METRIC" in drop.notes[0]
    assert (
        metric_override("x", "t", "acc_norm, x:t=f1") == "f1"
        and metric_override("y", "t", "acc_norm,x=f1") == "acc_norm"
    )


def test_tinybench_estimate_reads_a_harness_folder(tmp_path, capsys):
    """`tinybench estimate --answers <model folder>` scores a model from its harness output against a tiny benchmark
    whose items are harness items (fitted here on 12 simulated models of the two real tasks)."""
    import numpy as np

    from tinybench_assets.cli import main
    from tinybench_assets.core.estimation.small_board import SmallBoardPredictor
    from tinybench_assets.core.tiny_benchmark import save_artifact

    _need_shared()
    folder = SHARED / "harness" / MODEL
    items, cols = [], {}
    for task, name in (("metabench_gsm8k_secondary", GSM), ("metabench_winogrande_permute", WINO)):
        ids = list(dict.fromkeys(f"{task}.{r['doc_hash'][:16]}" for r in _lines(name)))
        cols[task] = np.arange(len(items), len(items) + len(ids))
        items += ids
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=(12, 1)), rng.normal(size=len(items))
    Y = (rng.random((12, len(items))) < 1 / (1 + np.exp(-(theta - b)))).astype(float)
    pred = SmallBoardPredictor(n_values=(10,), dims=(1,), n_init=2).fit(
        Y, np.ones(len(items)), cols, None, [f"f{i // 2}" for i in range(12)], items=items
    )
    save_artifact(pred.to_artifact("harness", 10), folder=tmp_path / "tb")
    args = ["estimate", "--artifact", str(tmp_path / "tb"), "--answers", str(folder)]
    assert main(args) == 2 and "not anchors" in capsys.readouterr().err  # a full run answers the whole pool
    assert main(args + ["--allow-extra", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["scenarios"]
    assert sorted(r["scenario"] for r in rows) == sorted(cols) and all(r["answered"] == 10 for r in rows)
    assert main(["estimate", "--artifact", str(tmp_path / "tb"), "--answers", str(folder / "nothing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err

    # the anchors as lm_eval's --samples wants them: {task: [doc indices]}, from a model folder covering them
    assert main(["anchors", "--artifact", str(tmp_path / "tb"), "--format", "harness"]) == 2
    assert "--samples-from" in capsys.readouterr().err
    out_file = tmp_path / "anchors.json"
    assert (
        main(
            [
                "anchors",
                "--artifact",
                str(tmp_path / "tb"),
                "--format",
                "harness",
                "--samples-from",
                str(folder),
                "--output",
                str(out_file),
            ]
        )
        == 0
    )
    selection = json.loads(out_file.read_text())
    anchors = {r["item"] for r in json.loads(json.dumps(pred.anchor_table()[lambda d: d.n == 10].to_dict("records")))}
    assert sorted(selection) == sorted(cols) and sum(len(v) for v in selection.values()) == len(anchors) == 20
    for task, name in (("metabench_gsm8k_secondary", GSM), ("metabench_winogrande_permute", WINO)):
        by_id = {r["doc_id"]: f"{task}.{r['doc_hash'][:16]}" for r in _lines(name)}
        assert {by_id[i] for i in selection[task]} == {a for a in anchors if a.startswith(task + ".")}
