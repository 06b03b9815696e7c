r"""Matplotlib figures of the interpretation results.

Every function works as pandas' and seaborn's plotting functions do: given
``ax`` (an ``Axes``, or a sequence of them for the multi-panel figures) it
draws there and leaves the rest of the figure alone; without ``ax`` it opens
a new figure through :mod:`matplotlib.pyplot` (so ``plt.show()`` shows it and
``plt.savefig`` saves it). It returns the Axes it drew into (a 1-d array of
Axes for the multi-panel functions; ``ax.figure`` is the figure) and never
calls ``show``. In a notebook, end the cell with ``;`` or ``plt.show()`` to
keep the Axes' text representation out of the output.

The figures are meant to be read at a glance: axes and colour bars say what they show and in which unit, word labels
are placed so that they do not overlap, and the colour scales show structure that spans decades (a logarithmic
modulus, a symmetric scale for signed parts, a cyclic one for phases).

* :func:`plot_density_matrix`, :func:`plot_density_matrix_parts`: the modulus :math:`|\rho_{ij}|`, phase
  :math:`\arg \rho_{ij}` or real and imaginary parts of a density matrix;
* :func:`plot_measurement_probabilities`: Born probabilities of a sentence, one bar per measurement;
* :func:`plot_word_states`: word states on the complex plane, one panel per dimension;
* :func:`plot_similarity_over_time`: Word2Fun similarity trajectories;
* :func:`plot_period_histogram`: periods of complex-order frequencies.
"""

from __future__ import annotations

import functools
import math
import operator
import threading
from collections.abc import Callable, Sequence

import matplotlib
import numpy as np
import pandas as pd
import torch
from matplotlib import colors, ticker
from matplotlib.axes import Axes

from qpnlp._host import host_array

from . import _checks
from ._labels import place_labels, root_figure

__all__ = ["plot_density_matrix", "plot_density_matrix_parts", "plot_measurement_probabilities",
           "plot_word_states", "plot_similarity_over_time", "plot_period_histogram"]

PARTS = ("modulus", "phase", "real", "imag")
SCALES = ("log", "linear")
MAX_TICK_LABELS = 25          # more basis-state names than this are thinned out (every n-th)
MAX_BAR_LABELS = 50           # more measurement bars than this: every n-th labelled, the figure no wider
#: Line styles of the successive rounds of the colour cycle (a word past the 10th kept the colour of an earlier one).
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D")


# --------------------------------------------------------------------------- axes and figures
#: The figures :func:`_new_axes` opened in this thread during the plotting call running (``figures``, a list).
_opened = threading.local()


def _new_axes(n: int, panel: tuple[float, float], ncols: int | None = None) -> list[Axes]:
    """``n`` Axes of ``panel`` inches each, ``ncols`` to a row, in a new pyplot figure (now the current one)."""
    import matplotlib.pyplot as plt

    ncols = n if ncols is None else min(n, ncols)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel[0] * ncols, panel[1] * nrows), layout="constrained",
                             squeeze=False)
    if getattr(_opened, "figures", None) is not None:
        _opened.figures.append(fig)
    axes = list(axes.ravel())
    for extra in axes[n:]:
        fig.delaxes(extra)
    return axes[:n]


def _closing_on_error(plot: Callable) -> Callable:
    """``plot`` closing the figures it opened itself (``ax`` not given) when it raises, and only those.

    A figure left half-drawn in pyplot by a call that failed (labels of the wrong length, Ctrl-C) stayed open:
    the next ``plt.show()``, a notebook cell's inline output and ``plt.gcf()`` showed it, and it was never freed.
    """
    @functools.wraps(plot)
    def closing(*args, **kwargs):
        outer, opened = getattr(_opened, "figures", None), []
        _opened.figures = opened
        try:
            return plot(*args, **kwargs)
        except BaseException:
            if opened:
                import matplotlib.pyplot as plt

                for fig in opened:
                    plt.close(fig)
            raise
        finally:
            _opened.figures = outer
    return closing


def _single_axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    if ax is None:
        return _new_axes(1, figsize)[0]
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes; got {type(ax).__name__}")
    return ax


def _many_axes(ax, n: int, panel: tuple[float, float], ncols: int | None = None) -> list[Axes]:
    if ax is None:
        return _new_axes(n, panel, ncols)
    axes = [ax] if isinstance(ax, Axes) else list(np.ravel(np.asarray(ax, dtype=object)))
    if len(axes) != n or not all(isinstance(a, Axes) for a in axes):
        raise ValueError(f"need {n} Axes; got {len(axes)}")
    return axes


def _array(axes: list[Axes]) -> np.ndarray:
    out = np.empty(len(axes), dtype=object)
    out[:] = axes
    return out


# --------------------------------------------------------------------------- inputs
def _numpy(name: str, x) -> np.ndarray:
    x = np.asarray(host_array(x))
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


def _every(n: int, most: int) -> list[int]:
    """At most ``most`` of the positions ``0 .. n-1``, evenly spaced from 0 (every ``ceil(n / most)``-th)."""
    return list(range(0, n, max(1, math.ceil(n / most))))


def _tick_labels(ax: Axes, labels, d: int) -> None:
    """Ticks at whole basis-state indices (never ``0.5``): integers, or at most ``MAX_TICK_LABELS`` ``labels``."""
    if labels is None:
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(ticker.MaxNLocator(integer=True, min_n_ticks=1))
        return
    labels = _checks.words("labels", labels, d, "rows of rho")
    ticks = _every(d, MAX_TICK_LABELS)
    ax.set_xticks(ticks, [labels[i] for i in ticks], rotation=90, fontsize="small")
    ax.set_yticks(ticks, [labels[i] for i in ticks], fontsize="small")


# --------------------------------------------------------------------------- density matrices
@_closing_on_error
def plot_density_matrix(rho, *, part: str = "modulus", scale: str = "log", decades: float = 3.0,
                        labels: Sequence[str] | None = None, ax: Axes | None = None,
                        title: str | None = None) -> Axes:
    r"""Heatmap of one part of a density matrix: :math:`|\rho_{ij}|`, :math:`\arg\rho_{ij}`, Re or Im.

    The diagonal of the modulus holds the probabilities of the basis states
    (sememes); off-diagonal entries are the coherences between two of them.
    A few large diagonal entries would make a linear colour scale one bright
    square on a dark field, so the modulus is drawn on a logarithmic scale
    over ``decades`` powers of ten below its largest entry (smaller entries
    take the colour of the bottom of the scale, marked by the colour bar's
    arrow). The real and imaginary parts use a diverging colour map symmetric
    about zero (with ``scale="log"``, linear within :math:`10^{-\text{decades}}
    \max|\rho|` of zero and logarithmic beyond). The phase is shown with a
    cyclic colour map on :math:`[-\pi, \pi]` and left blank where
    :math:`|\rho_{ij}|` is below the modulus scale (no phase to speak of).

    Parameters
    ----------
    rho : torch.Tensor, numpy.ndarray, DensityMatrix or Ensemble
        One ``(d, d)`` matrix.
    part : {"modulus", "phase", "real", "imag"}
    scale : {"log", "linear"}
        Colour scale of the modulus and of the real and imaginary parts.
    decades : float
        Dynamic range of the logarithmic scales, and the threshold below which
        no phase is drawn (:math:`|\rho_{ij}| < 10^{-\text{decades}} \max|\rho|`).
    labels : sequence of str, optional
        ``d`` names of the basis states (tick labels; thinned to at most 25 shown).
    ax : matplotlib.axes.Axes, optional
        Draw here; by default a new pyplot figure.
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn into (its colour bar is an extra Axes of the same figure).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> ax = plot_density_matrix(torch.diag(torch.tensor([0.9, 0.1, 0.0])).to(torch.complex64))
    >>> ax.get_xlabel(), round(ax.images[0].norm.vmin, 6)      # three decades below the largest entry
    ('column j (basis state)', 0.0009)
    >>> plt.close("all")
    """
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}; got {part!r}")
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}; got {scale!r}")
    if not (decades > 0 and math.isfinite(decades)):
        raise ValueError(f"decades must be positive and finite; got {decades!r}")
    matrix = _density(rho)
    modulus, top, floor = _modulus_range(matrix, decades)
    ax = _single_axes(ax, (5, 4.2))
    if part == "modulus":
        shown, cmap, norm, extend, label = _modulus_colours(modulus, scale, top, floor)
    elif part == "phase":
        shown, cmap, norm, extend, label = _phase_colours(matrix, modulus, floor)
    else:
        shown, cmap, norm, extend, label = _signed_colours(matrix, part, scale, floor)
    image = ax.imshow(shown, cmap=cmap, norm=norm, interpolation="nearest")
    bar = root_figure(ax).colorbar(image, ax=ax, shrink=0.85, extend=extend)
    bar.set_label(label)
    if part == "phase":
        bar.set_ticks([-math.pi, -math.pi / 2, 0, math.pi / 2, math.pi],
                      labels=[r"$-\pi$", r"$-\pi/2$", "0", r"$\pi/2$", r"$\pi$"])
    ax.set_xlabel("column j (basis state)")
    ax.set_ylabel("row i (basis state)")
    _tick_labels(ax, labels, matrix.shape[0])
    default = {"modulus": r"modulus $|\rho_{ij}|$", "phase": r"phase $\arg\,\rho_{ij}$",
               "real": r"real part of $\rho$", "imag": r"imaginary part of $\rho$"}[part]
    ax.set_title(title or default)
    return ax


def _modulus_range(matrix: np.ndarray, decades: float) -> tuple[np.ndarray, float, float]:
    r"""The float64 modulus :math:`|\rho_{ij}|` (d, d) of ``matrix``, its largest entry ``top`` and the bottom of the
    colour scales, :math:`\text{top} \cdot 10^{-\text{decades}}`; ValueError for a zero matrix or a bottom
    below the float64 range."""
    modulus = np.abs(matrix).astype(np.float64)
    top = float(modulus.max())
    floor = top * 10.0 ** -decades
    if top == 0:                                        # no colour scale to draw (matplotlib: "Invalid vmin")
        raise ValueError("rho is the zero matrix: there is nothing to draw")
    if not floor >= np.finfo(np.float64).tiny * 1e3:   # the log scale would start at 0 (or a denormal)
        raise ValueError(f"decades={decades!r} puts the bottom of the colour scale below the float64 range "
                         f"(largest |rho_ij| {top:.3g})")
    return modulus, top, floor


def _modulus_colours(modulus: np.ndarray, scale: str, top: float, floor: float) -> tuple:
    r"""``(shown, cmap, norm, extend, label)`` of :math:`|\rho_{ij}|` (d, d): viridis, from ``floor`` to ``top`` on
    a log ``scale`` (smaller entries in the bottom colour, the bar's arrow), else linear from 0."""
    extend = "neither"
    if scale == "log":                                      # below the scale: the bottom colour
        norm, extend = colors.LogNorm(vmin=floor, vmax=top, clip=False), "min"
        shown = np.maximum(modulus, floor * 1e-3)          # zeros are below the scale, not invalid
    else:
        norm, shown = colors.Normalize(vmin=0.0, vmax=top), modulus
    label = r"$|\rho_{ij}|$" + (" (log scale)" if scale == "log" else "")
    return shown, _cmap("viridis"), norm, extend, label


def _phase_colours(matrix: np.ndarray, modulus: np.ndarray, floor: float) -> tuple:
    r"""``(shown, cmap, norm, extend, label)`` of :math:`\arg\rho_{ij}` (d, d): cyclic on :math:`[-\pi, \pi]`,
    masked where :math:`|\rho_{ij}|` (``modulus``) is below ``floor``."""
    shown = np.angle(matrix).astype(np.float64)
    shown[modulus < floor] = np.nan
    label = r"$\arg\,\rho_{ij}$ (rad)"
    return (np.ma.masked_invalid(shown), _cmap("twilight"), colors.Normalize(vmin=-math.pi, vmax=math.pi),
            "neither", label)


def _signed_colours(matrix: np.ndarray, part: str, scale: str, floor: float) -> tuple:
    r"""``(shown, cmap, norm, extend, label)`` of Re or Im :math:`\rho_{ij}` (``part``, (d, d)): diverging and
    symmetric about 0, linear within ``floor`` of 0 and logarithmic beyond on a log ``scale``."""
    shown = (matrix.real if part == "real" else matrix.imag).astype(np.float64)
    bound = max(float(np.abs(shown).max()), np.finfo(np.float64).tiny)
    norm = (colors.SymLogNorm(linthresh=floor, vmin=-bound, vmax=bound, base=10) if scale == "log"
            else colors.Normalize(vmin=-bound, vmax=bound))
    label = (r"Re $\rho_{ij}$" if part == "real" else r"Im $\rho_{ij}$") + (" (symmetric log)"
                                                                               if scale == "log" else "")
    return shown, _cmap("RdBu_r"), norm, "neither", label


def _cmap(name: str) -> colors.Colormap:
    return matplotlib.colormaps[name]


@_closing_on_error
def plot_density_matrix_parts(rho, *, parts: Sequence[str] = ("modulus", "phase"), scale: str = "log",
                              decades: float = 3.0, labels: Sequence[str] | None = None,
                              ax: Sequence[Axes] | None = None, axes: Sequence[Axes] | None = None,
                              title: str | None = None) -> np.ndarray:
    """Two or more parts of ``rho`` side by side (one :func:`plot_density_matrix` panel each); the Axes, a 1-d array.

    Parameters
    ----------
    rho, parts, scale, decades, labels
        As in :func:`plot_density_matrix`, ``parts`` a sequence of its ``part`` (default modulus and phase, all a
        complex matrix holds; ``("real", "imag")`` is the other complete pair).
    ax, axes, title : optional
        One Axes per part (``axes`` an alias of ``ax``; default a new pyplot figure); a title above the figure (the
        first panel's title when drawing into given Axes).
    """
    if ax is not None and axes is not None:
        raise TypeError("give ax or its alias axes, not both")
    parts = [parts] if isinstance(parts, str) else list(parts)
    bad = [p for p in parts if p not in PARTS]
    if not parts or bad:
        raise ValueError(f"parts must be a non-empty sequence of {PARTS}; got {parts!r}")
    matrix = _density(rho)
    given = ax if ax is not None else axes
    panels = _many_axes(given, len(parts), (5, 4.2))
    for panel, part in zip(panels, parts):
        plot_density_matrix(matrix, part=part, scale=scale, decades=decades, labels=labels, ax=panel)
    if title and given is None:
        root_figure(panels[0]).suptitle(title)
    elif title:
        panels[0].set_title(title)
    return _array(panels)


# --------------------------------------------------------------------------- measurements
@_closing_on_error
def plot_measurement_probabilities(probabilities, *, labels: Sequence[str] | None = None, top: int | None = None,
                                   ax: Axes | None = None, title: str | None = None) -> Axes:
    r"""Bar chart of Born probabilities :math:`p_k = \operatorname{Tr}(\rho\,|v_k\rangle\langle v_k|)`.

    Parameters
    ----------
    probabilities : torch.Tensor or array
        Real ``(k,)``, each in [0, 1] (up to round-off).
    labels : sequence of str, optional
        ``k`` bar labels (default ``v0 .. v{k-1}``); past 50 bars, every n-th is shown (the figure grows no wider).
    top : int, optional
        Show only the ``top`` largest, in decreasing order.
    ax : matplotlib.axes.Axes, optional
        Draw here; by default a new pyplot figure.
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
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
    ax = _single_axes(ax, (max(4.0, 0.3 * min(len(order), MAX_BAR_LABELS) + 1.5), 3.2))
    ax.bar(range(len(order)), p[order], color="tab:blue")
    ticks = _every(len(order), MAX_BAR_LABELS)
    ax.set_xticks(ticks, [labels[order[i]] for i in ticks], rotation=90, fontsize="small")
    ax.set_xlabel("measurement" + (f" (the {len(order)} largest)" if top is not None else ""))
    ax.set_ylabel(r"Born probability $p_k$")
    ax.set_ylim(0, max(float(p[order].max()) * 1.1, 1e-3))
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(title or "Born probabilities of the measurements")
    return ax


# --------------------------------------------------------------------------- word states
@_closing_on_error
def plot_word_states(states, words: Sequence[str], *, dims: Sequence[int] | None = None,
                     ax: Axes | Sequence[Axes] | None = None, ncols: int = 2,
                     title: str | None = None) -> np.ndarray:
    r"""Word states on the complex plane: one panel per dimension j, a point :math:`w_j = r_j e^{i\phi_j}` per word.

    The distance from the origin is the amplitude :math:`r_j` (how much of the
    word lies along basis state j; dimensionless, at most 1 for unit states),
    the angle is the phase :math:`\phi_j`. Each panel zooms on its points; the
    unit circle is drawn in grey when it falls in view. Word labels are placed
    where they overlap neither each other nor the points (a thin line ties a
    label set further away to its point).

    Parameters
    ----------
    states : torch.Tensor or array
        Complex ``(n, d)`` (real vectors are drawn on the real axis).
    words : sequence of str
        ``n`` labels.
    dims : sequence of int, optional
        Dimensions to show (default the first ``min(d, 4)``).
    ax : Axes or sequence of Axes, optional
        One Axes per dimension; by default a new pyplot figure.
    ncols : int
        Panels per row of the new figure (without ``ax``).
    title : str, optional

    Returns
    -------
    numpy.ndarray
        The Axes, one per dimension.
    """
    z = _numpy("states", states)
    if z.ndim == 1:
        z = z[None]
    if z.ndim != 2 or z.shape[0] == 0 or z.shape[1] == 0:
        raise ValueError(f"states must have shape (n, d); got {z.shape}")
    words = _checks.words("words", words, z.shape[0], "states")
    try:
        dims = list(range(min(z.shape[1], 4))) if dims is None else [operator.index(j) for j in dims]
    except TypeError:                                   # int(0.5) would silently show dimension 0
        raise TypeError(f"dims must be integers; got {list(dims)}") from None
    bad = [j for j in dims if not 0 <= j < z.shape[1]]
    if not dims or bad:
        raise ValueError(f"dims must be a non-empty list in [0, {z.shape[1]}); got {bad or dims}")
    z = z.astype(np.complex128)
    axes = _many_axes(ax, len(dims), (3.6, 3.6), _checks.positive("ncols", ncols))
    circle = np.exp(1j * np.linspace(0, 2 * math.pi, 200))
    for a, j in zip(axes, dims):
        limit = max(float(np.abs(z[:, j]).max()), 1e-12) * 1.35    # zoom on the points (the circle may be off view)
        a.plot(circle.real, circle.imag, color="0.8", linewidth=0.8)
        a.axhline(0, color="0.9", linewidth=0.6)
        a.axvline(0, color="0.9", linewidth=0.6)
        a.scatter(z[:, j].real, z[:, j].imag, s=18, color="tab:red", zorder=3)
        a.set_xlim(-limit, limit)
        a.set_ylim(-limit, limit)
        a.set_aspect("equal")
        a.set_title(f"dimension {j}", fontsize="small")
        a.set_xlabel(rf"Re $w_{{{j}}}$")
        a.set_ylabel(rf"Im $w_{{{j}}}$")
        a.tick_params(labelsize="x-small")
    if title:
        if ax is None:
            root_figure(axes[0]).suptitle(title)
        else:
            axes[0].set_title(f"{title}\ndimension {dims[0]}", fontsize="small")
    for a, j in zip(axes, dims):                 # after the titles: labels are placed in the final layout
        place_labels(a, np.stack([z[:, j].real, z[:, j].imag], 1), words)
    return _array(axes)


# --------------------------------------------------------------------------- Word2Fun and periods
@_closing_on_error
def plot_similarity_over_time(table: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None,
                              ylabel: str = "cosine similarity") -> Axes:
    """One line per column of a times x words table (e.g. :func:`~qpnlp.interpret.similarity_trajectories`).

    The legend stands beside the Axes, in as many columns as its entries need to fit the Axes' height (a new
    figure is widened by the extra columns, so that the Axes keep their size). A table of one time draws one
    marker per word. The words past the colour cycle (10 colours by default) are dashed, then dotted, then
    dash-dotted, round by round (four rounds look distinct). NaN values (a word missing at a time) are gaps in its
    line, as in ``table.plot()``; such a word's points are marked, so that a value between two gaps shows.

    Parameters
    ----------
    table : pandas.DataFrame
        Numeric index (times) and numeric columns, at least one row and column; NaN values are left out.
    ax : matplotlib.axes.Axes, optional
        Draw here; by default a new pyplot figure.
    title, ylabel : str, optional
        The x axis is labelled with the index name (default "time").

    Returns
    -------
    matplotlib.axes.Axes
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame (times x words); got {type(table).__name__}")
    if table.shape[0] == 0 or table.shape[1] == 0:
        raise ValueError(f"table is empty: shape {table.shape}")
    if any(pd.api.types.is_complex_dtype(t) for t in table.dtypes):
        raise TypeError("table values must be real; got a complex column")
    try:
        times, values = table.index.to_numpy(dtype=np.float64), table.to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as error:    # numpy's "could not convert string to float: 'x'" names no argument
        raise TypeError(f"table must have a numeric index (times) and numeric columns; got index {table.index.dtype}, "
                        f"columns {sorted({str(t) for t in table.dtypes})} ({error})") from None
    times = _numpy("table index (times)", times)
    if np.isinf(values).any() or np.isnan(values).all():
        raise ValueError(f"table values must be finite or NaN (missing), not all NaN; got {np.isinf(values).sum()} "
                         f"inf and {np.isnan(values).sum()} NaN of {values.size}")
    new, ax = ax is None, _single_axes(ax, (6.5, 3.6))
    colours = len(matplotlib.rcParams["axes.prop_cycle"].by_key().get("color", [None]))
    for i, (column, series) in enumerate(zip(table.columns, values.T)):
        style = i // colours % len(LINE_STYLES)                # the colour cycle's round: words differ in style
        marked = times.size == 1 or np.isnan(series).any()      # a line through one point draws nothing
        ax.plot(times, series, label=str(column), linewidth=1.5, linestyle=LINE_STYLES[style],
                marker=MARKERS[style] if marked else None, markersize=None if times.size == 1 else 3)
    ax.set_xlabel(table.index.name or "time")
    ax.set_ylabel(ylabel)
    # beside the axes, never over a curve; in as many columns as its height needs (a new figure widens for them)
    columns = math.ceil(values.shape[1] / _legend_rows(ax, "small"))
    legend = ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                       frameon=False, ncols=columns)
    if new and columns > 1:
        fig = root_figure(ax)                                     # the legend's width needs no layout (nor drawing)
        fig.set_figwidth(fig.get_figwidth() + legend.get_window_extent().width * (columns - 1) / columns / fig.dpi)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title)
    return ax


def _legend_rows(ax: Axes, fontsize) -> int:
    """How many legend entries of ``fontsize`` fit beside ``ax``, one above the other.

    A legend taller than the figure lost its last entries below the bottom edge, and the constrained layout
    squeezed the Axes to nothing (from about 20 entries in the default figure). An entry takes its text height
    (about 1.2 font sizes) and the legend's ``labelspacing``; the Axes height is taken before the layout runs,
    which leaves it a little room.
    """
    from matplotlib.font_manager import FontProperties

    size = FontProperties(size=fontsize).get_size_in_points()
    height = ax.get_position().height * root_figure(ax).get_figheight() * 72.0          # points
    return max(1, int(height / (size * (1.2 + matplotlib.rcParams["legend.labelspacing"]))))


@_closing_on_error
def plot_period_histogram(periods, *, bins: int = 40, log: bool = True, reference: float | None = None,
                          ax: Axes | None = None, title: str | None = None,
                          ylabel: str = "frequencies per bin (one per word and dimension)") -> Axes:
    r"""Histogram of periods :math:`2\pi/|\omega|` in tokens (e.g. of :func:`~qpnlp.interpret.period_distribution`).

    Each count is a number of frequencies :math:`\omega_{j,d}` (one per kept
    word and embedding dimension) whose period falls in the bin. Infinite
    periods (zero frequencies) cannot be placed on the axis: they are left out
    and counted in the title.

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
        Draw here; by default a new pyplot figure.
    title : str, optional
    ylabel : str
        What a count is (change it for periods that are not one per word and dimension).

    Returns
    -------
    matplotlib.axes.Axes
    """
    p = np.asarray(host_array(periods))
    if p.dtype == object or p.dtype == np.bool_ or not np.issubdtype(p.dtype, np.number) or np.iscomplexobj(p):
        raise TypeError(f"periods must be real numbers; got {p.dtype}")   # complex: the imaginary part was dropped
    p = p.astype(np.float64).reshape(-1)
    if np.isnan(p).any() or (p <= 0).any():
        raise ValueError("periods must be positive (inf allowed, NaN not)")
    if reference is not None and not (isinstance(reference, (int, float, np.number)) and math.isfinite(reference)
                                      and reference > 0):
        raise ValueError(f"reference must be a positive finite number of tokens; got {reference!r}")
    finite = p[np.isfinite(p)]
    if finite.size == 0:
        raise ValueError(f"no finite period to plot ({p.size} values, all infinite or none)")
    bins = _checks.positive("bins", bins)
    ax = _single_axes(ax, (6, 3.6))
    if log and finite.max() > finite.min():
        edges = np.geomspace(finite.min(), finite.max(), bins + 1)
        ax.set_xscale("log")
    else:
        edges = bins
    ax.hist(finite, bins=edges, color="tab:purple", alpha=0.85)
    if reference is not None:
        ax.axvline(reference, color="black", linestyle="--", linewidth=1, label=f"{reference:.3g} tokens")
        ax.legend(fontsize="small")
    ax.set_xlabel(r"period $2\pi/|\omega|$ (tokens" + (", log scale)" if ax.get_xscale() == "log" else ")"))
    ax.set_ylabel(ylabel)
    left_out = p.size - finite.size
    ax.set_title(title or f"{finite.size} periods" + (f" ({left_out} infinite left out)" if left_out else ""))
    return ax
