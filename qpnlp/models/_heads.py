r"""The measurement head shared by QPDN and CNM: projective (the papers) or a general measurement (POVM).

``measurement="projective"`` (default) is :class:`~qpnlp.measurement.ProjectiveMeasurement`:
k trainable unit vectors, :math:`p_k = \sum_i p_i |\langle v_k|w_i\rangle|^2`.
``measurement="povm"`` is :class:`~qpnlp.measurement.POVMMeasurement`: k
effects :math:`E_k = V_k^\dagger V_k` from a trainable isometry
:math:`V \in \mathbb{C}^{kr \times d}` (r = ``povm_rank``, 0 for the smallest
r with k r >= d), so the probabilities of every sentence sum to one and k
may exceed d. Initialisations map as ``"orthogonal"`` and ``"random"`` ->
a Haar-random isometry (``"orthogonal"``), ``"identity"`` -> the first d
columns of the identity of :math:`\mathbb{C}^{kr}`.
"""

from __future__ import annotations

import math

import torch

from qpnlp.measurement import POVMMeasurement, ProjectiveMeasurement

__all__ = ["MEASUREMENTS", "MEASUREMENT_INITS", "measurement_checks", "make_measurement", "povm_rank"]

MEASUREMENTS = ("projective", "povm")
MEASUREMENT_INITS = ("orthogonal", "identity", "random")
_POVM_INITS = {"orthogonal": "orthogonal", "random": "orthogonal", "identity": "identity"}


def povm_rank(dim: int, num_outcomes: int, rank: int) -> int:
    """The rank r of the effects: ``rank``, or the smallest r with k r >= d when ``rank == 0``."""
    return rank if rank else math.ceil(dim / num_outcomes)


def measurement_checks(config, dim: int, num_outcomes: int) -> list[tuple[bool, str]]:
    """``(ok, message)`` pairs for the ``measurement`` and ``povm_rank`` fields of a config."""
    checks = [(config.measurement in MEASUREMENTS,
               f"measurement must be one of {MEASUREMENTS}; got {config.measurement!r}"),
              (config.povm_rank >= 0, f"povm_rank must be >= 0 (0: the smallest with k r >= d); "
                                      f"got {config.povm_rank}")]
    if num_outcomes < 1:            # the rank ceil(d / k) needs k >= 1; the config's own check names k
        checks.append((False, f"num_measurements must be >= 1; got {num_outcomes}"))
    elif config.measurement == "povm":
        rank = povm_rank(dim, num_outcomes, max(config.povm_rank, 0))
        checks += [
            (config.head == "measurement", f"measurement='povm' needs head='measurement'; got {config.head!r}"),
            (num_outcomes * rank >= dim, f"measurement='povm' needs num_measurements * povm_rank >= dim for the "
                                         f"effects to sum to the identity; got {num_outcomes} * {rank} < {dim}"),
        ]
    elif config.povm_rank:
        checks.append((False, f"povm_rank applies to measurement='povm' only; got {config.povm_rank}"))
    return checks


def make_measurement(config, dim: int, num_outcomes: int, *, init: str, trainable: bool = True,
                     complete: bool = False, orthonormal: bool | None = None, dtype: torch.dtype,
                     generator: torch.Generator | None = None):
    """The head of ``config.measurement``: a :class:`ProjectiveMeasurement` or a :class:`POVMMeasurement`."""
    if config.measurement == "povm":
        return POVMMeasurement(dim, num_outcomes, rank=povm_rank(dim, num_outcomes, config.povm_rank),
                               init=_POVM_INITS[init], trainable=trainable, dtype=dtype, generator=generator)
    return ProjectiveMeasurement(dim, num_outcomes, complete=complete, orthonormal=orthonormal, init=init,
                                 trainable=trainable, dtype=dtype, generator=generator)
