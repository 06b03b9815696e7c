"""Where things go in a figure: the root figure of an Axes, and word labels placed where they overlap nothing.

Private to :mod:`qpnlp.interpret.plots` (kept apart so that each module stays one concept).
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox


def root_figure(ax: Axes) -> Figure:
    """The figure ``ax`` is drawn in (the top one when ``ax`` is in a subfigure)."""
    try:
        return ax.get_figure(root=True)
    except TypeError:  # matplotlib < 3.10
        return ax.figure


# label offsets tried around a point, in points: 8 directions at growing distances
_DIRECTIONS = [(1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1)]
_RADII = (4, 9, 15, 22, 30, 40, 52)
_LEADER = 15                  # labels this far (points) or farther get a thin line to their point


def _candidate(anchor: np.ndarray, size: tuple[float, float], direction, radius: float, px: float) -> Bbox:
    """The display box of a label of ``size`` pixels put ``radius`` points from ``anchor`` in ``direction``."""
    (dx, dy), (w, h) = direction, size
    norm = math.hypot(dx, dy)
    cx = anchor[0] + radius * px * dx / norm
    cy = anchor[1] + radius * px * dy / norm
    x0 = cx if dx > 0 else cx - w if dx < 0 else cx - w / 2
    y0 = cy if dy > 0 else cy - h if dy < 0 else cy - h / 2
    return Bbox.from_bounds(x0, y0, w, h)


def _overlaps(boxes: np.ndarray, others: np.ndarray) -> np.ndarray:
    """The area each of ``boxes`` (n, 4) shares with the boxes ``others`` (m, 4), all as extents
    ``(x0, y0, x1, y1)``: (n,), the positive intersections added in the order of ``others`` (a cumulative sum,
    the additions of a loop over them)."""
    w = np.minimum(boxes[:, None, 2], others[None, :, 2]) - np.maximum(boxes[:, None, 0], others[None, :, 0])
    h = np.minimum(boxes[:, None, 3], others[None, :, 3]) - np.maximum(boxes[:, None, 1], others[None, :, 1])
    areas = np.where((w > 0) & (h > 0), w * h, 0.0)                     # (n, m)
    return areas.cumsum(-1)[:, -1] if areas.shape[-1] else np.zeros(len(boxes))


def _least_crowded(boxes: np.ndarray, blocked: np.ndarray, frame: np.ndarray) -> int:
    """The first of the candidate ``boxes`` (n, 4) with the least cost: its overlap with the ``blocked`` boxes
    (m, 4) plus 4 times its area outside the ``frame`` (4,), all extents ``(x0, y0, x1, y1)``.

    Costs are >= 0, so this is the first free spot (cost 0) when there is one, as a search in the order of the
    candidates stopping at the first free one finds it.
    """
    outside = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]) - _overlaps(boxes, frame[None])
    return int(np.argmin(_overlaps(boxes, blocked) + 4 * outside))


def place_labels(ax: Axes, points: np.ndarray, words: list[str], fontsize="small") -> None:
    """Annotate each point with its word where the label overlaps no other label, point or the frame.

    Greedy: labels are placed one by one, each at the first free spot of a
    ring of candidates around its point (near first); a label that finds no
    free spot takes the least crowded one. Labels set away from their point
    are tied to it by a thin line. Placement uses the figure's final layout
    (drawn once without rendering) and the labels stay out of the layout.
    The candidates of a label are scored against the boxes placed so far at
    once (``_least_crowded``), not one pair of boxes at a time.
    """
    fig = root_figure(ax)
    fig.draw_without_rendering()
    px = fig.dpi / 72.0
    anchors = ax.transData.transform(points)
    frame = ax.get_window_extent().extents
    marker = 3.5 * px
    blocked = np.empty((2 * len(anchors), 4))                  # the points' markers, then the labels placed
    blocked[:len(anchors)] = np.concatenate([anchors - marker, anchors + marker], axis=1)
    count = len(anchors)
    spots = [(direction, radius) for radius in _RADII for direction in _DIRECTIONS]   # near first
    for word, anchor, point in zip(words, anchors, points):
        probe = ax.annotate(word, (0, 0), fontsize=fontsize)
        extent = probe.get_window_extent()
        probe.remove()
        size = (extent.width + 2 * px, extent.height)
        boxes = np.array([_candidate(anchor, size, direction, radius, px).extents for direction, radius in spots])
        best = _least_crowded(boxes, blocked[:count], frame)
        blocked[count] = boxes[best]
        count += 1
        (dx, dy), radius = spots[best]
        norm = math.hypot(dx, dy)
        offset = (radius * dx / norm, radius * dy / norm)
        text = ax.annotate(word, tuple(point), xytext=offset, textcoords="offset points", fontsize=fontsize,
                           ha="left" if dx > 0 else "right" if dx < 0 else "center",
                           va="bottom" if dy > 0 else "top" if dy < 0 else "center",
                           arrowprops=dict(arrowstyle="-", color="0.45", linewidth=0.6, shrinkA=0, shrinkB=2)
                           if radius >= _LEADER else None)
        text.set_in_layout(False)
