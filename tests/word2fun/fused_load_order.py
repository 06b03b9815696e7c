"""A process for ``test_fused_runs``: the compiled step, loaded in a chosen order, through a run and batch by batch.

``python fused_load_order.py compile FILE``: compile the run kernel and the step (numba's cache, at
``NUMBA_CACHE_DIR``, saves them with their helpers) and write the signatures each helper of the step was compiled
for to ``FILE`` (pickle).

``python fused_load_order.py compare FILE``: load the run kernel from the cache first, then each helper of the step
for the signatures of ``FILE`` (what a process that ran another test before has loaded; the helpers inlined into the
kernel have none, ``_sincos`` and ``_exp_minus_abs`` are compiled on their own), then train
``test_fused_runs``' runs (family II, float32, row step sizes, roughness 0.01) through :func:`run_steps` and batch
by batch: prints the two loss sums, whether every parameter is equal and how many helpers came from the cache.

``python fused_load_order.py train``: train those runs through :func:`run_steps` (families II-IV, float32 and
float64), the kernel compiled into an empty cache or loaded from it: prints, per run, the loss sum and a hash of the
parameters' bytes, then whether the kernel came from the cache.
"""

import hashlib

import pickle
import sys

import numpy as np
import torch

from qpnlp.data.skipgram import NegativeSampler
from qpnlp.word2fun import _fused_kernel, fused_runs, fused_step

FAMILY, DTYPE = "II", torch.float32


def _train(fused: bool, family=FAMILY, dtype=DTYPE):
    """``(model, loss sum)`` of two epochs on ``test_fused_runs``' runs, by :func:`run_steps` or batch by batch."""
    from conftest import _make     # here, not at the top: pytest imports this file for doctests, without its folder
    from test_fused_runs import CASES, K, V, _model, _one_by_one, _runs, _weights

    m = _model(_make, family, dtype)
    step, gen, total, done = fused_step.FusedStep(m, 1.5), torch.Generator().manual_seed(5), 0.0, 0.0
    sampler, weights = NegativeSampler(np.arange(1, V + 1)), _weights(CASES[0])
    for e in range(2):
        for run in _runs():
            lrs = fused_runs.learning_rates(0.05, 2, e, done, run.progress)
            total = (fused_runs.run_steps(step, run, sampler, gen, K, lrs, weights, total) if fused
                     else _one_by_one(step, run, sampler, gen, lrs, weights, total))
            done = float(run.progress[-1])
    return m, total


def _trained() -> list:
    """``loss sum`` and the SHA-256 of the parameters' bytes of each family and dtype's run (:func:`_train`)."""
    out = []
    for family in ("II", "III", "IV"):
        for dtype in (torch.float32, torch.float64):
            m, total = _train(True, family, dtype)
            digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in m.parameters())).hexdigest()
            out += [repr(total), digest[:16]]
    return out


def main(stage: str, path: str = "") -> None:
    from conftest import _make
    from test_fused_runs import K, _model

    fused_step.ENABLED = True
    if stage == "train":
        trained = _trained()
        print(*trained, sum(_fused_kernel._kernel().stats.cache_hits.values()) > 0)
        return
    step = fused_step.FusedStep(_model(_make, FAMILY, DTYPE), 1.5)
    fused_runs.compile_runs(step, K)
    if stage == "compile":
        step.compile()
        with open(path, "wb") as f:
            pickle.dump({name: list(d.signatures) for name, d in _fused_kernel._dispatchers().items()}, f)
        return
    with open(path, "rb") as f:
        signatures = pickle.load(f)
    hits = 0
    for name, d in _fused_kernel._dispatchers().items():
        for sig in signatures[name]:
            d.compile(sig)
        hits += sum(d.stats.cache_hits.values())
    (a, total_a), (b, total_b) = _train(True), _train(False)
    same = all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    print(repr(total_a), repr(total_b), same, hits)


if __name__ == "__main__":
    main(*sys.argv[1:])
