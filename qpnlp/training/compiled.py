"""``TrainConfig.compile``: the training steps' forward through ``torch.compile``, where it pays.

The trainers call the model through :func:`training_forward`: the model itself
(eager, the default) or ``torch.compile(model, mode=...)`` (inductor). Only the
training steps use it; dev and test scoring stay eager. The compiled forward
runs with :mod:`qpnlp.hilbert` validation off (:func:`compiled_steps`): its
checks read tensor values, which would cut the graph at every batch. Dropout
draws from torch's generator as eagerly, so a compiled run gives an eager
run's losses and parameters to rounding (tested). Batches
of new padded lengths make dynamo compile again until it marks the length
dynamic (usually at the second length), so the first epoch pays the compile
time (seconds to a minute) and the later ones do not.

Where it pays (``benchmarks/results/SPEED.md``, "Batches of several lengths,
and a training epoch"): the CNM training step, whose windows and mixtures
inductor fuses. ``qpnlp train cnm --dataset trecqa`` trains an epoch 1.57x
faster on one CPU thread, once compiled; the first compile in a fresh
environment costs about 90 s, a warm cache about 7 s, so short runs gain
little. Not QPDN (0.79x per epoch): its step is one complex contraction
that inductor leaves to eager kernels (no complex code generation) and then
pays the graph's overhead. Not the complex-order classifiers on the CPU
(1.4-1.6x slower per step), though their forward now compiles as whole
graphs around the embedding lookups. Compiling needs a C++ compiler (CPU) or
Triton (CUDA), and inductor warns about the complex operators it leaves to
eager kernels.

``"reduce-overhead"`` and ``"max-autotune"`` (CUDA graphs) record a graph per padded length. At
fixed lengths a complex-order Transformer step takes 0.65x eager's time on
an H200, but an SST-2 epoch, whose batches come in about 40 lengths, took
89 s against eager's 21 s (``benchmarks/results/complex_order/run-y-300d``).
So under those modes on a GPU the training batches are padded up to a multiple
of :data:`CUDA_GRAPHS_PAD_MULTIPLE` tokens unless ``TrainConfig.pad_to_multiple_of``
says otherwise (:func:`training_pad_multiple`; PyTorch's own advice in its
warning about many graphs). The models ignore padding (tested), so a model
without dropout trains as with exact padding, to rounding; dropout draws its
masks over the padded shape (the same distribution, other draws). It did
not rescue that epoch: padded to multiples of 8 (6 lengths), the compiled
SST-2 epoch took 71 s while compiling and 84 s after, against eager's 26 s
on the same H200 (``run-y-300d/graphs3``). On a GPU, train these classifiers
eagerly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch
from torch import nn

from qpnlp.hilbert import validation

__all__ = ["COMPILE_MODES", "CUDA_GRAPHS_PAD_MULTIPLE", "check_compile_mode", "training_forward", "compiled_steps",
           "training_pad_multiple", "uses_cuda_graphs"]

#: torch.compile's inductor modes (``None``: eager).
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

#: Training batches are padded to a multiple of this many tokens under CUDA graphs (``"reduce-overhead"``,
#: ``"max-autotune"``):
#: SST-2's training batches of 32 come in 39-41 padded lengths per epoch, 6 rounded up to multiples of 8, for 11%
#: more padded positions (31.9 -> 35.5 tokens per batch; 16: 4 lengths, 23% more; benchmarks/padded_lengths.py).
CUDA_GRAPHS_PAD_MULTIPLE = 8


def check_compile_mode(mode: str | None) -> None:
    """``ValueError`` unless ``mode`` is None or one of :data:`COMPILE_MODES`.

    Parameters
    ----------
    mode : str or None
        A torch.compile mode of :data:`COMPILE_MODES`, or None (eager).
    """
    if mode is not None and mode not in COMPILE_MODES:
        raise ValueError(f"compile must be None (eager) or one of {COMPILE_MODES}; got {mode!r}")


def training_forward(model: nn.Module, mode: str | None) -> Callable[..., torch.Tensor]:
    """What the training steps call: ``model`` itself, or ``torch.compile(model, mode=mode)``.

    The compiled module shares the model's parameters: the optimisers, the
    early stopping's best state and the saved model are the model's own.

    Parameters
    ----------
    model : torch.nn.Module
        The model trained.
    mode : str or None
        A torch.compile mode of :data:`COMPILE_MODES` (ValueError otherwise); None: eager, ``model`` itself.
    """
    check_compile_mode(mode)
    return model if mode is None else torch.compile(model, mode=mode)


def training_pad_multiple(pad_to_multiple_of: int | None, mode: str | None,
                          device: torch.device | str = "cpu") -> int | None:
    """The multiple the training batches' padded length is rounded up to (``None``: the longest text).

    ``pad_to_multiple_of`` when given (1: no rounding), else
    :data:`CUDA_GRAPHS_PAD_MULTIPLE` under a mode that records CUDA graphs
    (``"reduce-overhead"`` and ``"max-autotune"``, as torch's own mode table
    says: :func:`uses_cuda_graphs`) on a CUDA device, where a graph is
    recorded once per input size (on the CPU no mode records graphs, and
    rounding would only add padding).

    Parameters
    ----------
    pad_to_multiple_of : int or None
        The config's ``pad_to_multiple_of``, returned when given; None: decided by ``mode`` and ``device``.
    mode : str or None
        The config's torch.compile mode (None: eager, no rounding).
    device : torch.device or str, default "cpu"
        The training device; only on CUDA do modes record graphs.
    """
    if pad_to_multiple_of is not None:
        return pad_to_multiple_of
    graphs = uses_cuda_graphs(mode) and torch.device(device).type == "cuda"
    return CUDA_GRAPHS_PAD_MULTIPLE if graphs else None


def uses_cuda_graphs(mode: str | None) -> bool:
    """Whether torch.compile's ``mode`` records CUDA graphs on a GPU (inductor's ``triton.cudagraphs`` option).

    Parameters
    ----------
    mode : str or None
        A torch.compile mode of :data:`COMPILE_MODES` (ValueError otherwise); None (eager) records none.
    """
    if mode is None:
        return False
    check_compile_mode(mode)
    import torch._inductor

    return bool(torch._inductor.list_mode_options(mode).get("triton.cudagraphs", False))


@contextlib.contextmanager
def compiled_steps(mode: str | None) -> Iterator[None]:
    """The settings of an epoch of compiled training steps (eager: none).

    Validation off (its checks would break the graph), and inductor's
    ``fallback_random``: dropout draws from torch's generator as in eager
    mode, so a seeded run draws the same masks compiled or not.

    Parameters
    ----------
    mode : str or None
        The torch.compile mode of the epoch; None (eager) changes no setting.
    """
    if mode is None:
        yield
        return
    import torch._inductor.config

    with validation(False), torch._inductor.config.patch(fallback_random=True):
        yield
