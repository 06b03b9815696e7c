"""cProfile of fit() at its defaults, one worker, 2 epochs of the 750k-token drift corpus (after a warm-up fit)."""
import cProfile, pstats, time
import torch
torch.set_num_threads(1)
from qpnlp.data.synthetic_drift import drift_spec, generate_drift_corpus
from qpnlp.word2fun import TrainConfig, fit
corpus, _ = generate_drift_corpus(drift_spec(n_tokens=750_000, seed=0))
fit(corpus, TrainConfig(epochs=1, seed=0, workers=1), dim=100)  # warm
t = time.perf_counter()
r = fit(corpus, TrainConfig(epochs=2, seed=0, workers=1), dim=100)
print("plain", r.stats.tokens_per_s, time.perf_counter() - t)
pr = cProfile.Profile(); pr.enable()
r = fit(corpus, TrainConfig(epochs=2, seed=0, workers=1), dim=100)
pr.disable(); print("prof", r.stats.tokens_per_s)
pstats.Stats(pr).sort_stats("tottime").print_stats(25)
