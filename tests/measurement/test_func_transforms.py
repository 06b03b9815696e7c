"""torch.func over qpnlp.measurement with validation on: vmap equals the loop over the batch.

Every function below failed under ``vmap`` with torch's "data-dependent control flow is not supported" (or
"Cannot access data pointer of Tensor that doesn't have storage") from a value check; the update rules from their
always-on check that the outcome is possible. The value checks now pass vmapped tensors, as they pass meta ones.
"""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call, grad, vmap

import qpnlp.hilbert as H
import qpnlp.measurement as M
from qpnlp.hilbert import DensityMatrix, Ensemble, PureState

B, D, N, K = 3, 4, 5, 3
DT = torch.complex128


def _unit(*shape, seed=0):
    z = torch.randn(*shape, dtype=DT, generator=torch.Generator().manual_seed(seed))
    return z / z.norm(dim=-1, keepdim=True)


PSI = _unit(B, D)
WORDS = _unit(B, N, D, seed=1)
WEIGHTS = torch.softmax(torch.randn(B, N, dtype=torch.float64, generator=torch.Generator().manual_seed(2)), -1)
RHO = torch.stack([DensityMatrix.from_ensemble(WORDS[i], WEIGHTS[i]).data for i in range(B)])
PROJECTORS = _unit(K, D, seed=3)
POVM = M.random_povm(D, 4, dtype=DT, generator=torch.Generator().manual_seed(4))
ONE = M.Projector(_unit(1, D, seed=5))

CASES = {
    "born_probabilities": (lambda s, w: M.born_probabilities(s, w, PROJECTORS), (WORDS, WEIGHTS)),
    "born_probabilities_dense": (lambda r: M.born_probabilities_dense(r, PROJECTORS), (RHO,)),
    "word_probabilities": (lambda s: M.word_probabilities(s, PROJECTORS), (WORDS,)),
    "povm_probabilities": (lambda s, w: M.povm_probabilities(s, w, POVM.vectors), (WORDS, WEIGHTS)),
    "povm_probabilities_dense": (lambda r: M.povm_probabilities_dense(r, POVM.vectors), (RHO,)),
    "Projector": (lambda v: M.Projector(v.unsqueeze(0)).matrix(), (PSI,)),
    "lueders_update of a pure state": (lambda a: M.lueders_update(PureState(a), ONE).data, (PSI,)),
    "lueders_update of a density matrix": (lambda r: M.lueders_update(DensityMatrix(r), ONE).data, (RHO,)),
    "kraus_update of an ensemble": (lambda s, w: M.kraus_update(Ensemble(s, w), POVM.kraus()[1]).dense().data,
                                    (WORDS, WEIGHTS)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_with_validation_on_equals_the_loop(name):
    function, args = CASES[name]
    with H.validation(True):
        looped = torch.stack([function(*(a[i] for a in args)) for i in range(B)])
        mapped = vmap(function)(*args)
    torch.testing.assert_close(mapped, looped)


@pytest.mark.parametrize("make", [lambda: M.ProjectiveMeasurement(D, K, dtype=DT, generator=torch.Generator()),
                                  lambda: M.POVMMeasurement(D, K + 1, dtype=DT, generator=torch.Generator())],
                         ids=["ProjectiveMeasurement", "POVMMeasurement"])
def test_per_sample_parameter_gradients_of_a_measurement_equal_the_loop(make):
    module = make()
    params = {name: p.detach() for name, p in module.named_parameters()}

    def loss(p, states, weights):
        return functional_call(module, p, (states, weights))[0]

    looped = [grad(loss)(params, WORDS[i], WEIGHTS[i]) for i in range(B)]
    mapped = vmap(grad(loss), in_dims=(None, 0, 0))(params, WORDS, WEIGHTS)
    for name in params:
        torch.testing.assert_close(mapped[name], torch.stack([g[name] for g in looped]))
