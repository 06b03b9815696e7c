"""Bad input to the building blocks of qpnlp.nn: a clear error naming the argument, never a torch error from inside.

Static checks (types, sizes, shapes, devices) run always; no value is checked inside the layers (NaN propagates,
as in torch's layers: a check would cost a host synchronisation in every forward pass of a model).
"""

from __future__ import annotations

import math

import pytest
import torch

from qpnlp.nn import (CGRNN, CGRNNCell, ComplexConv1d, ComplexFeedForward, ComplexLinear, ComplexLSTMCell,
                      ComplexMultiheadSelfAttention, ComplexOrderEmbedding, ComplexWordEmbedding, ModReLU,
                      PartLayerNorm, RealPositionalEmbedding, StateTransition, URNNCell, WordWeighting,
                      as_complex_input, cayley_step, complex_order_embedding, default_positions, effective_word_weights,
                      gate_sum, hermitian_attention_scores, hirose, local_mixture, local_mixture_density, masked_max,
                      masked_mean, masked_scan, modrelu, part_mul, pool_positions, sinusoidal_frequencies,
                      sinusoidal_position_encoding, window_weights)

C64 = torch.complex64


# ------------------------------------------------------------------------------------------ sizes of the layers
@pytest.mark.parametrize("build, name", [
    (lambda: ComplexLinear(3.0, 2), "in_features"),
    (lambda: ComplexLinear(3, 2.5), "out_features"),
    (lambda: ComplexLinear(True, 2), "in_features"),                 # a bool is not a size
    (lambda: ComplexConv1d(3, 2, 2.0), "kernel_size"),
    (lambda: ComplexFeedForward(4, 8.0), "hidden"),
    (lambda: ComplexMultiheadSelfAttention(4.0, 2), "dim"),
    (lambda: ComplexMultiheadSelfAttention(4, 2.0), "heads"),        # was built, and failed in forward (view)
    (lambda: PartLayerNorm(4.0), "dim"),
    (lambda: ComplexWordEmbedding(5, 2.0), "dim"),
    (lambda: WordWeighting(5.0, "trainable"), "num_words"),
    (lambda: ComplexOrderEmbedding(5.0, 2), "num_words"),
    (lambda: RealPositionalEmbedding(5, 2, position="pe", max_len=4.0), "max_len"),
    (lambda: StateTransition(2.0), "n"),
    (lambda: ModReLU(4.0), "num_features"),
    (lambda: ComplexLSTMCell(3, 4.0), "hidden_size"),
    (lambda: URNNCell(3.0, 4), "input_size"),
    (lambda: CGRNNCell(2.0, 3), "input_size"),
])
def test_a_size_that_is_not_an_integer_is_refused_with_its_name(build, name):
    with pytest.raises(TypeError, match=rf"^{name} must be an integer; got (float|bool) "):
        build()


def test_integer_sizes_of_other_types_are_accepted():
    lin = ComplexLinear(torch.tensor(3), 2)                          # a 0-dim integer tensor is an index
    assert lin.in_features == 3 and type(lin.in_features) is int
    with pytest.raises(ValueError, match="dim must be >= 1; got -1"):
        PartLayerNorm(-1)                                            # was a RuntimeError from torch


# ------------------------------------------------------------------------------------------ functional core
def test_part_mul_refuses_shapes_that_do_not_broadcast():
    for a, b in [(torch.ones(2, dtype=C64), torch.ones(3, dtype=C64)), (torch.ones(2), torch.ones(3)),
                 (torch.ones(2, dtype=C64), torch.ones(3))]:
        with pytest.raises(ValueError, match=r"a has shape \(2,\) and b has shape \(3,\)"):
            part_mul(a, b)
    assert part_mul(torch.ones(2, 1, dtype=C64), torch.full((3,), 2 + 3j, dtype=C64)).shape == (2, 3)


@pytest.mark.parametrize("q, k, error, match", [
    (torch.ones(2, 3, dtype=C64), torch.ones(2, 4, dtype=C64), ValueError, r"one n; got \(2, 3\) and \(2, 4\)"),
    (torch.ones(3, dtype=C64), torch.ones(3, dtype=C64), ValueError, r"\(\.\.\., Lq, n\)"),
    (torch.ones(2, 3), torch.ones(2, 3, dtype=C64), TypeError, "one dtype"),
    (torch.ones(2, 2, 3, dtype=C64), torch.ones(3, 2, 3, dtype=C64), ValueError, "batch shapes do not broadcast"),
])
def test_hermitian_attention_scores_refuse_q_and_k_that_do_not_match(q, k, error, match):
    with pytest.raises(error, match=match):
        hermitian_attention_scores(q, k)


def test_cayley_step_refuses_a_gradient_of_another_shape_or_dtype():
    w = torch.eye(3, dtype=C64)
    with pytest.raises(ValueError, match=r"got \(3, 3\) and \(2, 2\)"):
        cayley_step(w, torch.ones(2, 2, dtype=C64), 0.1)
    with pytest.raises(ValueError, match="square matrix"):
        cayley_step(torch.ones(2, 3, dtype=C64), torch.ones(2, 3, dtype=C64), 0.1)
    with pytest.raises(TypeError, match="dtype of w"):
        cayley_step(w, torch.ones(3, 3, dtype=torch.complex128), 0.1)


# ------------------------------------------------------------------------------------------ masked pooling
@pytest.mark.parametrize("pool", [masked_mean, masked_max, lambda x, m: pool_positions(x, m, "mean")])
def test_masked_pooling_takes_a_bool_mask_only(pool):
    """A count mask was averaged with weights in masked_mean (2 counted a step twice) and refused by masked_max."""
    x = torch.randn(1, 3, 2)
    for bad in (torch.tensor([[2, 1, 0]]), torch.tensor([[1.0, 1.0, 0.0]])):
        with pytest.raises(TypeError, match="must be a bool tensor"):
            pool(x, bad)
    with pytest.raises(TypeError, match="x must be a real floating or complex tensor"):
        pool(torch.ones(1, 3, 2, dtype=torch.long), torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="one device"):
        pool(x, torch.ones(1, 3, dtype=torch.bool, device="meta"))


def test_masked_max_propagates_nan_at_a_valid_step_and_ignores_it_at_padding():
    """The decision documented in masked_max: no value check on the models' path, NaN is never hidden."""
    x = torch.tensor([[[math.nan + 1j], [2 + 0j], [math.nan * 1j]]], dtype=C64)
    out = masked_max(x, torch.tensor([[True, True, False]]))
    assert math.isnan(out.real.item()) and out.imag.item() == 1


def test_attention_propagates_nan_at_a_real_position_to_its_own_sentence_only():
    torch.manual_seed(0)
    att = ComplexMultiheadSelfAttention(4, 2)
    x = torch.randn(2, 3, 4, dtype=C64)
    x[0, 1] = math.nan
    out = att(x, torch.ones(2, 3, dtype=torch.bool))
    assert torch.isnan(torch.view_as_real(out[0])).all() and torch.isfinite(torch.view_as_real(out[1])).all()


# ------------------------------------------------------------------------------------------ position encodings
R, W, P = torch.ones(2, 3), torch.ones(2, 3), torch.zeros(2)


@pytest.mark.parametrize("args, kwargs, shapes", [
    ((R, torch.ones(2, 4), P), {}, r"amplitude \(2, 3\), frequency \(2, 4\), positions \(2,\)"),
    ((R, W, torch.zeros(3)), {}, r"frequency \(2, 3\), positions \(3,\)"),
    ((R, W, P), {"mask": torch.ones(3, dtype=torch.bool)}, r"positions \(2,\), mask \(3,\)"),
    ((R, None, None, torch.ones(2, 4)), {}, r"amplitude \(2, 3\), phase \(2, 4\)"),
])
def test_complex_order_embedding_names_arguments_that_do_not_broadcast(args, kwargs, shapes):
    with pytest.raises(ValueError, match=rf"must broadcast to one shape \(\.\.\., D\).*got shapes .*{shapes}"):
        complex_order_embedding(*args, **kwargs)


@pytest.mark.parametrize("args, kwargs, match", [
    ((R, W, P), {"mask": torch.tensor([2, 1])}, "mask must be a bool tensor"),   # 2 doubled the amplitude
    ((R.to(C64), W, P), {}, "amplitude must have a real floating dtype"),
    ((R.long(), W, P), {}, "amplitude must have a real floating dtype"),
    ((R, W, [0.0, 1.0]), {}, "positions must be a torch.Tensor"),
    ((R, W, P.to(C64)), {}, "positions must be real numbers"),
])
def test_complex_order_embedding_refuses_arguments_of_the_wrong_type(args, kwargs, match):
    with pytest.raises(TypeError, match=match):
        complex_order_embedding(*args, **kwargs)


def test_sinusoidal_encoding_refuses_non_integer_sizes_and_complex_positions():
    with pytest.raises(TypeError, match="n must be an integer; got float 2.5"):
        sinusoidal_frequencies(2.5)                              # was 3 frequencies, silently (arange(2.5))
    with pytest.raises(TypeError, match="dim must be an integer"):
        sinusoidal_position_encoding(torch.zeros(2), 4.0)
    with pytest.raises(TypeError, match="positions must be real numbers"):
        sinusoidal_position_encoding(torch.zeros(2, dtype=C64), 4)   # the imaginary part was dropped
    with pytest.raises(TypeError, match="positions must be a torch.Tensor"):
        sinusoidal_position_encoding([0.0, 1.0], 4)
    with pytest.raises(ValueError, match="d_model >= 1"):
        sinusoidal_frequencies(2, 0)


def test_default_positions_take_a_bool_mask_only():
    ids = torch.ones(1, 3, dtype=torch.long)
    with pytest.raises(TypeError, match="mask must be a bool tensor"):
        default_positions(ids, torch.tensor([[2, 1, 1]]))        # a count gave positions 1, 2, 3, not 0, 1, 2


# ------------------------------------------------------------------------------------- devices and dtypes
def _meta(t):
    return t.to("meta")


_Z = torch.ones(2, 3, 4, dtype=C64)
_MASK = torch.ones(2, 3, dtype=torch.bool)
_H = torch.zeros(2, 5, dtype=C64)


@pytest.mark.parametrize("call, names", [
    (lambda: part_mul(_Z, _meta(_Z)), "a on cpu, b on meta"),
    (lambda: hirose(_Z, _meta(torch.full((4,), 2.0))), "z on cpu, Hirose scale m on meta"),
    (lambda: modrelu(_Z, _meta(torch.zeros(4))), "z on cpu, modReLU bias b on meta"),
    (lambda: gate_sum(_Z, _meta(torch.full((4,), 0.5))), "z on cpu, alpha on meta"),
    (lambda: ComplexLSTMCell(4, 5)(_Z[:, 0], (_meta(_H), _meta(_H))), "x on cpu, h on meta"),
    (lambda: URNNCell(4, 5)(_Z[:, 0], _meta(_H)), "x on cpu, h on meta"),
    (lambda: CGRNNCell(4, 5)(_Z[:, 0], _meta(_H)), "x on cpu, h on meta"),
    (lambda: CGRNN(4, 5)(_Z, _MASK, _meta(_H)), "x on cpu, h0 on meta"),
    (lambda: masked_scan(lambda x, s: s + x, _Z, _Z[:, 0], _meta(_MASK)), "inputs on cpu, mask on meta"),
    (lambda: window_weights(torch.zeros(2, 3), _meta(_MASK), 2), "scores on cpu, mask on meta"),
    (lambda: effective_word_weights(torch.zeros(2, 3), _meta(_MASK), 2), "scores on cpu, mask on meta"),
    (lambda: local_mixture(_meta(torch.ones(2, 3, 4)), torch.zeros(2, 3), _MASK), "word_probs on meta, scores on cpu"),
    (lambda: local_mixture_density(_meta(_Z), torch.zeros(2, 3), _MASK), "states on meta, scores on cpu"),
    (lambda: ComplexOrderEmbedding(10, 4)(torch.ones(2, 3, dtype=torch.long), _MASK,
                                         _meta(torch.arange(3.0))), "ids on cpu, positions on meta"),
])
def test_arguments_on_two_devices_are_named(call, names):
    # was torch's "Tensor on device ... is not on the expected device ...!" from inside, or (modReLU's bias,
    # Hirose's scale, the positions) a silent copy to the device of z or of the ids
    with pytest.raises(ValueError, match=f"arguments must be on one device; got {names}"):
        call()


def test_integer_scores_and_states_of_the_local_mixtures_are_refused():
    # integer scores failed inside masked_fill ("value cannot be converted to type int64_t without overflow");
    # integer states got their window weights cast to int: 0, a silently zero density matrix
    with pytest.raises(TypeError, match="scores must be a real floating tensor; got torch.int64"):
        window_weights(torch.zeros(2, 3, dtype=torch.long), _MASK, 2)
    with pytest.raises(TypeError, match="states must be a complex .* tensor; got torch.int64"):
        local_mixture_density(torch.ones(2, 3, 4, dtype=torch.long), torch.zeros(2, 3), _MASK)


def test_sinusoidal_frequencies_refuse_a_dtype_that_is_not_real_floating():
    # was torch's '"arange_cpu" not implemented for 'ComplexFloat''
    with pytest.raises(TypeError, match="dtype must be a real floating dtype; got torch.complex64"):
        sinusoidal_frequencies(3, dtype=C64)


def test_the_input_rule_of_a_real_layer_names_its_dtype_once():
    with pytest.raises(TypeError, match=r"expects torch.float32$"):          # was "torch.float32 (or torch.float32)"
        as_complex_input(torch.ones(2, dtype=torch.float64), torch.float32, upcast=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64])
def test_layers_take_the_autocast_dtype_inside_autocast_only(dtype):
    """Under torch.autocast the layer before hands on bfloat16: a float32 layer refused it ("x has dtype
    torch.bfloat16; the layer expects torch.float32"), so an OrderClassifier rnn/transformer failed there."""
    lin = ComplexLinear(4, 3, dtype=dtype, generator=torch.Generator().manual_seed(0))
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(1))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = lin(x.bfloat16())
        with pytest.raises(TypeError, match="float16; the layer expects"):      # not the autocast dtype
            lin(x.half())
    torch.testing.assert_close(y.to(lin(x).dtype), lin(x), atol=0.05, rtol=0.05)
    with pytest.raises(TypeError, match="bfloat16; the layer expects"):         # outside autocast: refused
        lin(x.bfloat16())
