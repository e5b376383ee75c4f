#!/usr/bin/env bash
# Every accelerator check of issue 17.7 in one run (benchmarks/gpu_check.py: ResNet-50 bf16/f32
# images/s and MFU, BERT-large MFU, ResNet-50 Offline serving throughput under LoadGen, the
# ResNet mini's time to target), for a machine whose python3 already has jax (CUDA), flax,
# optax, orbax and absl but not tpubench's other needs (e.g. the NVIDIA H200 device machine).
#
#   bash benchmarks/gpu.sh --fetch        # here (package index reachable): wheels into .whl/
#   bash benchmarks/gpu.sh OUT_DIR [ARGS]  # there: install .whl/*.whl into /tmp/site, run
#                                         # gpu_check.py ARGS, write OUT_DIR/gpu_check.json,
#                                         # OUT_DIR/gpu_check.log and OUT_DIR/gpu.csv
#
# The wheels are for CPython 3.12 on x86-64 Linux (PY_VERSION=3.11 etc. to change); their own
# needs (PyYAML, pandas, scipy, numpy, absl, scikit-learn, matplotlib, joblib) must already
# be there. .whl/ is git-ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=(ml-collections==1.1.0 mlperf-logging==4.1.68 mlcommons-loadgen==6.0.17 mlxtend==0.25.0)
if [[ "${1:-}" == "--fetch" ]]; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "${PY_VERSION:-3.12}" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "${WHEELS[@]}"
  ls -l .whl
  exit 0
fi
OUT="${1:?usage: bash benchmarks/gpu.sh OUT_DIR [gpu_check.py ARGS] | --fetch}"
shift
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.csv" 2>/dev/null || true
PYTHONUNBUFFERED=1 python3 benchmarks/gpu_check.py --out="$OUT/gpu_check.json" "$@" 2>&1 \
  | tee "$OUT/gpu_check.log"
