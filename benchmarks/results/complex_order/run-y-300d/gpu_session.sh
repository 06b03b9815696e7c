#!/usr/bin/env bash
# This session's device call: the numeric tests on CUDA beside the Transformer SST-2 jobs (#20), then the GPU steps.
set -u
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
R=benchmarks/results/complex_order/run-y-300d
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"; nproc; uptime; } > $OUT/env.txt 2>&1
tests=$(grep -rlE "def test_[a-z0-9_]+\([^)]*\bdevice\b" tests | sort)
(PYTHONPATH=$PWD QPNLP_TEST_DEVICE=cuda timeout 240 python3 -m pytest -q -p no:cacheprovider -n 4 $tests > $OUT/pytest_cuda.txt 2>&1; echo "rc=$?" >> $OUT/pytest_cuda.txt) &
testpid=$!
mkdir -p /tmp/jobs
(while sleep 30; do tar czf /tmp/jobs.tgz -C /tmp/jobs . 2>/dev/null && mv /tmp/jobs.tgz $OUT/jobs.tgz; nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader >> $OUT/gpu_util.txt; done) &
tarpid=$!
PYTHONPATH=$PWD:$PWD/.gpu/site QPNLP_DATA=$PWD/.gpu/data bash benchmarks/parallel_jobs.sh $R/jobs.txt ${PARALLEL:-15} /tmp/jobs ${JOBS_SECONDS:-450}
wait $testpid
kill $tarpid; tar czf /tmp/jobs.tgz -C /tmp/jobs . && mv /tmp/jobs.tgz $OUT/jobs.tgz
uptime >> $OUT/env.txt
PYTHONPATH=$PWD timeout ${STEPS_SECONDS:-100} python3 benchmarks/cuda_steps.py --parts qpdn cnm order word2fun --json $OUT/cuda_steps.json > $OUT/cuda_steps.txt 2>&1
echo "steps rc=$?" >> $OUT/cuda_steps.txt
