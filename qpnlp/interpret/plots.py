r"""Matplotlib figures of the interpretation results.

Every function draws into ``ax`` when given (an ``Axes``, or a sequence of
them for multi-panel figures) and otherwise creates a new
:class:`matplotlib.figure.Figure` directly (not through ``pyplot``: no global
figure state, no GUI backend, works under Agg and in scripts). It returns the
Figure and never calls ``show``: in a notebook the returned figure displays
itself (after ``%matplotlib inline``); elsewhere call ``fig.savefig(path)``.

* :func:`plot_density_matrix`, :func:`plot_density_matrix_parts`: the
  modulus :math:`|\rho_{ij}|` and phase :math:`\arg \rho_{ij}` of a density matrix;
* :func:`plot_measurement_probabilities`: Born probabilities of a sentence, one bar per measurement;
* :func:`plot_word_states`: word states on the complex plane, one panel per dimension;
* :func:`plot_similarity_over_time`: Word2Fun similarity trajectories;
* :func:`plot_period_histogram`: periods of complex-order frequencies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from . import _checks

__all__ = ["plot_density_matrix", "plot_density_matrix_parts", "plot_measurement_probabilities",
           "plot_word_states", "plot_similarity_over_time", "plot_period_histogram"]

PARTS = ("modulus", "phase")


def _root(ax: Axes) -> Figure:
    get = getattr(ax, "get_figure", None)
    try:
        return get(root=True)
    except TypeError:  # matplotlib < 3.10
        return ax.figure


def _single_axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is None:
        fig = Figure(figsize=figsize, layout="constrained")
        return fig, fig.add_subplot()
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes; got {type(ax).__name__}")
    return _root(ax), ax


def _many_axes(ax, n: int, figsize: tuple[float, float]) -> tuple[Figure, list[Axes]]:
    if ax is None:
        fig = Figure(figsize=figsize, layout="constrained")
        return fig, list(fig.subplots(1, n, squeeze=False)[0])
    axes = [ax] if isinstance(ax, Axes) else list(ax)
    if len(axes) != n or not all(isinstance(a, Axes) for a in axes):
        raise ValueError(f"need {n} Axes; got {len(axes)}")
    return _root(axes[0]), axes


def _numpy(name: str, x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.is_complex() and x.dtype == torch.complex32:
            x = x.to(torch.complex64)
        x = x.numpy()
    x = np.asarray(x)
    if x.dtype == object or not np.issubdtype(x.dtype, np.number):
        raise TypeError(f"{name} must be numeric; got {x.dtype}")
    if x.size and not np.isfinite(x).all():
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0])
        raise ValueError(f"{name} contains NaN or inf (shape {x.shape}, first at index {where})")
    return x


def _density(rho) -> np.ndarray:
    """A (d, d) array from a tensor, DensityMatrix or Ensemble (no batch dims)."""
    if hasattr(rho, "dense") and not isinstance(rho, torch.Tensor):          # Ensemble
        rho = rho.dense()
    if hasattr(rho, "data") and not isinstance(rho, (torch.Tensor, np.ndarray)):  # DensityMatrix
        rho = rho.data
    matrix = _numpy("rho", rho)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise ValueError(f"rho must be one square (d, d) matrix; got shape {matrix.shape}")
    return matrix


def _tick_labels(ax: Axes, labels, d: int) -> None:
    if labels is None:
        return
    labels = _checks.words("labels", labels, d, "rows of rho")
    ax.set_xticks(range(d), labels, rotation=90, fontsize="small")
    ax.set_yticks(range(d), labels, fontsize="small")


def plot_density_matrix(rho, *, part: str = "modulus", labels: Sequence[str] | None = None, ax: Axes | None = None,
                        title: str | None = None) -> Figure:
    r"""Heatmap of the modulus :math:`|\rho_{ij}|` or the phase :math:`\arg\rho_{ij}` of a density matrix.

    The diagonal of the modulus holds the probabilities of the basis states
    (sememes); off-diagonal entries are the coherences between two of them.
    The phase is shown with a cyclic colour map on :math:`[-\pi, \pi]` and left
    blank where :math:`|\rho_{ij}| < 10^{-6} \max |\rho|` (no phase to speak of).

    Parameters
    ----------
    rho : torch.Tensor, numpy.ndarray, DensityMatrix or Ensemble
        One ``(d, d)`` matrix.
    part : {"modulus", "phase"}
    labels : sequence of str, optional
        ``d`` names of the basis states (tick labels).
    ax : matplotlib.axes.Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}; got {part!r}")
    matrix = _density(rho)
    fig, ax = _single_axes(ax, (4.5, 4))
    modulus = np.abs(matrix)
    if part == "modulus":
        image = ax.imshow(modulus, cmap="viridis", vmin=0.0, interpolation="nearest")
    else:
        phase = np.angle(matrix).astype(np.float64)
        phase[modulus < 1e-6 * max(float(modulus.max()), np.finfo(np.float64).tiny)] = np.nan
        image = ax.imshow(np.ma.masked_invalid(phase), cmap="twilight", vmin=-math.pi, vmax=math.pi,
                          interpolation="nearest")
    bar = fig.colorbar(image, ax=ax, shrink=0.8)
    if part == "phase":
        bar.set_ticks([-math.pi, 0, math.pi], labels=[r"$-\pi$", "0", r"$\pi$"])
    _tick_labels(ax, labels, matrix.shape[0])
    ax.set_title(title or (r"$|\rho_{ij}|$" if part == "modulus" else r"$\arg\,\rho_{ij}$"))
    return fig


def plot_density_matrix_parts(rho, *, labels: Sequence[str] | None = None, axes: Sequence[Axes] | None = None,
                              title: str | None = None) -> Figure:
    """Modulus and phase of ``rho`` side by side (two :func:`plot_density_matrix` panels).

    ``axes``: two Axes to draw into (default a new 9 x 4 inch figure).
    """
    matrix = _density(rho)
    fig, (left, right) = _many_axes(axes, 2, (9, 4))
    plot_density_matrix(matrix, part="modulus", labels=labels, ax=left)
    plot_density_matrix(matrix, part="phase", labels=labels, ax=right)
    if title:
        fig.suptitle(title)
    return fig


def plot_measurement_probabilities(probabilities, *, labels: Sequence[str] | None = None, top: int | None = None,
                                   ax: Axes | None = None, title: str | None = None) -> Figure:
    r"""Bar chart of Born probabilities :math:`p_k = \operatorname{Tr}(\rho\,|v_k\rangle\langle v_k|)`.

    Parameters
    ----------
    probabilities : torch.Tensor or array
        Real ``(k,)``, each in [0, 1] (up to round-off).
    labels : sequence of str, optional
        ``k`` bar labels (default ``v0 .. v{k-1}``).
    top : int, optional
        Show only the ``top`` largest, in decreasing order.
    ax : matplotlib.axes.Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    p = _numpy("probabilities", probabilities)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"probabilities must have shape (k,) with k >= 1; got {p.shape}")
    if np.iscomplexobj(p):
        raise TypeError("probabilities must be real")
    tol = 1e-4
    if p.min() < -tol or p.max() > 1 + tol:
        raise ValueError(f"probabilities must lie in [0, 1]; got range [{p.min():.4g}, {p.max():.4g}]")
    labels = [f"v{k}" for k in range(p.size)] if labels is None else _checks.words("labels", labels, p.size,
                                                                                  "probabilities")
    order = np.arange(p.size)
    if top is not None:
        order = np.argsort(-p, kind="stable")[:_checks.positive("top", top)]
    fig, ax = _single_axes(ax, (max(4.0, 0.3 * len(order) + 1.5), 3))
    ax.bar(range(len(order)), p[order], color="tab:blue")
    ax.set_xticks(range(len(order)), [labels[i] for i in order], rotation=90, fontsize="small")
    ax.set_ylabel("probability")
    ax.set_ylim(0, max(float(p[order].max()) * 1.1, 1e-3))
    ax.set_title(title or "Born probabilities of the measurements")
    return fig


def plot_word_states(states, words: Sequence[str], *, dims: Sequence[int] | None = None,
                     ax: Axes | Sequence[Axes] | None = None, title: str | None = None) -> Figure:
    r"""Word states on the complex plane: one panel per dimension j, a point :math:`w_j = r_j e^{i\phi_j}` per word.

    The distance from the origin is the amplitude :math:`r_j` (how much of the
    word lies along basis state j), the angle is the phase :math:`\phi_j`.
    Each panel zooms on its points; the unit circle (which bounds the coordinates
    of unit states) is drawn in grey when it falls in view.

    Parameters
    ----------
    states : torch.Tensor or array
        Complex ``(n, d)`` (real vectors are drawn on the real axis).
    words : sequence of str
        ``n`` labels.
    dims : sequence of int, optional
        Dimensions to show (default the first ``min(d, 4)``).
    ax : Axes or sequence of Axes, optional
        One Axes per dimension.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    z = _numpy("states", states)
    if z.ndim == 1:
        z = z[None]
    if z.ndim != 2 or z.shape[0] == 0 or z.shape[1] == 0:
        raise ValueError(f"states must have shape (n, d); got {z.shape}")
    words = _checks.words("words", words, z.shape[0], "states")
    dims = list(range(min(z.shape[1], 4))) if dims is None else [int(j) for j in dims]
    bad = [j for j in dims if not 0 <= j < z.shape[1]]
    if not dims or bad:
        raise ValueError(f"dims must be a non-empty list in [0, {z.shape[1]}); got {bad or dims}")
    z = z.astype(np.complex128)
    fig, axes = _many_axes(ax, len(dims), (3.2 * len(dims), 3.4))
    circle = np.exp(1j * np.linspace(0, 2 * math.pi, 200))
    for a, j in zip(axes, dims):
        limit = max(float(np.abs(z[:, j]).max()), 1e-12) * 1.25    # zoom on the points (the circle may be off view)
        a.plot(circle.real, circle.imag, color="0.8", linewidth=0.8)
        a.axhline(0, color="0.9", linewidth=0.6)
        a.axvline(0, color="0.9", linewidth=0.6)
        a.scatter(z[:, j].real, z[:, j].imag, s=18, color="tab:red", zorder=3)
        for word, point in zip(words, z[:, j]):
            a.annotate(word, (point.real, point.imag), fontsize="x-small", xytext=(3, 3), textcoords="offset points")
        a.set_xlim(-limit, limit)
        a.set_ylim(-limit, limit)
        a.set_aspect("equal")
        a.set_title(f"dimension {j}", fontsize="small")
        a.set_xlabel("Re")
    axes[0].set_ylabel("Im")
    if title:
        fig.suptitle(title)
    return fig


def plot_similarity_over_time(table: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None,
                              ylabel: str = "cosine similarity") -> Figure:
    """One line per column of a times x words table (e.g. :func:`~qpnlp.interpret.similarity_trajectories`).

    Parameters
    ----------
    table : pandas.DataFrame
        Numeric index (times) and numeric columns, at least one row and column.
    ax : matplotlib.axes.Axes, optional
    title, ylabel : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame (times x words); got {type(table).__name__}")
    if table.shape[0] == 0 or table.shape[1] == 0:
        raise ValueError(f"table is empty: shape {table.shape}")
    times = _numpy("table index (times)", table.index.to_numpy(dtype=np.float64))
    values = _numpy("table values", table.to_numpy(dtype=np.float64))
    fig, ax = _single_axes(ax, (6.5, 3.5))
    for column, series in zip(table.columns, values.T):
        ax.plot(times, series, label=str(column), linewidth=1.5)
    ax.set_xlabel(table.index.name or "time")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize="small", ncols=min(4, table.shape[1]))
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title)
    return fig


def plot_period_histogram(periods, *, bins: int = 40, log: bool = True, reference: float | None = None,
                          ax: Axes | None = None, title: str | None = None) -> Figure:
    r"""Histogram of periods :math:`2\pi/|\omega|` in tokens (e.g. of :func:`~qpnlp.interpret.period_distribution`).

    Infinite periods (zero frequencies) cannot be placed on the axis: they are
    left out and counted in the title.

    Parameters
    ----------
    periods : array or torch.Tensor
        Positive periods, any shape (flattened); ``inf`` allowed.
    bins : int
    log : bool
        Logarithmic period axis and log-spaced bins (periods span decades).
    reference : float, optional
        Draw a vertical line here (e.g. the mean sentence length).
    ax : matplotlib.axes.Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if isinstance(periods, torch.Tensor):
        periods = periods.detach().cpu().numpy()
    p = np.asarray(periods, dtype=np.float64).reshape(-1)
    if np.isnan(p).any() or (p <= 0).any():
        raise ValueError("periods must be positive (inf allowed, NaN not)")
    finite = p[np.isfinite(p)]
    if finite.size == 0:
        raise ValueError(f"no finite period to plot ({p.size} values, all infinite or none)")
    bins = _checks.positive("bins", bins)
    fig, ax = _single_axes(ax, (6, 3.5))
    if log and finite.max() > finite.min():
        edges = np.geomspace(finite.min(), finite.max(), bins + 1)
        ax.set_xscale("log")
    else:
        edges = bins
    ax.hist(finite, bins=edges, color="tab:purple", alpha=0.85)
    if reference is not None:
        ax.axvline(reference, color="black", linestyle="--", linewidth=1, label=f"{reference:.3g} tokens")
        ax.legend(fontsize="small")
    ax.set_xlabel(r"period $2\pi/|\omega|$ (tokens)")
    ax.set_ylabel("count")
    left_out = p.size - finite.size
    ax.set_title(title or f"{finite.size} periods" + (f" ({left_out} infinite left out)" if left_out else ""))
    return fig
