"""Run by torchrun (2 processes): parameter hash and epoch losses of fit() with sync_every=7 (runs split at syncs)."""
import sys, hashlib, torch
torch.set_num_threads(1)
from qpnlp.data import read_tsv
from qpnlp.word2fun import TrainConfig, fit
from qpnlp.word2fun.distributed import is_main_process, shutdown
r = fit(read_tsv(sys.argv[1]), TrainConfig(epochs=2, seed=0, sync_every=7), dim=20)
if is_main_process():
    h = hashlib.sha256()
    for k, v in sorted(r.vectors.model.state_dict().items()):
        h.update(k.encode()); h.update(v.detach().cpu().numpy().tobytes())
    print("HASH", h.hexdigest()[:16], r.stats.epoch_loss, r.world_size)
shutdown()
