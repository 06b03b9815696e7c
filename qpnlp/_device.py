"""The one check of a device name, for the configs (the name) and the trainers (that the machine has it).

``TrainConfig(device=...)`` of the classification, matching and Word2Fun
trainers and every command's ``--device`` go through :func:`resolve_device`,
so that a typo or a GPU that is not there fails at once with a sentence that
says what to use, not deep inside the first ``.to(device)``.
"""

from __future__ import annotations

import torch

SUPPORTED = "cpu, cuda, cuda:N or mps"


def resolve_device(value: str | torch.device, *, available: bool = True, cpu: str = "device 'cpu'") -> torch.device:
    """``torch.device(value)`` after checking it (``ValueError`` with the reason otherwise).

    ``available=False`` checks only the name (a config may be written on one
    machine and trained on another); ``available=True`` also checks that this
    machine has the device: CUDA present (and the index in range), MPS present.
    ``cpu`` is how the caller's user asks for the CPU instead (the CLI: ``--device cpu``).

    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("gpu")
    Traceback (most recent call last):
    ...
    ValueError: unknown device 'gpu'; expected cpu, cuda, cuda:N or mps
    """
    try:
        device = torch.device(value)
    except (RuntimeError, ValueError, TypeError):
        raise ValueError(f"unknown device {value!r}; expected {SUPPORTED}") from None
    if device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"device {value!r} is not supported; expected {SUPPORTED}")
    if available and device.type == "cuda":
        if not torch.cuda.is_available():
            build = " (this torch is a CPU-only build)" if torch.version.cuda is None else ""
            raise ValueError(f"{str(value)!r} requested but CUDA is not available on this machine{build}; "
                             f"use {cpu}")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"{str(value)!r}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                             f"cuda:0 .. cuda:{torch.cuda.device_count() - 1}")
    if available and device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{str(value)!r} requested but MPS is not available on this machine")
    return device


def with_current_index(device: torch.device) -> torch.device:
    """``device`` with its index named: a bare ``cuda`` becomes ``cuda:N``, ``N`` the calling thread's current CUDA
    device; other devices are returned as they are.

    The current CUDA device is the calling thread's own (``cudaSetDevice``): ``torch.cuda.set_device`` in the main
    thread (``qpnlp.word2fun.distributed.setup``: process ``LOCAL_RANK``'s GPU) leaves a thread it starts on
    ``cuda:0``, where a bare ``cuda`` would put that thread's tensors. A training whose threads make tensors
    (Word2Fun's drawing thread, its hogwild workers) names the index in the thread that set it.

    >>> with_current_index(torch.device("cpu"))
    device(type='cpu')
    """
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device
