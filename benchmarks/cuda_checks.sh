#!/usr/bin/env bash
# The checks of one session on a GPU machine (the device tool's `run`, from the repository root): the
# numeric tests on CUDA (every test that takes the `device` fixture, the trainers' and Word2Fun's among
# them), then benchmarks/cuda_steps.py, then benchmarks/compile_vs_eager.py on the GPU (the measurement,
# QPDN, CNM and three complex-order classifiers) with batches of four padded lengths, as real batches come
# (about 5 minutes in all on an H100 with the first three cases and one length; the order cases and four
# lengths make it longer: give the run the full 10 minutes, or set COMPILE_TIMEOUT). Output goes to $OUT
# (the device tool's folder that comes back), else to /tmp/cuda-checks.
# The GPU image's python3 holds torch; qpnlp runs from the checkout.
set -uo pipefail
out=${OUT:-/tmp/cuda-checks}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, torch.cuda.get_device_name())"
    uptime
} 2>&1 | tee "$out/env.txt"
tests=$(grep -rlE "def test_[a-z0-9_]+\([^)]*\bdevice\b" tests | sort)
QPNLP_TEST_DEVICE=cuda timeout "${TEST_TIMEOUT:-200}" python3 -m pytest -q -p no:cacheprovider -n "${TEST_WORKERS:-8}" \
    $tests 2>&1 | tee "$out/pytest_cuda.txt"
timeout "${BENCH_TIMEOUT:-300}" python3 benchmarks/cuda_steps.py --json "$out/cuda_steps.json" "$@" 2>&1 \
    | tee "$out/cuda_steps.txt"
timeout "${COMPILE_TIMEOUT:-360}" python3 benchmarks/compile_vs_eager.py --device cuda --mode default reduce-overhead \
    --cases measurement qpdn cnm order-fasttext order-cnn order-transformer --lengths 12 23 37 50 --rounds 3 \
    --min-run-time 0.3 --json "$out/compile_vs_eager_cuda.json" 2>&1 | grep -v "^W[0-9]" \
    | tee "$out/compile_vs_eager_cuda.txt"
