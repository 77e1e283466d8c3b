#!/usr/bin/env bash
# The one script to run on a lent GPU machine (issue 23). From the repository root:
#
#     OUT=/some/folder bash scripts/gpu_check.sh
#
# It records the machine (nvidia-smi, versions), makes sure CuPy is importable (the
# image's own CuPy where there is one, else wheels carried in .whl/, else
# `pip install cupy-cuda12x` / `cupy-cuda13x` matching the driver's CUDA where pip can
# reach an index), runs the GPU tests (tests/kerneltable/test_cuda_allocator.py: the CupyAllocator
# half runs natively there; the HostAllocator half under the interpreter as everywhere),
# then benchmarks/bench_cuda.py: the kernels first, the GPT-2-small step on its own (it is
# the slow one: tinytrain's wrappers still stage NumPy arrays per launch). Everything
# lands under $OUT (at most 8 files, one folder down): gpu_check.log, env.txt,
# pytest.log, bench_cuda.json/.md (kernels), gpt/bench_cuda.json/.md (the GPT step).
# NO_INSTALL=1 installs nothing (a dry check of the script on a CPU).
# Each stage has its own time limit so that the whole run ends inside ~9 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/gpt"
exec > >(tee "$OUT/gpu_check.log") 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
unset TRITON_INTERPRET TINYTRAIN_ALLOCATOR
PY=${PYTHON:-python3}
T_TESTS=${T_TESTS:-150} T_KERNELS=${T_KERNELS:-270} T_GPT=${T_GPT:-150}

echo "== machine ($(date -u +%FT%TZ))"
{
  date -u +%FT%TZ
  nvidia-smi || echo "nvidia-smi failed"
  "$PY" -V
  "$PY" - <<'PYEOF'
import importlib
for name in ("numpy", "torch", "triton", "cupy", "ml_dtypes", "pytest"):
    try:
        m = importlib.import_module(name)
        print(name, getattr(m, "__version__", "?"))
    except Exception as exc:  # noqa: BLE001
        print(name, "MISSING", type(exc).__name__, exc)
try:
    import torch
    print("torch.cuda", torch.cuda.is_available(), torch.version.cuda,
          torch.cuda.get_device_name() if torch.cuda.is_available() else "-")
except Exception as exc:  # noqa: BLE001
    print("torch.cuda", exc)
PYEOF
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

echo "== cupy"
if [ -n "${NO_INSTALL:-}" ]; then
  echo "NO_INSTALL is set: nothing installed"
elif ! "$PY" -c "import cupy" 2>/dev/null; then
  if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:$PYTHONPATH"
  else
    major=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: \([0-9]*\).*/\1/p' | head -1)
    pkg=cupy-cuda12x; [ "${major:-12}" -ge 13 ] && pkg=cupy-cuda13x
    "$PY" -m pip install -q "$pkg" ml_dtypes || echo "pip could not install $pkg"
  fi
fi
"$PY" -c "import cupy; print('cupy', cupy.__version__, 'devices', cupy.cuda.runtime.getDeviceCount())" \
  || echo "CuPy is not importable: the CupyAllocator tests will be skipped"

GPU_FLAG=()
if nvidia-smi -L >/dev/null 2>&1; then  # a GPU machine: skipping the native half is a failure
  export TINYTRAIN_REQUIRE_GPU=1
  GPU_FLAG=(--require-gpu)
fi

echo "== GPU tests"
timeout "$T_TESTS" "$PY" -m pytest tests/kerneltable/test_cuda_allocator.py -q -rs -p no:benchmark \
  -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log"
tests_rc=${PIPESTATUS[0]}

echo "== benchmark: kernels"
timeout "$T_KERNELS" "$PY" benchmarks/bench_cuda.py --out "$OUT" "${GPU_FLAG[@]}" \
  --kernels matmul,elementwise,softmax,layernorm,cross_entropy,attention,attention_backward,adam
kernels_rc=$?

echo "== benchmark: GPT-2-small step"
timeout "$T_GPT" "$PY" benchmarks/bench_cuda.py --out "$OUT/gpt" "${GPU_FLAG[@]}" --kernels gpt
gpt_rc=$?

echo "== done: tests rc=$tests_rc, kernels rc=$kernels_rc, gpt rc=$gpt_rc (124: timed out)"
[ "$tests_rc" = 0 ] && [ "$kernels_rc" = 0 ] && [ "$gpt_rc" = 0 ]
