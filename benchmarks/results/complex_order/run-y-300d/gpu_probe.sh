#!/usr/bin/env bash
# How long a Transformer SST-2 epoch takes on the GPU: one job alone, then four at once (seconds_per_epoch in results.json).
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 PYTHONPATH=$PWD:$PWD/.gpu/site QPNLP_DATA=$PWD/.gpu/data
job() { python3 benchmarks/reproduce_complex_order.py --datasets SST2 --networks transformer --seeds $1 --variants $2 --vectors spacy-md-300d --epochs $3 --patience 5 --threads 1 --device cuda --out /tmp/probe/$4 > /tmp/probe/$4.log 2>&1; }
mkdir -p /tmp/probe; t0=$(date +%s)
job 0 complex_order 2 solo; echo "solo $(( $(date +%s) - t0 )) s" >> /tmp/probe/times.txt; tar czf $OUT/probe.tgz -C /tmp/probe .
t0=$(date +%s)
for i in 1 2 3 4; do job $i complex_order 1 four$i & done; wait; echo "four $(( $(date +%s) - t0 )) s" >> /tmp/probe/times.txt
tar czf $OUT/probe.tgz -C /tmp/probe .
