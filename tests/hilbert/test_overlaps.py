"""Overlaps of batches of states, products of mixtures' factors and slices of a batch (qpnlp.hilbert._overlaps), and
the metrics that read a batch of ensembles through them without copying its states."""

import warnings

import pytest
import torch
from torch.testing import assert_close

from qpnlp.hilbert import (Ensemble, PureState, hilbert_schmidt_distance, infidelity, quantum_jensen_shannon_divergence,
                           random_pure_state, trace_distance)
from qpnlp.hilbert import _mixture, _overlaps


@pytest.fixture
def one_entry_slices(monkeypatch):
    """``in_slices`` cuts every batch it is given into slices of one entry (SLICE_BYTES = 1)."""
    monkeypatch.setattr(_overlaps, "SLICE_BYTES", 1)


def _batch(dtype=torch.complex128, batch=(9,), n=4, d=64, seed=0, requires_grad=False) -> Ensemble:
    gen = torch.Generator().manual_seed(seed)
    real = torch.float64 if dtype == torch.complex128 else torch.float32
    logits = torch.randn(*batch, n, dtype=real, generator=gen).requires_grad_(requires_grad)
    mask = torch.ones(*batch, n, dtype=torch.bool)
    mask[..., -1] = False                                                      # padding: a weight exactly 0
    states = random_pure_state(d, batch_shape=(*batch, n), dtype=dtype, generator=gen)
    return Ensemble(states, torch.softmax(logits.masked_fill(~mask, float("-inf")), -1))


def _states_entries(ensemble: Ensemble) -> int:
    return ensemble.states.data.numel()


def test_the_mode_sees_the_copies_bmm_and_qr_make_inside_their_kernels(largest_tensor):
    """torch's CPU bmm copies a conjugate operand whole, and linalg_qr its input: the fixture counts them."""
    x = torch.randn(10, 4, 30, dtype=torch.complex128)
    with largest_tensor() as seen:
        x.conj() @ x.mT
    assert seen.largest == x.numel()
    with largest_tensor() as seen:
        torch.linalg.qr(x.mT, mode="r")
    assert seen.largest == x.numel()


@pytest.mark.parametrize("dtype", [torch.complex128, torch.complex64])
def test_gram_and_purity_of_a_batch_never_copy_its_states(dtype, one_entry_slices, largest_tensor):
    """The Gram matrix from the overlaps of the states, slice by slice: ``a.mH @ a`` of the factor held a scaled copy
    of every state and, the conjugate operand of bmm, a second one. Values as the factor's Gram matrix."""
    batch = _batch(dtype)
    with largest_tensor() as seen:
        gram, purity = batch.gram(), batch.purity()
    assert seen.largest <= _states_entries(batch) // 9, seen.largest          # one entry's states; the result is less
    factor = batch.factor()
    expected = factor.mH @ factor
    tol = dict(rtol=0, atol=1e-15) if dtype == torch.complex128 else dict(rtol=0, atol=5e-7)
    assert_close(gram, expected, **tol)
    assert_close(purity, expected.abs().square().sum((-2, -1)), **tol)
    assert torch.equal(gram, gram.mH)                                 # exactly Hermitian, whatever the BLAS kernel


def test_slices_give_the_values_and_gradients_of_one_product(monkeypatch):
    batch = _batch(batch=(5, 3), requires_grad=True)
    logits = batch.weights
    whole = batch.gram()
    grad_whole, = torch.autograd.grad(whole.abs().square().sum() + whole.real.sum(), logits)
    monkeypatch.setattr(_overlaps, "SLICE_BYTES", 1)
    sliced = batch.gram()
    grad_sliced, = torch.autograd.grad(sliced.abs().square().sum() + sliced.real.sum(), logits)
    assert_close(sliced, whole, rtol=0, atol=1e-15)
    assert_close(grad_sliced, grad_whole, rtol=0, atol=1e-14)
    assert torch.isfinite(grad_sliced).all()                                   # the padding's zero weights


def test_overlaps_conjugate_the_smaller_side_and_broadcast_without_expanding(largest_tensor):
    gen = torch.Generator().manual_seed(3)
    a = random_pure_state(16, batch_shape=(4, 1, 2), dtype=torch.complex128, generator=gen).data
    b = random_pure_state(16, batch_shape=(7, 5), dtype=torch.complex128, generator=gen).data
    with largest_tensor() as seen:
        forward, backward = _overlaps.overlaps(a, b), _overlaps.overlaps(b, a)
    assert seen.largest <= 4 * 7 * 2 * 5, seen.largest                         # the results: no operand expanded
    expected = a.conj() @ b.mT
    assert_close(forward, expected, rtol=0, atol=1e-15)
    assert_close(backward, expected.mH, rtol=0, atol=1e-15)


@pytest.mark.parametrize("kind", ["pure", "ensemble"])
def test_qjsd_against_a_batch_never_copies_its_states(kind, one_entry_slices, largest_tensor):
    """The blocks of the average's Gram matrix from overlaps: no factor of the batch, no conjugate copy of it."""
    batch = _batch()
    gen = torch.Generator().manual_seed(4)
    one = (random_pure_state(64, dtype=torch.complex128, generator=gen) if kind == "pure"
           else Ensemble(random_pure_state(64, batch_shape=(3,), dtype=torch.complex128, generator=gen)))
    with largest_tensor() as seen:
        value = quantum_jensen_shannon_divergence(one, batch)
    assert seen.largest < _states_entries(batch) // 4, seen.largest           # Gram matrices (9, 7, 7) at most
    expected = quantum_jensen_shannon_divergence(one.dense() if kind == "ensemble" else one.proj(), batch.dense())
    assert_close(value, expected, rtol=0, atol=1e-12)


def test_infidelity_against_a_batch_holds_the_residual_of_one_slice(one_entry_slices, largest_tensor):
    """1 - F from the residual of the states orthogonal to psi, slice by slice: the residual of the whole batch, the
    factor and their real squares held the batch three times over. Values as the factor formula."""
    batch = _batch()
    psi = random_pure_state(64, dtype=torch.complex128, generator=torch.Generator().manual_seed(5))
    with largest_tensor() as seen:
        value = infidelity(psi, batch)
    assert seen.largest <= _states_entries(batch) // 9, seen.largest
    column, factor = psi.data.unsqueeze(-1), batch.factor()                    # the previous computation
    residual = factor - column @ ((column.mH @ factor) / (column.mH @ column).real)
    expected = residual.abs().square().sum((-2, -1)) / factor.abs().square().sum((-2, -1))
    assert_close(value, expected, rtol=1e-12, atol=0)
    assert_close(infidelity(batch, psi), value, rtol=0, atol=0)


def test_infidelity_of_equal_pure_states_in_slices_is_exactly_zero(one_entry_slices):
    states = random_pure_state(64, batch_shape=(6,), dtype=torch.complex64, generator=torch.Generator().manual_seed(6))
    assert torch.equal(infidelity(states, PureState(states.data.clone())), torch.zeros(6))


@pytest.mark.parametrize("distance", [trace_distance, hilbert_schmidt_distance])
def test_distances_of_ensembles_hold_one_slice_of_the_stacked_factor(distance, one_entry_slices, largest_tensor):
    """F = [A, B] written once per slice and QR's copy of it; never a d x d matrix per pair (the Hilbert-Schmidt
    distance built the dense difference), nor a factor of the batch, nor F of the whole batch."""
    batch = _batch()
    one = _batch(batch=(), n=3, seed=7)
    with torch.no_grad(), largest_tensor() as seen:
        value = distance(one, batch)
    k, d = 3 + 4, 64
    assert seen.largest <= k * d, seen.largest                                  # one pair's F
    expected = distance(one.dense(), batch.dense())
    assert_close(value, expected, rtol=0, atol=1e-13)


@pytest.fixture
def dense_in_chunks(monkeypatch):
    """``_mixture.dense`` sums in chunks whatever the size of the copy it saves (DENSE_COPY_BYTES = 0)."""
    monkeypatch.setattr(_mixture, "DENSE_COPY_BYTES", 0)


def _one_product(states: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """The density matrix as qpnlp computed it before the chunks: one product with a weighted copy of the states."""
    return states.mT @ (states.conj() * weights.to(states.dtype).unsqueeze(-1))


@pytest.mark.parametrize("n", [20, 40])                                     # one product; two chunks of 20
@pytest.mark.parametrize("dtype", [torch.complex128, torch.complex64])
def test_the_dense_matrix_of_an_ensemble_hands_bmm_no_conjugate_view(dtype, n, dense_in_chunks):
    """``weighted.mT @ states.conj()`` held the weighted states and, the conjugate operand of bmm, a copy of the
    states at once (200 mixtures of 200 states in C^300: 641 MiB at the peak, 458 MiB after, the result included);
    the transposed states times the weighted conjugates give bmm (and each chunk's baddbmm_) plain operands."""
    from torch.utils._python_dispatch import TorchDispatchMode

    products = (torch.ops.aten.bmm.default, torch.ops.aten.baddbmm.default, torch.ops.aten.baddbmm_.default)

    class ConjugateOperands(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in products:
                self.seen += [(func.__name__, a.is_conj()) for a in args]
            return func(*args, **(kwargs or {}))

    mix = _batch(dtype, batch=(5,), n=n, d=8)
    with ConjugateOperands() as mode:
        rho = mix.dense().data
    chunks = [("bmm.default", False)] * 2 + [("baddbmm_.default", False)] * 3 * (n // 20 - 1)
    assert mode.seen == chunks
    tol = dict(rtol=0, atol=1e-15) if dtype == torch.complex128 else dict(rtol=0, atol=5e-7)
    assert_close(rho, _one_product(mix.states.data, mix.weights), **tol)


@pytest.mark.parametrize("dtype", [torch.complex128, torch.complex64])
def test_the_dense_matrix_of_a_long_mixture_never_copies_its_states(dtype, largest_tensor):
    """The members in chunks of max(32, d / 4), each chunk's product added to the result in place: the largest
    tensor made is the (3, d, d) result, where one product made a weighted copy (3, n, d) of the states (N = 40
    mixtures of 4000 states in C^32, complex128: 159 MiB added at the peak, 1.6 MiB now; benchmarks/dense_memory.py).
    Values as one product (at the default sizes: no constant patched)."""
    mix = _batch(dtype, batch=(3,), n=1000, d=64)
    with largest_tensor() as seen:
        rho = mix.dense().data
    assert seen.largest <= rho.numel() < _states_entries(mix) // 10, seen.largest
    tol = dict(rtol=0, atol=1e-15) if dtype == torch.complex128 else dict(rtol=0, atol=5e-7)
    assert_close(rho, _one_product(mix.states.data, mix.weights), **tol)


@pytest.mark.parametrize("batch", [(), (2, 3)])
def test_a_dense_matrix_in_chunks_has_the_gradients_of_one_product(batch, dense_in_chunks):
    """Reverse and forward mode through the in-place sum of the chunks (70 members: chunks of 35), as one product,
    and ``torch.func.vmap`` of it as the batched call."""
    gen = torch.Generator().manual_seed(8)
    states = torch.randn(*batch, 70, 8, dtype=torch.complex128, generator=gen).requires_grad_()
    weights = torch.rand(*batch, 70, dtype=torch.float64, generator=gen).requires_grad_()
    probe = torch.randn(8, 8, dtype=torch.complex128, generator=gen)
    tol = dict(rtol=1e-12, atol=1e-13)                                  # entries and gradients of order 10-100
    values, grads = [], []
    for function in (_mixture.dense, _one_product):
        rho = function(states, weights)
        values.append(rho)
        grads.append(torch.autograd.grad((rho * probe).real.sum() + rho.abs().square().sum(), (states, weights)))
    assert_close(values[0], values[1], **tol)
    for chunked, whole in zip(*grads):
        assert_close(chunked, whole, **tol)
    tangents = (torch.randn_like(states), torch.randn_like(weights))
    primals = (states.detach(), weights.detach())
    chunked, whole = (torch.func.jvp(f, primals, tangents)[1] for f in (_mixture.dense, _one_product))
    assert_close(chunked, whole, **tol)
    if batch:
        with warnings.catch_warnings():       # vmap takes one product: baddbmm_ has no batching rule (torch's loop)
            warnings.simplefilter("error")
            mapped = torch.func.vmap(_mixture.dense)(*primals)
        assert_close(mapped, values[1].detach(), **tol)


@pytest.mark.parametrize("batch", [(), (32,)])
def test_the_gram_matrix_of_a_small_ensemble_costs_what_the_factors_product_did(batch, dispatched_ops):
    """Small inputs: ``overlaps`` went through ``einsum`` also for equal batch shapes (its operands permuted and
    viewed around one ``bmm``) and ``scaled_overlaps(a, p, a, p)`` took the roots of p twice, so ``Ensemble.gram`` of
    3 states in C^8 dispatched 32 torch ops, 41 us against 15 us for ``f.mH @ f`` of the factor (13 ops); now ``@``
    and one root per weight, one op more than the factor's product made exactly Hermitian as the Gram matrix is.
    Values as before (broadcast batches keep ``einsum``)."""
    from qpnlp.hilbert._linalg import hermitian_part

    mix = _batch(torch.complex64, batch=batch, n=3, d=8)
    with dispatched_ops() as gram:
        mix.gram()
    with dispatched_ops() as product:
        f = mix.factor()
        hermitian_part(f.mH @ f)
    ops, factors_product = gram.names, product.names
    assert len(ops) <= len(factors_product) + 1 and ops.count("sqrt.default") == 1, (ops, factors_product)
    factor = mix.factor()
    assert_close(mix.gram(), factor.mH @ factor, rtol=0, atol=5e-7)


@pytest.mark.parametrize("d, low_rank", [(8, False), (39, False), (40, True), (64, True)])
def test_the_hilbert_schmidt_distance_takes_the_qr_route_from_d_40(monkeypatch, d, low_rank):
    """Below d = 40 the dense d x d difference is the faster route (d = 8: 48 us against 110 us with the QR); from
    there the (n+m) x (n+m) matrix; the same distance either way."""
    from qpnlp.hilbert import _low_rank

    calls, small = [], _low_rank._signed_gram_of_r
    monkeypatch.setattr(_low_rank, "_signed_gram_of_r", lambda *a, **k: calls.append(1) or small(*a, **k))
    rho, sigma = _batch(batch=(3,), n=3, d=d, seed=1), _batch(batch=(3,), n=2, d=d, seed=2)
    got = hilbert_schmidt_distance(rho, sigma)
    assert bool(calls) == low_rank
    dense = torch.linalg.matrix_norm(rho.dense().data - sigma.dense().data)
    assert_close(got, dense, rtol=1e-12, atol=1e-12)
    assert_close(trace_distance(rho, sigma), 0.5 * torch.linalg.matrix_norm(rho.dense().data - sigma.dense().data,
                                                                             "nuc"), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["pure", "ensemble"])
def test_qjsd_through_the_dense_average_never_expands_one_side_to_the_batch(kind, largest_tensor):
    """n + m >= d: the average's d x d matrix is each side's own, summed with broadcasting; the member lists were
    concatenated per pair, (9, n + m, d): the state copied 9 times with the batch's states. Values and gradients as
    the dense formula."""
    batch = _batch(n=12, d=8, requires_grad=True)
    gen = torch.Generator().manual_seed(6)
    one = (random_pure_state(8, dtype=torch.complex128, generator=gen) if kind == "pure"
           else Ensemble(random_pure_state(8, batch_shape=(3,), dtype=torch.complex128, generator=gen)))
    with largest_tensor() as seen:
        value = quantum_jensen_shannon_divergence(one, batch)
    assert seen.largest <= _states_entries(batch), seen.largest      # Ensemble.dense's weighted copy of the batch
    expected = quantum_jensen_shannon_divergence(one.dense() if kind == "ensemble" else one.proj(), batch.dense())
    assert_close(value, expected, rtol=0, atol=1e-14)
    grad, = torch.autograd.grad(value.sum(), batch.weights)
    grad_expected, = torch.autograd.grad(expected.sum(), batch.weights)
    assert_close(grad, grad_expected, rtol=0, atol=1e-13)
