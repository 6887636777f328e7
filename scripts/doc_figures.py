"""The guides' pictures, taken from the assets' real metadata: the plots of the latest materializations in the Dagster
instance ($DAGSTER_HOME) written as PNG files.

    source scripts/env.sh && .venv/bin/python scripts/doc_figures.py            # after the main job: docs/img/*.png
    .venv/bin/python scripts/doc_figures.py --out /tmp/figs                     # elsewhere

A figure whose asset partition was never materialized (or has no such plot) is reported and skipped; the exit code is
1 when none was written.
"""

from __future__ import annotations

import argparse
import base64
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# (file, asset, partition, metadata key or key prefix, the guide that shows it)
FIGURES = (
    ("estimation_error_vs_n.png", "estimation_backtest", "openllm", "error_vs_n_", "docs/estimate.md"),
    ("router_cost_quality.png", "router_accuracy", "routerbench.mbpp", "cost_curve", "docs/routing.md"),
    ("magi_score_trends.png", "magi_score_trends", "openllm", "trend_chart", "docs/magi.md"),
    (
        "irt_difficulty_discrimination.png",
        "irt_model",
        "openllm.mmlu",
        "difficulty_vs_discrimination",
        "docs/assets.md",
    ),
)
PNG = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")


def latest_metadata(instance, asset: str, partition: str) -> dict | None:
    import dagster as dg

    result = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=1, ascending=False
    )
    if not result.records:
        return None
    return result.records[0].asset_materialization.metadata


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out", type=Path, default=ROOT / "docs" / "img", help="folder for the PNG files (default docs/img)"
    )
    args = ap.parse_args(argv)
    import dagster as dg

    written = 0
    with dg.DagsterInstance.get() as instance:
        for name, asset, partition, key, guide in FIGURES:
            meta = latest_metadata(instance, asset, partition)
            if meta is None:
                print(f"skipped {name}: {asset} [{partition}] was never materialized in this instance")
                continue
            keys = sorted(k for k in meta if k == key or (key.endswith("_") and k.startswith(key)))
            found = [PNG.search(str(getattr(meta[k], "value", meta[k]))) for k in keys]
            found = [m for m in found if m]
            if not found:
                print(f"skipped {name}: {asset} [{partition}]'s latest materialization has no {key!r} plot")
                continue
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / name).write_bytes(base64.b64decode(found[0].group(1)))
            written += 1
            print(f"wrote {args.out / name} ({asset} [{partition}], {keys[0]}; shown in {guide})")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
