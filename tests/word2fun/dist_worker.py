"""Run by ``torchrun`` in test_distributed.py: fit on a TSV corpus, save this rank's parameters.

``mode`` "train" trains from scratch and also keeps the checkpoint of the
first epoch as ``<checkpoint>-epoch1``; "resume" continues from the checkpoint.
"""

import shutil
import sys

import numpy as np
import torch

from qpnlp.data import read_tsv
from qpnlp.word2fun import TrainConfig, fit
from qpnlp.word2fun.distributed import rank, shutdown

def main(corpus_path: str, out: str, checkpoint: str, device: str = "cpu", mode: str = "train") -> None:
    torch.set_num_threads(1)

    def keep_first(epoch, stats):  # after the checkpoint is written and every process has passed the barrier
        if epoch == 0 and rank() == 0:
            shutil.copytree(checkpoint, f"{checkpoint}-epoch1")

    result = fit(read_tsv(corpus_path), TrainConfig(epochs=2, seed=0, sync_every=4, device=device), dim=12,
                 min_count=3, checkpoint=checkpoint, resume=mode == "resume",
                 on_epoch=keep_first if mode == "train" else None)
    params = {k: v.detach().cpu().numpy() for k, v in result.vectors.model.state_dict().items()}
    np.savez(f"{out}-rank{rank()}.npz", world=result.world_size, tokens=result.stats.tokens, **params)
    shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:6])
