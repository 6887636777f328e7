"""The whole default pipeline, timed as a user runs it: cold, warm (nothing changed), and after one changed drop.

    .venv/bin/python benchmarks/pipeline.py --json benchmarks/results/pipeline.json

Runs `tinybench run-all` three times in a temporary project home (its own DuckDB file, landing folder, artifacts
and Dagster instance; never the project's data/): cold on the real default data (../shared/data), warm with
nothing changed, after a new version of one openllm drop (one model's answers removed from
arc.responses.parquet), then after a new one-scenario board lands (openllm's arc files under a new board name,
``big_board``: from its drop to its tiny benchmark). Prints wall times beside the issue's reference (16 min 18 s cold, the same again warm),
what each run materialized (read from the Dagster instance), the slowest steps of the cold run, where its time
went (step seconds per leaderboard and per asset; the CPU seconds of its processes against what 2 cores hold in the
bar's time), the backtest's time per split and per predictor stage, and the peak memory of the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from meta import run_meta  # noqa: E402  (benchmarks/meta.py: date, commit, machine)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REFERENCE = {"cold_seconds": 978.0, "warm_seconds": 978.0}  # issue 12: 16 min 18 s on a fresh clone, the same warm
BARS = {
    "cold_seconds": 480.0,
    "cold_cpu_seconds": 900.0,
    "warm_seconds": 60.0,
    "peak_rss_gb": 6.0,
    "big_board_seconds": 300.0,
}
BIG_BOARD = "bigboard"  # the new board dropped last: openllm's arc scenario alone (~4,300 models x 100 items)


def project_env(home: Path, data: Path) -> dict:
    env = dict(os.environ)
    env.update(
        {
            "TINYBENCH_DUCKDB": str(home / "data" / "tinybench.duckdb"),
            "TINYBENCH_INCOMING": str(home / "data" / "incoming"),
            "TINYBENCH_QUARANTINE": str(home / "data" / "quarantine"),
            "TINYBENCH_ARTIFACTS": str(home / "data" / "artifacts"),
            "TINYBENCH_DEFAULT_DATA": str(data),
            "DAGSTER_HOME": str(home / "dagster_home"),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
    )
    (home / "dagster_home").mkdir(parents=True, exist_ok=True)
    (home / "dagster_home" / "dagster.yaml").write_text((ROOT / "dagster.yaml.template").read_text())
    return env


def run_all(env: dict, *args: str) -> tuple[float, str]:
    exe = ROOT / ".venv" / "bin" / "tinybench"
    cmd = [
        str(exe) if exe.exists() else sys.executable,
        *([] if exe.exists() else ["-m", "tinybench_assets.cli"]),
        "run-all",
        *args,
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"run-all {' '.join(args)} failed (rc {proc.returncode})")
    return seconds, proc.stdout


def big_board(env: dict, home: Path) -> tuple[dict, float, list]:
    """Drop a new one-scenario board (openllm's arc files, as landed, copied under a new board name: the same bytes
    land on each board) and run run-all until it has its tiny benchmark: ({name, models, items}, seconds, its run's
    materializations)."""
    import dagster as dg
    import pandas as pd

    src, dst = home / "data" / "incoming" / "openllm", home / "data" / "incoming" / BIG_BOARD
    dst.mkdir(parents=True)
    for f in sorted(src.glob("arc.*")):
        shutil.copy(f, dst / f.name)
    df = pd.read_parquet(dst / "arc.responses.parquet", columns=["model", "item"])
    t0 = time.time()
    seconds, _ = run_all(env, "--no-seed")
    mats = materializations_since(dg.DagsterInstance.get(), t0)
    return {"name": BIG_BOARD, "models": int(df.model.nunique()), "items": int(df.item.nunique())}, seconds, mats


def materializations_since(instance, since: float) -> list[tuple[str, str | None]]:
    """(asset, partition) of every materialization recorded after ``since`` (a UNIX time)."""
    import dagster as dg

    out = []
    for key in instance.get_asset_keys():
        res = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key, after_timestamp=since), limit=10_000)
        out += [(key.to_user_string(), r.partition_key) for r in res.records]
    return out


def step_durations(instance, since: float) -> Counter:
    """Seconds per (step, partition) of the runs started after ``since``, from their STEP_SUCCESS events."""
    import dagster as dg

    out = Counter()
    for rec in instance.get_run_records(
        dg.RunsFilter(created_after=__import__("datetime").datetime.fromtimestamp(since))
    ):
        part = rec.dagster_run.tags.get("dagster/partition", "")
        for entry in instance.all_logs(rec.dagster_run.run_id, of_type=dg.DagsterEventType.STEP_SUCCESS):
            ev = entry.dagster_event
            out[(ev.step_key, part)] += ev.event_specific_data.duration_ms / 1000
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the contract JSON here")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="default data (../shared/data)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary project home and print its path")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "openllm").is_dir():
        raise SystemExit(f"{data}: no openllm folder (see ../shared/data/README.md)")
    home = Path(tempfile.mkdtemp(prefix="tinybench_pipeline_"))
    env = project_env(home, data)
    os.environ.update({k: v for k, v in env.items() if k.startswith(("TINYBENCH_", "DAGSTER_HOME"))})
    import dagster as dg

    figures: dict = {}
    try:
        t_cold0 = time.time()
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cold, out_cold = run_all(env)
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cold_cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
        print(out_cold.split("\nDuckDB store")[0])
        instance = dg.DagsterInstance.get()
        cold_mats = materializations_since(instance, t_cold0)
        steps = step_durations(instance, t_cold0)

        t_warm0 = time.time()
        warm, out_warm = run_all(env)
        warm_mats = materializations_since(instance, t_warm0)

        arc = home / "data" / "incoming" / "openllm" / "arc.responses.parquet"
        import pandas as pd

        df = pd.read_parquet(arc)
        df[df["model"] != sorted(df["model"].unique())[-1]].to_parquet(arc, index=False)
        t_drop0 = time.time()
        one_drop, out_drop = run_all(env, "--no-seed")  # seeding would restore the original file
        drop_mats = materializations_since(instance, t_drop0)
        drop_parts = sorted({p for a, p in drop_mats if a not in ("landing_ingest", "raw_responses") and p})

        big, big_seconds, big_mats = big_board(env, home)
        big_parts = sorted({p for a, p in big_mats if p and p.split(".")[0] == big["name"]})
        big_assets = {a for a, p in big_mats if p and p.split(".")[0] == big["name"]}
        if "tiny_benchmark" not in big_assets:
            print(f"!! the big board did not reach its tiny benchmark: {sorted(big_assets)}", file=sys.stderr)

        recs = instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey("estimation_backtest"), asset_partitions=["openllm"], before_timestamp=t_warm0
            ),
            limit=1,
        )
        md = recs.records[0].asset_materialization.metadata if recs.records else {}
        # the asset's headline is the family-grouped splits' figure; the random splits' is the one quoted before
        t1 = (
            md["tinybench_t1_mae_mean_n30_random"].value
            if "tinybench_t1_mae_mean_n30_random" in md
            else next((v.value for k, v in md.items() if k.startswith("tinybench_t1_mae_mean_n")), float("nan"))
        )
        t1_grouped = (
            md["tinybench_t1_mae_mean_n30_grouped"].value if "tinybench_t1_mae_mean_n30_grouped" in md else float("nan")
        )
        peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024**2
        from tinybench_assets.io.store import Store

        store = Store(env["TINYBENCH_DUCKDB"])
        timings = store.query("SELECT * FROM backtest_timings") if "backtest_timings" in store.tables() else None

        print("\n== cold run: slowest steps (seconds)")
        for (step, part), sec in steps.most_common(12):
            print(f"  {sec:7.1f}  {step:<28} {part}")
        # where the cores went: step seconds per partition, per leaderboard (a scenario partition "board.scenario"
        # counts for its board) and per asset; the cold run's CPU seconds against what 2 cores hold in the bar's time
        by_part, by_board, by_asset = Counter(), Counter(), Counter()
        for (step, part), sec in steps.items():
            by_part[part] += sec
            by_board[part.split(".")[0] if part else "(ingest)"] += sec
            by_asset[step] += sec
        print("  per partition: " + ", ".join(f"{p} {s:.0f}s" for p, s in by_part.most_common()))
        print("  per leaderboard: " + ", ".join(f"{b} {s:.0f}s" for b, s in by_board.most_common()))
        print("  per asset: " + ", ".join(f"{a} {s:.0f}s" for a, s in by_asset.most_common(8)))
        cores = os.cpu_count() or 1
        print(
            f"  CPU: {cold_cpu:.0f} core-s in {cold:.0f} s ({cold_cpu / cold:.2f} of {cores} cores busy); "
            f"the {BARS['cold_seconds']:.0f} s bar holds {BARS['cold_seconds'] * cores:.0f} core-s"
        )
        if timings is not None and len(timings):
            cols = [c for c in timings.columns if c.endswith("seconds")]
            print("\n== backtest, per split (seconds)")
            print(
                timings[[c for c in ("leaderboard", "split_kind", "split", "n_train") if c in timings] + cols]
                .round(1)
                .to_string(index=False)
            )
        figures = {
            "cold_seconds": round(cold, 1),
            "warm_seconds": round(warm, 1),
            "warm_materializations": len(warm_mats),
            "one_drop_seconds": round(one_drop, 1),
            "one_drop_partitions": drop_parts,
            "peak_rss_gb": round(peak_gb, 2),
            "estimation_t1_n30_mean": float(t1),
            "estimation_t1_n30_grouped": float(t1_grouped),
            "cold_materializations": len(cold_mats),
            "cold_cpu_seconds": round(cold_cpu, 1),
            "cold_step_seconds_by_leaderboard": {b: round(v, 1) for b, v in by_board.most_common()},
            "cold_step_seconds_by_asset": {a: round(v, 1) for a, v in by_asset.most_common()},
            "one_drop_materializations": len(drop_mats),
            "one_drop_reread_only": sorted({p for a, p in drop_mats if a == "raw_responses"} - set(drop_parts)),
            "big_board": {"models": big["models"], "items": big["items"], "seconds": round(big_seconds, 1)},
            "big_board_materializations": len(big_mats),
            "big_board_tiny_benchmark": "tiny_benchmark" in big_assets,
            "big_board_partitions": big_parts,
            "reference": REFERENCE,
            "bars": BARS,
        }
        print("\n== pipeline (2 CPU cores)           measured   reference   bar")
        print(
            f"  cold run-all                     {cold:8.0f} s  {REFERENCE['cold_seconds']:8.0f} s  < {BARS['cold_seconds']:.0f} s"
        )
        print(
            f"  cold run-all CPU                 {cold_cpu:8.0f} core-s              < {BARS['cold_cpu_seconds']:.0f}"
        )
        print(
            f"  warm run-all (nothing changed)   {warm:8.1f} s  {REFERENCE['warm_seconds']:8.0f} s  < {BARS['warm_seconds']:.0f} s"
            f"   materializations: {len(warm_mats)}"
        )
        print(
            f"  one changed openllm drop (arc)   {one_drop:8.1f} s   refreshed: {', '.join(drop_parts)}"
            f"   (re-read only: {', '.join(figures['one_drop_reread_only']) or 'none'})"
        )
        print(
            f"  a new one-scenario board         {big_seconds:8.1f} s                 < {BARS['big_board_seconds']:.0f} s"
            f"   ({big['models']:,} models x {big['items']} items, {len(big_mats)} materializations, drop to its"
            " tiny benchmark)"
        )
        print(f"  peak RSS of a run                {peak_gb:8.2f} GB                 < {BARS['peak_rss_gb']:.0f} GB")
        print(f"  estimation T1 MAE n=30, random   {t1:8.2f} pts  (benchmarks/estimation.py's figure is the reference)")
        print(
            f"  estimation T1 MAE n=30, grouped  {t1_grouped:8.2f} pts  (the asset's headline: family-grouped splits)"
        )
    finally:
        if args.keep:
            print(f"\nproject home kept: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    if args.json and figures:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({**figures, "meta": run_meta()}, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
