"""Alternate the new and the previous Word2Fun defaults (same tree, 1 worker, 1 thread) on the corpus of
benchmarks/word2fun_speed.py (750k tokens, 5 epochs, dim 100): tokens/s of each, 4 rounds, order swapped every round."""
import statistics

import torch

from qpnlp.data.synthetic_drift import drift_spec, generate_drift_corpus
from qpnlp.word2fun import TrainConfig, fit
torch.set_num_threads(1)
corpus, _ = generate_drift_corpus(drift_spec(n_tokens=750_000, seed=0))
cfgs = {"now (5, 0.01, 2048)": {}, "before (1.5, 0.025, 8192)": dict(negative_weight=1.5, lr=0.025, batch_size=8192)}
res = {k: [] for k in cfgs}
for r in range(4):
    for name, kw in (cfgs.items() if r % 2 == 0 else reversed(list(cfgs.items()))):
        st = fit(corpus, TrainConfig(epochs=5, seed=0, workers=1, **kw), dim=100, progress=False).stats
        res[name].append(st.tokens_per_s)
        print(r, name, round(st.tokens_per_s), flush=True)
for k, v in res.items():
    print(k, "median", round(statistics.median(v)), [round(x) for x in v])
print("ratio of medians now/before", round(statistics.median(res["now (5, 0.01, 2048)"]) / statistics.median(res["before (1.5, 0.025, 8192)"]), 3))
