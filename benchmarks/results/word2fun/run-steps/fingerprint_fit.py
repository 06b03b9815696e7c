"""Hash of the parameters and the epoch losses of fit() in six settings (one worker): run with two trees, compare."""
import sys, torch, hashlib
torch.set_num_threads(1)
from qpnlp.data.synthetic_drift import drift_spec, generate_drift_corpus
from qpnlp.word2fun import TrainConfig, fit
corpus, _ = generate_drift_corpus(drift_spec(n_tokens=60_000, seed=1))
cases = {
 "default": (TrainConfig(epochs=2, seed=0), {}),
 "small-batch": (TrainConfig(epochs=2, seed=0, batch_size=7, chunk_tokens=5000), {}),
 "III": (TrainConfig(epochs=2, seed=0), {"family": "III"}),
 "perpair": (TrainConfig(epochs=1, seed=0, shared_negatives=False, negatives=5), {}),
 "nopen": (TrainConfig(epochs=2, seed=0, roughness_penalty=0.0, rare_lr_power=0.0), {}),
 "pen-norl": (TrainConfig(epochs=2, seed=0, rare_lr_power=0.0), {}),
}
out = {}
for name, (cfg, kw) in cases.items():
    r = fit(corpus, cfg, dim=20, **kw)
    h = hashlib.sha256()
    for k, v in sorted(r.vectors.model.state_dict().items()):
        h.update(k.encode()); h.update(v.detach().cpu().numpy().tobytes())
    out[name] = (h.hexdigest()[:16], [repr(x) for x in r.stats.epoch_loss])
    print(name, out[name][0], out[name][1])
torch.save(out, sys.argv[1])
