#!/usr/bin/env bash
# the TREC-QA ablations with today's defaults, two processes, lanes stopped meanwhile
pids=$(pgrep -f 'python3 benchmarks/reproduce_complex_order.py' | tr '\n' ' ')
trap "kill -CONT $pids 2>/dev/null" EXIT
[ -n "$pids" ] && kill -STOP $pids
cd /tmp/clone_trec
export PYTHONPATH=/tmp/clone_trec QPNLP_DATA=/work/shared/data OMP_NUM_THREADS=1
uptime > /tmp/abltrec/uptime.txt
( time /work/main/.venv/bin/python benchmarks/reproduce_cnm.py --datasets trecqa --variants cnm-real --seeds 0 1 2 3 4 --threads 1 --out /tmp/abltrec --tag ablations_trecqa_real > /tmp/abltrec/real.log 2>&1 ) 2> /tmp/abltrec/real.time &
( time /work/main/.venv/bin/python benchmarks/reproduce_cnm.py --datasets trecqa --variants cnm-global cnm-trace --seeds 0 1 2 3 4 --threads 1 --out /tmp/abltrec --tag ablations_trecqa_global_trace > /tmp/abltrec/gt.log 2>&1 ) 2> /tmp/abltrec/gt.time &
wait
uptime >> /tmp/abltrec/uptime.txt
