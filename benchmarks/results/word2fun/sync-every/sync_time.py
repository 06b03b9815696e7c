"""Time spent in ParameterSync.step (the all_reduce and the wait for the other process) by each process of a
2-process Word2Fun run, for a given sync_every.

    python -c "from qpnlp.data.synthetic_drift import drift_spec, generate_drift_corpus; from qpnlp.data import \
write_tsv; write_tsv(generate_drift_corpus(drift_spec(n_tokens=750_000, seed=0))[0], '/tmp/corpus.tsv')"
    OMP_NUM_THREADS=1 torchrun --nproc-per-node 2 benchmarks/results/word2fun/sync-every/sync_time.py \
        /tmp/corpus.tsv '{"sync_every": 32}'
"""
import json
import os
import sys
import time

import torch

from qpnlp.data import read_tsv
from qpnlp.word2fun import TrainConfig, distributed, fit
from qpnlp.word2fun.distributed import shutdown

spent = {"sync_s": 0.0, "syncs": 0}
real = distributed.ParameterSync.step


def timed(self, has_more):
    t = time.perf_counter()
    out = real(self, has_more)
    spent["sync_s"] += time.perf_counter() - t
    spent["syncs"] += 1
    return out


distributed.ParameterSync.step = timed
torch.set_num_threads(1)
kw = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
r = fit(read_tsv(sys.argv[1]), TrainConfig(epochs=2, seed=0, **kw), dim=100)
print(f"rank {os.environ.get('RANK')} {kw}: train {r.stats.seconds:.2f} s, {r.stats.tokens_per_s:,.0f} tokens/s, "
      f"in ParameterSync.step {spent['sync_s']:.2f} s over {spent['syncs']} synchronisations", flush=True)
shutdown()
