#!/usr/bin/env bash
# The sixth session's device call (#20, #22): does torch.compile with CUDA graphs make a Transformer SST-2 epoch
# short enough for the cell? In order of value, each step under its own deadline so that a cut call still returns
# what ran: (1) the complex-order job compiled with reduce-overhead (CUDA graphs), 2 epochs; (2) its eager baseline,
# 1 epoch, on the same machine; (3) compile_vs_eager.py's complex-order steps on the GPU; (4) the numeric tests on
# CUDA at this commit. Run from the repository root with `.gpu/` carried (benchmarks/gpu_carry.sh classification/SST2).
# Each step's deadline is an environment variable (0 skips the step); CVE_CASES and CVE_MODES choose step (3)'s cases.
# PAD_TO_MULTIPLE_OF, if set, is passed to the compiled job (unset: the library's default, 8 under reduce-overhead
# since the seventh session; 1 gives the sixth session's batches, padded to their longest phrase).
set -u
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
out=${OUT:-/tmp/graphs}
mkdir -p "$out"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"; nproc; uptime; } > "$out/env.txt" 2>&1

job() {  # NAME MODE EPOCHS SECONDS: seed 0's complex-order Transformer on SST-2 at 300-d, lr 1e-3, no grid
    local name=$1 mode=$2 epochs=$3 seconds=$4 compile=() t0
    [[ $mode != eager ]] && compile=(--compile "$mode")
    [[ $mode != eager && -n ${PAD_TO_MULTIPLE_OF:-} ]] && compile+=(--pad-to-multiple-of "$PAD_TO_MULTIPLE_OF")
    t0=$(date +%s)
    PYTHONPATH=$PWD:$PWD/.gpu/site QPNLP_DATA=$PWD/.gpu/data timeout "$seconds" python3 \
        benchmarks/reproduce_complex_order.py --datasets SST2 --networks transformer --seeds 0 \
        --variants complex_order --vectors spacy-md-300d --no-grid --epochs "$epochs" --patience 5 --threads 1 --device cuda \
        "${compile[@]}" --out "$out/$name" > "$out/$name.log" 2>&1
    echo "$name rc=$? $(( $(date +%s) - t0 )) s" >> "$out/times.txt"
}
(( ${GRAPHS_SECONDS:-170} )) && job graphs reduce-overhead 2 "${GRAPHS_SECONDS:-170}"
(( ${EAGER_SECONDS:-75} )) && job eager eager 1 "${EAGER_SECONDS:-75}"

if (( ${COMPILE_SECONDS:-110} )); then
    PYTHONPATH=$PWD timeout "${COMPILE_SECONDS:-110}" python3 benchmarks/compile_vs_eager.py --device cuda \
        --mode ${CVE_MODES:-default reduce-overhead} --cases ${CVE_CASES:-order-cnn order-transformer} --lengths 23 37 \
        --rounds 3 --min-run-time 0.3 --json "$out/compile_vs_eager_cuda.json" > "$out/compile_vs_eager_cuda.txt" 2>&1
    echo "compile_vs_eager rc=$?" >> "$out/times.txt"
fi

(( ${TEST_SECONDS:-150} )) || exit 0
tests=$(grep -rlE "def test_[a-z0-9_]+\([^)]*\bdevice\b" tests | sort)
PYTHONPATH=$PWD QPNLP_TEST_DEVICE=cuda timeout "${TEST_SECONDS:-150}" python3 -m pytest -q -p no:cacheprovider -n 8 \
    $tests tests/nn/test_layers.py tests/test_trig.py > "$out/pytest_cuda.txt" 2>&1
echo "pytest rc=$?" >> "$out/times.txt"
uptime >> "$out/env.txt"
