r"""Random states for tests and experiments: Haar pure states, random density matrices and isometries.

Every sampler takes ``batch_shape`` (a tuple of sizes, or one int as torch
reads a size: 4 is ``(4,)``), ``dtype`` (complex64/complex128; float32/64
map to them), ``device`` and ``generator=`` (a ``torch.Generator``), so a draw
is reproducible. Random unitaries are :func:`~qpnlp.hilbert.random_unitary`;
random POVMs are :func:`qpnlp.measurement.random_povm` (built on
:func:`random_isometry`).

Measures (Zyczkowski, Penson, Nechita & Collins, J. Math. Phys. 52, 062201 (2011)):

* Haar pure states: :math:`|\psi\rangle = g/\|g\|` with :math:`g` complex Gaussian;
* Hilbert-Schmidt of rank r (the induced measure): :math:`\rho = G G^\dagger / \operatorname{Tr} G G^\dagger`,
  :math:`G` a :math:`d \times r` Ginibre matrix; r = d is the flat measure of
  the Hilbert-Schmidt metric (mean purity :math:`2d/(d^2+1)`);
* Bures of rank r: :math:`\rho \propto (I + U) G G^\dagger (I + U)^\dagger` with U
  Haar (Osipov, Sommers & Zyczkowski, J. Phys. A 43, 055302 (2010)); r = d is
  the measure of the Bures metric;
* Haar isometries :math:`V` (:math:`m \times n`, :math:`V^\dagger V = I_n`): the
  phase-corrected QR of a Ginibre matrix (Mezzadri 2007).
"""

from __future__ import annotations

import torch

from ._linalg import ginibre, haar_orthonormalize, hermitian_part, normalize, random_unitary
from ._states import DensityMatrix, PureState
from ._validation import check_batch_shape, check_dimension, complex_dtype_of

__all__ = ["random_pure_state", "random_density_matrix", "random_isometry", "MEASURES"]

MEASURES = ("hilbert-schmidt", "bures")


def random_pure_state(dim: int, *, batch_shape=(), dtype=torch.complex64, device=None,
                      generator: torch.Generator | None = None) -> PureState:
    r"""Haar-random pure states :math:`g/\|g\|`, batch shape ``batch_shape``, dimension d.

    Parameters
    ----------
    dim : int
        Dimension d of the states.
    batch_shape : tuple of int, optional
        Leading batch dims of the result (default: none).
    dtype : torch.dtype, optional
        complex64 (default) or complex128.
    device : torch.device or str, optional
        Where the result lives (default: the default device).
    generator : torch.Generator, optional
        Source of randomness, for reproducible draws.

    Examples
    --------
    >>> psi = random_pure_state(5, batch_shape=(3,), generator=torch.Generator().manual_seed(0))
    >>> psi.batch_shape, psi.dim
    (torch.Size([3]), 5)
    """
    dim, batch_shape = check_dimension("dim", dim), check_batch_shape(batch_shape)
    g = ginibre((*batch_shape, dim), dtype=complex_dtype_of(dtype), device=device, generator=generator)
    return PureState._trusted(data=normalize(g))


def random_density_matrix(dim: int, *, rank: int | None = None, measure: str = "hilbert-schmidt", batch_shape=(),
                          dtype=torch.complex64, device=None,
                          generator: torch.Generator | None = None) -> DensityMatrix:
    r"""Random density matrices of a given rank from the Hilbert-Schmidt or Bures measure.

    Parameters
    ----------
    dim : int
        Dimension d.
    rank : int, optional
        Rank r in ``[1, d]`` (default d, full rank with probability one).
    measure : {"hilbert-schmidt", "bures"}
        See the module docstring.
    batch_shape, dtype, device, generator
        As for every sampler.

    Returns
    -------
    DensityMatrix
        ``(*batch_shape, d, d)``, Hermitian, PSD, trace one, rank r.

    Examples
    --------
    >>> rho = random_density_matrix(4, rank=2, measure="bures", generator=torch.Generator().manual_seed(0))
    >>> int((rho.eigvals() > 1e-5).sum()), round(float(rho.tr().real), 5)
    (2, 1.0)
    """
    dim, batch_shape = check_dimension("dim", dim), check_batch_shape(batch_shape)
    rank = dim if rank is None else check_dimension("rank", rank)
    if not 1 <= rank <= dim:
        raise ValueError(f"rank must be in [1, dim={dim}]; got {rank}")
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}; got {measure!r}")
    cdtype = complex_dtype_of(dtype)
    g = ginibre((*batch_shape, dim, rank), dtype=cdtype, device=device, generator=generator)
    if measure == "bures":
        u = random_unitary(dim, batch_shape=batch_shape, dtype=cdtype, device=device, generator=generator)
        g = (torch.eye(dim, dtype=cdtype, device=device) + u) @ g
    rho = g @ g.mH
    rho = rho / torch.diagonal(rho, dim1=-2, dim2=-1).sum(-1).real[..., None, None]
    return DensityMatrix._trusted(data=hermitian_part(rho))              # exactly Hermitian after rounding


def random_isometry(rows: int, cols: int, *, batch_shape=(), dtype=torch.complex64, device=None,
                    generator: torch.Generator | None = None) -> torch.Tensor:
    r"""Haar-random isometries :math:`V` ``(*batch_shape, rows, cols)`` with :math:`V^\dagger V = I`, rows >= cols.

    ``rows == cols`` is a Haar unitary. The rows of an isometry
    :math:`V \in \mathbb{C}^{k\times d}` are the Kraus vectors of a rank-1
    POVM with k outcomes (:math:`\sum_k V_k^\dagger V_k = V^\dagger V = I`).

    Parameters
    ----------
    rows, cols : int
        The shape of each isometry, rows >= cols.
    batch_shape : tuple of int, optional
        Leading batch dims of the result (default: none).
    dtype : torch.dtype, optional
        complex64 (default) or complex128.
    device : torch.device or str, optional
        Where the result lives (default: the default device).
    generator : torch.Generator, optional
        Source of randomness, for reproducible draws.

    Examples
    --------
    >>> v = random_isometry(5, 2, dtype=torch.complex128, generator=torch.Generator().manual_seed(0))
    >>> torch.allclose(v.mH @ v, torch.eye(2, dtype=torch.complex128))
    True
    """
    rows, cols = check_dimension("rows", rows), check_dimension("cols", cols)
    batch_shape = check_batch_shape(batch_shape)
    if not rows >= cols >= 1:
        raise ValueError(f"an isometry needs rows >= cols >= 1; got rows={rows}, cols={cols}")
    z = ginibre((*batch_shape, rows, cols), dtype=complex_dtype_of(dtype), device=device, generator=generator)
    return haar_orthonormalize(z)
