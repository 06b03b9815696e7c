"""Robustness fixes of qpnlp.nn: bad arguments are refused with the argument named, never turned into NaN.

Each test failed before its fix: the embedding options (flags that are strings, an infinite or a string
frequency scale), layer hyper-parameters that are NaN or out of range (``eps``, Hirose's ``m``, modReLU's bias,
the sum gate's ``alpha``, a Cayley step's ``lr``), inputs that are not tensors or have the wrong rank or dtype,
the 'pe' table's position error, the one dropout check, masked_scan's mask and inputs, ComplexWordEmbedding's
``padding_idx`` and CGRNN's ``h0``.
"""

from __future__ import annotations

import re

import pytest
import torch

from qpnlp.hilbert import random_unitary
from qpnlp.nn import (CGRNN, CayleyStepSGD, ComplexConv1d, ComplexDropout, ComplexLinear,
                      ComplexMultiheadSelfAttention, ComplexOrderEmbedding, ComplexRNN, ComplexWordEmbedding, Hirose,
                      ModReLU,
                      PartLayerNorm, Readout, RealPositionalEmbedding, SumGate, cayley_step, complex_dropout,
                      gate_prod, gate_sum, hirose, make_embedding, masked_scan, modrelu, readout, split_activation)

C64 = torch.complex64
NAN, INF = float("nan"), float("inf")
IDS = torch.tensor([[2, 3, 4]])


def _z(*shape):
    return torch.randn(*shape, dtype=C64, generator=torch.Generator().manual_seed(0))


# ------------------------------------------------------------------------------- 1. embedding options
@pytest.mark.parametrize("options, error, match", [
    (dict(initial_phase="no"), TypeError, r"initial_phase must be True or False; got str 'no'"),
    (dict(sparse="no"), TypeError, r"sparse must be True or False; got str 'no'"),
    (dict(frequency_scale="2"), TypeError, r"frequency_scale must be a positive finite number; got str '2'"),
    (dict(frequency_init="uniform", frequency_scale=INF), ValueError, r"frequency_scale must be .* finite.*inf"),
    (dict(frequency_init="normal", frequency_scale=NAN), ValueError, r"frequency_scale must be .* finite.*nan"),
    (dict(frequency_scale=0.0), ValueError, r"frequency_scale must be a positive"),
    (dict(frequency_scale=True), TypeError, r"frequency_scale must be a positive finite number; got bool"),
])
def test_make_embedding_checks_the_type_and_value_of_each_option(options, error, match):
    """'no' was truthy (trainable phases, sparse tables switched on); inf gave NaN embeddings; '2' met '>'."""
    with pytest.raises(error, match=match):
        make_embedding("complex_order", 10, 4, **options)


def test_complex_order_embedding_refuses_string_flags_and_an_infinite_scale():
    with pytest.raises(TypeError, match="initial_phase must be True or False"):
        ComplexOrderEmbedding(10, 4, initial_phase="no")
    with pytest.raises(TypeError, match="freeze_amplitude must be True or False"):
        ComplexOrderEmbedding(10, 4, freeze_amplitude=1)
    with pytest.raises(ValueError, match="frequency_scale must be a positive finite number; got inf"):
        ComplexOrderEmbedding(10, 4, frequency_init="uniform", frequency_scale=INF)
    with pytest.raises(TypeError, match="sparse must be True or False"):
        RealPositionalEmbedding(10, 4, sparse="no")


def test_a_frequency_scale_that_overflows_the_dtype_is_refused():
    """1e300 is finite as a Python float but infinite in float32: NaN phases at position 0."""
    with pytest.raises(ValueError, match="frequency_scale 1e\\+300 overflows torch.float32"):
        ComplexOrderEmbedding(10, 4, frequency_init="uniform", frequency_scale=1e300)
    emb = ComplexOrderEmbedding(10, 4, frequency_init="uniform", frequency_scale=1e300, dtype=torch.float64)
    assert torch.isfinite(emb(IDS, IDS != 0)).all()


def test_unknown_options_and_options_of_another_kind_are_type_errors():
    with pytest.raises(TypeError, match=r"\['foo'\] are unknown options for kind 'complex_order'"):
        make_embedding("complex_order", 10, 4, foo=1)
    with pytest.raises(TypeError, match=r"\['initial_phase'\] apply to complex_order only"):
        make_embedding("complex_vanilla", 10, 4, initial_phase=True)
    with pytest.raises(TypeError, match="sparse must be True or False"):
        make_embedding("pe", 10, 4, sparse="no")


def test_valid_options_still_build():
    emb = make_embedding("complex_order", 10, 4, initial_phase=True, sparse=False, frequency_init="uniform",
                         frequency_scale=2, amplitude_sharing="word", frequency_sharing="dimension")
    assert emb.phase is not None and not emb.phase.sparse
    assert torch.isfinite(emb(IDS, IDS != 0)).all()


# ------------------------------------------------------------------------------- 2. layer hyper-parameters
@pytest.mark.parametrize("eps, error", [(-1.0, ValueError), (NAN, ValueError), (INF, ValueError),
                                        ("1e-5", TypeError)])
def test_part_layer_norm_refuses_a_negative_or_non_finite_eps(eps, error):
    """eps=-1 or NaN built a layer whose every output was NaN."""
    with pytest.raises(error, match=r"eps must be a finite number >= 0"):
        PartLayerNorm(4, eps=eps)


def test_part_layer_norm_accepts_eps_zero_and_numbers():
    assert PartLayerNorm(4, eps=0.0).norm_re.eps == 0.0
    assert PartLayerNorm(4, eps=1).norm_re.eps == 1.0


@pytest.mark.parametrize("call, match", [
    (lambda z: hirose(z, NAN), r"Hirose scale m must be a finite non-zero number; got nan"),
    (lambda z: hirose(z, INF), r"Hirose scale m must be a finite non-zero number; got inf"),
    (lambda z: Hirose(NAN), r"Hirose scale m must be a finite non-zero number; got nan"),
    (lambda z: modrelu(z, NAN), r"modReLU bias b must be a finite number; got nan"),
    (lambda z: modrelu(z.real, INF, scale_first=True), r"modReLU bias b must be a finite number; got inf"),
    (lambda z: ModReLU(4, init_bias=NAN), r"init_bias must be a finite number; got nan"),
    (lambda z: gate_sum(z, NAN), r"alpha must be a number in \[0, 1\]; got nan"),
    (lambda z: gate_sum(z, 2.0), r"alpha must be in \[0, 1\]; got 2.0"),
    (lambda z: gate_sum(z, -0.5), r"alpha must be in \[0, 1\]; got -0.5"),
    (lambda z: SumGate(NAN), r"alpha must be a number in \[0, 1\]; got nan"),
])
def test_activation_parameters_that_give_nan_are_refused(call, match):
    """NaN scales, biases and weights gave all-NaN outputs; gate_sum took 2.0 where SumGate(2.0) was refused."""
    with pytest.raises(ValueError, match=match):
        call(_z(2, 4))


def test_tensor_parameters_are_not_checked_and_still_work():
    """Tensors are learnable parameters (or a scheduler's values): no check, no host synchronisation."""
    z = _z(2, 4)
    torch.testing.assert_close(gate_sum(z, torch.tensor(0.5)), gate_sum(z, 0.5))
    torch.testing.assert_close(hirose(z, torch.tensor(2.0)), hirose(z, 2.0))
    torch.testing.assert_close(modrelu(z, torch.zeros(4)), modrelu(z, 0.0))
    assert float(Hirose(torch.tensor(2.0)).m) == 2.0          # a one-element tensor given to a constructor


def test_cayley_step_refuses_a_non_finite_step_size():
    eye, zeros = torch.eye(3, dtype=C64), torch.zeros(3, 3, dtype=C64)
    with pytest.raises(ValueError, match=r"lr must be a finite number; got nan"):
        cayley_step(eye, zeros, NAN)
    with pytest.raises(ValueError, match=r"lr must be a finite number > 0; got nan"):
        CayleyStepSGD([torch.nn.Parameter(eye.clone())], lr=NAN)
    torch.testing.assert_close(cayley_step(eye, zeros, 0.1), eye)


@pytest.mark.parametrize("lr, message", [(NAN, "lr must be a finite number > 0; got nan"),
                                         (-1.0, "lr must be positive; got -1.0"),
                                         (1e39, r"lr must be at most 3.403e\+38, the largest torch.float32")])
def test_cayley_step_sgd_checks_every_groups_rate(lr, message):
    # a group's own rate bypassed the check of the default: NaN, -1 and 1e39 (complex64) gave NaN matrices
    weight = torch.nn.Parameter(torch.eye(3, dtype=C64))
    with pytest.raises(ValueError, match=message):
        CayleyStepSGD([dict(params=[weight], lr=lr)])
    with pytest.raises(ValueError, match=message):
        CayleyStepSGD([weight], lr=lr)
    CayleyStepSGD([dict(params=[weight], lr=0.1)], lr=0.2)


@pytest.mark.parametrize("lr, message", [(NAN, "^lr must be a finite number > 0; got nan$"),
                                         (-1.0, r"^lr must be positive; got -1.0$"),
                                         (1e39, r"^lr must be at most 3.403e\+38, the largest torch.float32 "
                                                r"\(parameter 0 of param_groups\[{}\]\); got 1e\+39$")])
def test_cayley_step_sgd_checks_a_rate_set_in_param_groups_at_the_step(lr, message):
    # the constructor checked lr, but a rate written into param_groups later (a scheduler's, one's own) was not:
    # -1 stepped up the loss, and a NaN in a later group was refused only after the earlier groups had stepped
    weights = [torch.nn.Parameter(random_unitary(3, dtype=C64)) for _ in range(2)]
    optimiser = CayleyStepSGD([weights[0]], lr=0.1)
    optimiser.add_param_group(dict(params=[weights[1]]))
    before = [w.detach().clone() for w in weights]
    for w in weights:
        w.grad = torch.randn(3, 3, dtype=C64)
    for index in (0, 1):                                    # a later group fails: no group is stepped
        optimiser.param_groups[index]["lr"] = lr
        with pytest.raises(ValueError, match=message.format(index)):
            optimiser.step()
        assert all(torch.equal(w, b) for w, b in zip(weights, before))
        optimiser.param_groups[index]["lr"] = 0.1
    optimiser.step()
    assert not any(torch.equal(w, b) for w, b in zip(weights, before))


def test_cayley_step_sgd_under_a_scheduler_lowering_the_rate_takes_its_rates():
    # the check at every step lets legal rates through: each step is cayley_step at the scheduler's rate
    torch.manual_seed(5)
    weight = torch.nn.Parameter(random_unitary(3, dtype=C64))
    expected = weight.detach().clone()
    optimiser = CayleyStepSGD([weight], lr=0.4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimiser, step_size=1, gamma=0.5)
    for step in range(4):
        weight.grad = torch.randn(3, 3, dtype=C64)
        expected = cayley_step(expected, weight.grad, 0.4 * 0.5 ** step)
        optimiser.step()
        scheduler.step()
    assert optimiser.param_groups[0]["lr"] == 0.4 / 16 and torch.equal(weight.detach(), expected)


# ------------------------------------------------------------------------------- 4. inputs of the layers
@pytest.mark.parametrize("x", [torch.zeros(4, dtype=C64), torch.zeros(1, 2, 3, 4, dtype=C64)])
def test_conv1d_refuses_inputs_of_the_wrong_rank(x):
    """A 1-d input raised IndexError, a 4-d one conv1d's error about the transposed layout."""
    with pytest.raises(ValueError, match=r"x must have shape \(B, L, 4\) or \(L, 4\); got"):
        ComplexConv1d(4, 3, 2)(x)
    with pytest.raises(ValueError, match=r"x must have shape \(B, L, 4\) or \(L, 4\)"):
        ComplexConv1d(4, 3, 2, dtype=torch.float32)(x.real)


def test_conv1d_keeps_batched_and_unbatched_inputs():
    conv = ComplexConv1d(4, 3, 2)
    x = _z(2, 5, 4)
    assert conv(x).shape == (2, 4, 3)
    torch.testing.assert_close(conv(x[0]), conv(x)[0])


@pytest.mark.parametrize("call, name", [
    (lambda x: ComplexLinear(4, 3)(x), "x"),
    (lambda x: PartLayerNorm(4)(x), "x"),
    (lambda x: ComplexConv1d(4, 3, 2)(x), "x"),
    (lambda x: ModReLU(4)(x), "z"),
    (lambda x: Hirose()(x), "z"),
    (lambda x: SumGate()(x), "z"),
    (lambda x: gate_prod(x), "z"),
    (lambda x: modrelu(x, -1.0, scale_first=True), "z"),
    (lambda x: Readout("modulus")(x), "z"),
    (lambda x: readout(x, "re_im"), "z"),
    (lambda x: split_activation(x, "relu"), "z"),
    (lambda x: complex_dropout(x, 0.5), "z"),
    (lambda x: ComplexMultiheadSelfAttention(4, 2)(x), "x"),
    (lambda x: ComplexRNN(4, 3)(x), "x"),
    (lambda x: CGRNN(4, 3)(x), "x"),
])
def test_a_list_instead_of_a_tensor_is_a_type_error_naming_the_argument(call, name):
    """Lists raised AttributeError ('list' object has no attribute 'shape' / 'is_complex' / 'ndim')."""
    with pytest.raises(TypeError, match=rf"{name} must be a (complex tensor|torch.Tensor).*got list"):
        call([[1.0, 2.0, 3.0, 4.0]])


@pytest.mark.parametrize("layer", [ComplexRNN(4, 3), CGRNN(4, 3)])
def test_recurrent_layers_refuse_a_list_mask(layer):
    x = _z(2, 3, 4)
    with pytest.raises(TypeError, match="mask must be a torch.Tensor; got list"):
        layer(x, [[True, True, False], [True, False, False]])


@pytest.mark.parametrize("train", [True, False])
def test_complex_dropout_refuses_an_integer_tensor(train):
    """A long tensor raised torch's NotImplementedError ("check_uniform_bounds" not implemented for 'Long')."""
    drop = ComplexDropout(0.5).train(train)
    with pytest.raises(TypeError, match=r"z must be a real floating or complex tensor; got torch.int64"):
        drop(torch.ones(2, 3, dtype=torch.long))


def test_masked_scan_refuses_a_mask_that_is_not_bool():
    """A long mask reached torch.where ("where expected condition to be a boolean tensor")."""
    x, state = _z(2, 3, 4), torch.zeros(2, 4, dtype=C64)
    with pytest.raises(TypeError, match=r"mask must be a bool tensor \(True at real steps\); got torch.int64"):
        masked_scan(lambda x_t, s: s + x_t, x, state, torch.ones(2, 3, dtype=torch.long))
    out, last = masked_scan(lambda x_t, s: s + x_t, x, state, torch.ones(2, 3, dtype=torch.bool))
    torch.testing.assert_close(last, x.sum(1))


# ------------------------------------------------------------------------------- 5. the 'pe' range message
def test_pe_range_error_reports_the_real_tokens_range_of_explicit_positions():
    """Explicit positions 1000..1003 were reported as "range [0, 1002]" (masked slots filled with 0 first), with
    advice to truncate the texts, which does not apply to positions the caller chose."""
    emb = RealPositionalEmbedding(10, 4, position="pe", max_len=3)
    ids = torch.tensor([[2, 3, 4, 0], [5, 6, 0, 0]])
    with pytest.raises(ValueError, match=r"explicit positions must lie in \[0, 3\) for 'pe'; got range "
                                         r"\[1000, 1002\] over the real tokens") as info:
        emb(ids, ids != 0, positions=torch.arange(4) + 1000)
    assert "truncate" not in str(info.value)


def test_pe_range_error_of_default_positions_keeps_the_truncation_advice():
    emb = RealPositionalEmbedding(10, 4, position="pe", max_len=3)
    ids = torch.tensor([[2, 3, 4, 5, 0]])
    with pytest.raises(ValueError, match=r"^positions must lie in \[0, 3\) for 'pe'; got range \[0, 3\] over the "
                                         r"real tokens \(.*truncate the texts to 3 tokens"):
        emb(ids, ids != 0)


# ------------------------------------------------------------------------------- one reading of sizes and numbers
def test_sizes_refuse_a_bool_tensor_in_the_layers_and_in_hilbert_alike():
    """check_int and check_dimension read sizes through one as_integer: torch.tensor(True) passed both as 1."""
    from qpnlp.hilbert import random_pure_state
    from qpnlp.hilbert._validation import as_integer
    from qpnlp.nn._checks import check_int

    with pytest.raises(TypeError, match=r"num_features must be an integer; got Tensor tensor\(True\)"):
        ModReLU(torch.tensor(True))
    with pytest.raises(ValueError, match=r"dim must be an integer >= 1; got Tensor tensor\(True\)"):
        random_pure_state(torch.tensor(True))
    with pytest.raises(TypeError, match="n must be an integer; got Tensor"):   # was "Tensor.item() ... meta"
        check_int("n", torch.tensor(3, device="meta"))
    assert [as_integer(v) for v in (3, torch.tensor(3), True, 2.0, torch.tensor(True))] == [3, 3, None, None, None]


def test_frequency_scale_is_checked_by_check_real_and_an_int_beyond_the_floats_is_named():
    """check_frequency_scale repeated check_real; both raised OverflowError ('int too large to convert to float')."""
    with pytest.raises(ValueError, match="frequency_scale must be a positive finite number; got int too large"):
        make_embedding("complex_order", 10, 4, frequency_scale=10 ** 400)
    with pytest.raises(ValueError, match="eps must be a finite number >= 0; got int too large for a float"):
        PartLayerNorm(4, eps=10 ** 400)
    with pytest.raises(TypeError, match=r"frequency_scale must be a positive finite number; got Tensor"):
        make_embedding("complex_order", 10, 4, frequency_scale=torch.tensor(2.0))    # kept out of JSON configs


@pytest.mark.parametrize("base, error, message", [
    (True, TypeError, "got bool True"),                       # before: a ValueError
    ("1e4", TypeError, "got str '1e4'"),                      # before: a ValueError
    (torch.tensor(1e4), TypeError, "got Tensor"),
    (10 ** 400, ValueError, "got int too large for a float"),  # before: torch's OverflowError, naming no argument
], ids=["bool", "str", "tensor", "10**400"])
def test_the_base_of_the_frequencies_is_checked_by_check_real(base, error, message):
    from qpnlp.nn.position_functional import sinusoidal_frequencies
    with pytest.raises(error, match=f"base must be a positive finite number; {message}"):
        sinusoidal_frequencies(4, base=base)


# ------------------------------------------------------------------------------- one check of the dropout
_DROPOUTS = [
    (lambda p: ComplexDropout(p), "p"),
    (lambda p: complex_dropout(_z(2, 3), p), "p"),
    (lambda p: ComplexMultiheadSelfAttention(4, 2, dropout=p), "dropout"),
    (lambda p: ComplexOrderEmbedding(10, 4).dropped_mean(IDS, IDS != 0, dropout=p), "dropout"),
]


@pytest.mark.parametrize("make, name", _DROPOUTS)
@pytest.mark.parametrize("p", ["0.1", True, 0.1j, torch.tensor([0.1, 0.2]), torch.tensor(0.1 + 0j)],
                         ids=["str", "bool", "complex", "two-elements", "complex-tensor"])
def test_a_dropout_that_is_not_a_real_number_is_a_type_error_naming_it(make, name, p):
    """check_dropout, one check for the four places that copied '0 <= p < 1': a string met Python's comparison
    TypeError ("'<=' not supported between instances of 'int' and 'str'"), True passed as 1 (a ValueError), a
    tensor of two elements met torch's "Boolean value of Tensor with more than one value is ambiguous"."""
    with pytest.raises(TypeError, match=rf"^{name} must be a dropout probability in \[0, 1\); got "):
        make(p)


@pytest.mark.parametrize("make, name", _DROPOUTS)
def test_the_dropout_range_is_unchanged(make, name):
    """[0, 1) as before (0 and 0.999 taken, 1, -0.1 and NaN refused); the message keeps 'dropout probability'."""
    for p in (1.0, -0.1, NAN, INF):
        with pytest.raises(ValueError, match=rf"^{name} must be a dropout probability in \[0, 1\)"):
            make(p)
    for p in (0, 0.0, 0.999, torch.tensor(0.5)):
        make(p)
    assert ComplexDropout(torch.tensor(0.5)).p == 0.5        # read as its number, not kept as a tensor


# ------------------------------------------------------------------------------- masked_scan's mask and inputs
@pytest.mark.parametrize("mask_shape", [(3, 2), (2,), (2, 3, 1), (2, 4)])
def test_masked_scan_refuses_a_mask_of_another_shape_than_the_inputs(mask_shape):
    """A (3, 2) mask met torch.where's broadcast RuntimeError, a (2,) one unbind's IndexError at step 1; a
    (2, 3, 1) one broadcast silently to states of shape (2, 2, 4)."""
    x, state = _z(2, 3, 4), torch.zeros(2, 4, dtype=C64)
    with pytest.raises(ValueError, match=rf"mask must be a bool tensor of shape \(2, 3\); got torch.bool "
                                         rf"{re.escape(str(mask_shape))}"):
        masked_scan(lambda x_t, s: s + x_t, x, state, torch.ones(mask_shape, dtype=torch.bool))


@pytest.mark.parametrize("shape", [(), (3,)])
def test_masked_scan_refuses_inputs_without_a_time_axis(shape):
    """inputs.unbind(1) raised torch's IndexError ('Dimension out of range')."""
    with pytest.raises(ValueError, match=rf"inputs must have shape \(B, T, \.\.\.\); got shape "
                                         rf"{re.escape(str(shape))}"):
        masked_scan(lambda x_t, s: s + x_t, torch.ones(shape), torch.zeros(3))


# ------------------------------------------------------------------------------- ComplexWordEmbedding's padding_idx
@pytest.mark.parametrize("padding_idx, error, match", [
    (10, ValueError, r"padding_idx must be in \[-num_words, num_words\) = \[-10, 10\); got 10"),
    (-11, ValueError, r"padding_idx must be in \[-num_words, num_words\) = \[-10, 10\); got -11"),
    (1.5, TypeError, "padding_idx must be an integer; got float 1.5"),
    (True, TypeError, "padding_idx must be an integer; got bool True"),
    (None, TypeError, "padding_idx must be an integer; got NoneType None"),
    ("0", TypeError, "padding_idx must be an integer; got str '0'"),
])
def test_complex_word_embedding_checks_padding_idx(padding_idx, error, match):
    """10 and 1.5 met IndexError at 'amplitude[padding_idx] = 0'; True was row 1; None ran 'amplitude[None] = 0',
    which zeroed every row of both tables (every word the zero vector)."""
    with pytest.raises(error, match=match):
        ComplexWordEmbedding(10, 4, padding_idx=padding_idx)


def test_complex_word_embedding_counts_a_negative_padding_idx_from_the_end():
    """As torch.nn.Embedding: -1 is row 9 of 10, one index for the module, its tables and the fused lookup (the
    module kept -1 while its tables held 9, and gave -1 to the fused lookup's sparse gradient)."""
    emb = ComplexWordEmbedding(10, 4, padding_idx=-1)
    assert emb.padding_idx == emb.amplitude.padding_idx == emb.phase.padding_idx == 9
    states, norms = emb(torch.tensor([[9, 2]]))
    states.abs().sum().backward()
    assert norms[0, 0] == 0 and emb.amplitude.weight.grad.to_dense()[9].abs().sum() == 0


# ------------------------------------------------------------------------------- CGRNN's h0
def test_cgrnn_refuses_an_initial_state_that_is_not_a_tensor():
    """A list met an AttributeError ('list' object has no attribute 'shape')."""
    with pytest.raises(TypeError, match="h0 must be a torch.Tensor; got list"):
        CGRNN(4, 3)(_z(1, 2, 4), h0=[[0.0, 0.0, 0.0]])


@pytest.mark.parametrize("param", [torch.zeros(4), torch.zeros(3, 4, dtype=C64), torch.zeros(3, 3)])
def test_cayley_step_sgd_checks_the_matrices_of_an_added_group(param):
    # only the constructor checked its matrices: add_param_group kept a real vector or a non-square matrix, refused
    # only at a step (by cayley_step); every group now meets the constructor's check and message, and is not kept
    message = re.escape(f"CayleyStepSGD needs square complex matrices; got {tuple(param.shape)} {param.dtype}")
    with pytest.raises(ValueError, match=f"^{message}$"):
        CayleyStepSGD([param], lr=0.1)
    optimiser = CayleyStepSGD([torch.nn.Parameter(torch.eye(3, dtype=C64))], lr=0.1)
    groups = [dict(group) for group in optimiser.param_groups]
    with pytest.raises(ValueError, match=f"^{message}$"):
        optimiser.add_param_group(dict(params=[param]))
    assert optimiser.param_groups == groups
    optimiser.add_param_group(dict(params=[torch.nn.Parameter(torch.eye(2, dtype=C64))]))
    assert len(optimiser.param_groups) == 2
