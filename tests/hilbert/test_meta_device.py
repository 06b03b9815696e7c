"""Tensors on the meta device (shapes, no values): the value checks pass them, the static checks still run.

With validation on, every function below failed with torch's "Tensor.item() cannot be called on meta tensors"
(or "Cannot copy out of meta tensor") from inside a value check; with it off they computed shapes.
"""

from __future__ import annotations

import pytest
import torch

import qpnlp.hilbert as H
import qpnlp.measurement as M

D = 4


def _meta(*shape, dtype=torch.complex128):
    return torch.empty(*shape, dtype=dtype, device="meta")


CALLS = {
    "DensityMatrix": (lambda: H.DensityMatrix(_meta(2, D, D)).data, (2, D, D)),
    "DensityMatrix.from_ensemble": (lambda: H.DensityMatrix.from_ensemble(
        _meta(2, 5, D), _meta(2, 5, dtype=torch.float64), torch.ones(2, 5, dtype=torch.bool, device="meta")).data,
        (2, D, D)),
    "PureState.from_polar": (lambda: H.PureState.from_polar(_meta(2, D, dtype=torch.float64),
                                                            _meta(2, D, dtype=torch.float64)).data, (2, D)),
    "normalize": (lambda: H.normalize(_meta(2, D)), (2, D)),
    "SememeBasis": (lambda: H.SememeBasis(_meta(D, D)).vectors, (D, D)),
    "masked_softmax": (lambda: H.masked_softmax(_meta(2, 3, dtype=torch.float64),
                                                torch.ones(2, 3, dtype=torch.bool, device="meta")), (2, 3)),
    "fidelity": (lambda: H.fidelity(H.DensityMatrix(_meta(2, D, D)), H.DensityMatrix(_meta(2, D, D))), (2,)),
    "von_neumann_entropy": (lambda: H.von_neumann_entropy(H.DensityMatrix(_meta(2, D, D))), (2,)),
    "random_pure_state": (lambda: H.random_pure_state(D, device="meta").data, (D,)),
    "born_probabilities": (lambda: M.born_probabilities(_meta(2, 5, D), _meta(2, 5, dtype=torch.float64),
                                                        _meta(3, D)), (2, 3)),
    "born_probabilities_dense": (lambda: M.born_probabilities_dense(_meta(2, D, D), _meta(3, D)), (2, 3)),
    "povm_probabilities": (lambda: M.povm_probabilities(_meta(2, D), None, _meta(3, 1, D)), (2, 3)),
    "POVM.from_frame": (lambda: M.POVM.from_frame(_meta(6, D)).vectors, (6, 1, D)),
    "kraus_update": (lambda: M.kraus_update(H.DensityMatrix(_meta(2, D, D)), _meta(D, D)).data, (2, D, D)),
}


@pytest.mark.parametrize("mode", [True, "strict"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_meta_tensors_give_shapes_with_validation_on(name, mode):
    call, shape = CALLS[name]
    with H.validation(mode):
        out = call()
    assert out.is_meta and tuple(out.shape) == shape


def test_static_checks_still_run_on_meta_tensors():
    with pytest.raises(TypeError, match="must be complex64 or complex128"):
        H.DensityMatrix(_meta(2, D, D, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"must have shape \(\.\.\., d, d\)"):
        H.DensityMatrix(_meta(2, D, D + 1))
    with pytest.raises(ValueError, match="dimension mismatch"):
        M.born_probabilities(_meta(2, D), None, _meta(3, D + 1))
    with pytest.raises(ValueError, match=r"frame vectors must span C\^4"):     # fewer vectors than d: a shape fact
        M.POVM.from_frame(_meta(3, D))
