"""Plots render under Agg, show exactly the data they are given, and behave like pandas/seaborn plots.

Without ``ax`` a function opens a new pyplot figure (``plt.show()`` shows it)
and returns the Axes it drew into; with ``ax`` it draws there and opens
nothing. The figures are readable: labelled axes and colour bars, word labels
that do not overlap, colour scales that show small entries next to a large one.
"""

from __future__ import annotations

import itertools
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib import colors  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from qpnlp.hilbert import DensityMatrix, Ensemble  # noqa: E402
from qpnlp.interpret import (plot_density_matrix, plot_density_matrix_parts,  # noqa: E402
                             plot_measurement_probabilities, plot_period_histogram, plot_similarity_over_time,
                             plot_word_states)

PNG = b"\x89PNG\r\n\x1a\n"


def _save(fig: Figure, path) -> None:
    fig.savefig(path)
    data = path.read_bytes()
    assert data.startswith(PNG) and len(data) > 1000


@pytest.fixture(autouse=True)
def _close_figures():
    plt.close("all")
    yield
    plt.close("all")


@pytest.fixture
def rho():
    states = torch.tensor([[1, 0, 0], [0.6, 0.8j, 0]], dtype=torch.complex64)
    return Ensemble(states, torch.tensor([0.25, 0.75]))


def _colorbar_label(ax: Axes) -> str:
    return ax.images[0].colorbar.ax.get_ylabel()


# --------------------------------------------------------------------------- pyplot and ax= conventions
def _one_of_each(rho):
    table = pd.DataFrame({"war": [0.1, 0.5]}, index=pd.Index([1800, 1900], name="year"))
    return {
        "density_matrix": (lambda ax: plot_density_matrix(rho, ax=ax), 1),
        "density_matrix_parts": (lambda ax: plot_density_matrix_parts(rho, ax=ax), 2),
        "measurement_probabilities": (lambda ax: plot_measurement_probabilities(torch.tensor([0.2, 0.8]), ax=ax), 1),
        "word_states": (lambda ax: plot_word_states(torch.tensor([[0.6, 0.8j]]), ["x"], ax=ax), 2),
        "similarity_over_time": (lambda ax: plot_similarity_over_time(table, ax=ax), 1),
        "period_histogram": (lambda ax: plot_period_histogram([2.0, 3.0, 50.0], ax=ax), 1),
    }


@pytest.mark.parametrize("name", ["density_matrix", "density_matrix_parts", "measurement_probabilities",
                                  "word_states", "similarity_over_time", "period_histogram"])
def test_without_ax_a_new_pyplot_figure_is_drawn_and_current(name, rho):
    call, panels = _one_of_each(rho)[name]
    plt.figure()                                          # an unrelated figure the user has open
    before = plt.get_fignums()
    out = call(None)
    assert len(plt.get_fignums()) == len(before) + 1      # known to pyplot: plt.show() / plt.savefig see it
    axes = list(np.ravel(out)) if panels > 1 else [out]
    assert all(isinstance(a, Axes) for a in axes) and len(axes) == panels
    assert axes[0].figure is plt.gcf()
    assert plt.gcf().number not in before


@pytest.mark.parametrize("name", ["density_matrix", "density_matrix_parts", "measurement_probabilities",
                                  "word_states", "similarity_over_time", "period_histogram"])
def test_with_ax_it_draws_there_and_opens_nothing(name, rho):
    call, panels = _one_of_each(rho)[name]
    fig, given = plt.subplots(1, panels, squeeze=False)
    given = list(given[0])
    before = plt.get_fignums()
    out = call(given[0] if panels == 1 else given)
    assert plt.get_fignums() == before
    assert (list(np.ravel(out)) if panels > 1 else [out]) == given


def test_plotting_leaves_matplotlib_settings_as_they_were(rho, tmp_path):
    """No function sets rcParams, the backend, a style or a registered colour map for the user's later figures."""
    before = (dict(matplotlib.rcParams), matplotlib.get_backend(), sorted(matplotlib.colormaps))
    for call, _ in _one_of_each(rho).values():
        call(None)
    _save(plt.gcf(), tmp_path / "last.png")
    assert (dict(matplotlib.rcParams), matplotlib.get_backend(), sorted(matplotlib.colormaps)) == before


def test_axes_of_a_figure_made_without_pyplot_stay_out_of_pyplot(rho, tmp_path):
    mine = Figure()
    axes = mine.subplots(1, 2)
    out = plot_density_matrix_parts(rho, ax=axes)
    assert list(out) == list(axes) and plt.get_fignums() == []
    assert plot_density_matrix_parts(rho, axes=axes)[0] is axes[0]        # the old keyword still works
    _save(mine, tmp_path / "mine.png")


# --------------------------------------------------------------------------- density matrices
def test_density_matrix_modulus_on_a_log_scale(rho, tmp_path):
    dense = rho.dense().data
    ax = plot_density_matrix(rho, labels=["a", "b", "c"])
    _save(ax.figure, tmp_path / "modulus.png")
    image = ax.images[0]
    assert isinstance(image.norm, colors.LogNorm)
    top = float(dense.abs().max())
    assert image.norm.vmax == pytest.approx(top) and image.norm.vmin == pytest.approx(top * 1e-3)
    shown = np.asarray(image.get_array())
    nonzero = dense.abs().numpy() > 0
    np.testing.assert_allclose(shown[nonzero], dense.abs().numpy()[nonzero], rtol=1e-6)
    assert (shown[~nonzero] < image.norm.vmin).all()                        # zeros: below the scale, not blank
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert ax.get_xlabel() == "column j (basis state)" and ax.get_ylabel() == "row i (basis state)"
    assert "log scale" in _colorbar_label(ax)
    linear = plot_density_matrix(rho, scale="linear")
    assert isinstance(linear.images[0].norm, colors.Normalize) and linear.images[0].norm.vmin == 0


def test_log_scale_separates_small_entries_that_a_linear_scale_merges():
    """One dominant diagonal entry: the linear scale gives 1e-3 and 1e-2 the same colour, the log scale does not."""
    rho = torch.diag(torch.tensor([0.989, 0.01, 0.001])).to(torch.complex128)
    log_ax = plot_density_matrix(rho)
    lin_ax = plot_density_matrix(rho, scale="linear")

    def colour(ax, i):
        image = ax.images[0]
        return np.asarray(image.cmap(image.norm(np.asarray(image.get_array())[i, i])))

    assert np.abs(colour(log_ax, 1) - colour(log_ax, 2)).max() > 0.2
    assert np.abs(colour(lin_ax, 1) - colour(lin_ax, 2)).max() < 0.05


def test_density_matrix_phase_and_signed_parts(rho, tmp_path):
    dense = rho.dense().data
    ax = plot_density_matrix(DensityMatrix(dense), part="phase")
    _save(ax.figure, tmp_path / "phase.png")
    phase = ax.images[0].get_array()
    assert phase.mask.tolist() == (dense.abs() < 1e-3 * dense.abs().max()).tolist()   # no phase where rho_ij ~ 0
    np.testing.assert_allclose(phase[0, 1], math.atan2(-0.75 * 0.48, 0), atol=1e-6)  # rho_01 = 0.75*0.6*(-0.8i)
    assert ax.images[0].get_clim() == (-math.pi, math.pi)
    assert "(rad)" in _colorbar_label(ax)
    for part, values in [("real", dense.real), ("imag", dense.imag)]:
        for scale, norm_type in [("log", colors.SymLogNorm), ("linear", colors.Normalize)]:
            image = plot_density_matrix(dense, part=part, scale=scale).images[0]
            assert isinstance(image.norm, norm_type)
            assert image.norm.vmin == pytest.approx(-image.norm.vmax)             # symmetric about zero
            assert image.norm.vmax == pytest.approx(float(values.abs().max()))
            np.testing.assert_allclose(np.asarray(image.get_array()), values.numpy(), atol=1e-7)


def test_density_matrix_parts(rho, tmp_path):
    axes = plot_density_matrix_parts(rho.dense().data, title="mixture")
    _save(axes[0].figure, tmp_path / "parts.png")
    assert len(axes) == 2 and all(a.images for a in axes)
    assert axes[0].figure.get_suptitle() == "mixture"
    pair = plot_density_matrix_parts(rho, parts=("real", "imag"))
    assert [a.get_title() for a in pair] == ["real part of $\\rho$", "imaginary part of $\\rho$"]


def test_many_basis_labels_are_thinned():
    labels = [f"sememe-{i}" for i in range(60)]
    ax = plot_density_matrix(torch.eye(60, dtype=torch.complex64) / 60, labels=labels)
    shown = [t.get_text() for t in ax.get_xticklabels()]
    assert 10 <= len(shown) <= 25 and shown[0] == "sememe-0" and set(shown) <= set(labels)


@pytest.mark.parametrize("d", [1, 2, 3, 7])
def test_unlabelled_basis_states_are_ticked_at_whole_indices(d):
    # matplotlib's default ticks of a 2x2 image are -0.5, 0.0, 0.5, 1.0, 1.5: basis state "0.5" does not exist
    ax = plot_density_matrix(torch.eye(d) / d)
    ax.figure.draw_without_rendering()
    for ticks, (low, high) in ((ax.get_xticks(), ax.get_xlim()), (ax.get_yticks(), ax.get_ylim())):
        shown = [t for t in ticks if min(low, high) <= t <= max(low, high)]
        assert shown and all(float(t).is_integer() and 0 <= t < d for t in shown), shown


# --------------------------------------------------------------------------- bars, states, curves, histograms
def test_measurement_probability_bars(tmp_path):
    p = torch.tensor([0.1, 0.5, 0.05, 0.3])
    ax = plot_measurement_probabilities(p)
    _save(ax.figure, tmp_path / "bars.png")
    assert len(ax.patches) == 4
    np.testing.assert_allclose([b.get_height() for b in ax.patches], p.numpy())
    assert "probability" in ax.get_ylabel() and ax.get_xlabel() == "measurement"
    ax = plot_measurement_probabilities(p.numpy(), labels=list("abcd"), top=2)
    assert [b.get_height() for b in ax.patches] == pytest.approx([0.5, 0.3])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["b", "d"]


def test_many_measurements_keep_a_figure_of_readable_width():
    # 0.3 inch a bar: 3000 measurements drew a figure 901 inches wide, every bar labelled
    p = np.linspace(1.0, 0.0, 3000) / 1500
    ax = plot_measurement_probabilities(p, labels=[f"m{k}" for k in range(3000)])
    assert len(ax.patches) == 3000 and ax.figure.get_figwidth() <= 20
    shown = [t.get_text() for t in ax.get_xticklabels()]
    assert 25 <= len(shown) <= 50 and shown[:2] == ["m0", f"m{int(ax.get_xticks()[1])}"]
    ax = plot_measurement_probabilities(p[::-1].copy(), labels=[f"m{k}" for k in range(3000)], top=200)
    assert [t.get_text() for t in ax.get_xticklabels()][:2] == ["m2999", f"m{2999 - int(ax.get_xticks()[1])}"]


def test_word_states_on_the_complex_plane(tmp_path):
    states = torch.tensor([[0.6, 0.8j], [-1j, 0]], dtype=torch.complex64)
    axes = plot_word_states(states, ["x", "y"])
    _save(axes[0].figure, tmp_path / "states.png")
    assert len(axes) == 2
    for j, ax in enumerate(axes):
        points = ax.collections[0].get_offsets()
        np.testing.assert_allclose(points, np.stack([states[:, j].real, states[:, j].imag], 1), atol=1e-7)
        assert [t.get_text() for t in ax.texts] == ["x", "y"]
        assert ax.get_xlabel() == f"Re $w_{{{j}}}$" and ax.get_ylabel() == f"Im $w_{{{j}}}$"
    one = Figure().add_subplot()
    assert plot_word_states(states, ["x", "y"], dims=[1], ax=one)[0] is one



def _overlap_loop(box, others) -> float:
    """The area ``box`` shares with ``others`` (extents x0, y0, x1, y1), one pair at a time (the reference)."""
    total = 0.0
    for other in others:
        w = min(box[2], other[2]) - max(box[0], other[0])
        h = min(box[3], other[3]) - max(box[1], other[1])
        if w > 0 and h > 0:
            total += w * h
    return total


def _least_crowded_loop(boxes, blocked, frame) -> int:
    """The first free candidate, else the first of the least cost, by a search that stops at the first free one."""
    best, best_cost = None, math.inf
    for i, box in enumerate(boxes):
        outside = (box[2] - box[0]) * (box[3] - box[1]) - _overlap_loop(box, [frame])
        cost = _overlap_loop(box, blocked) + 4 * outside
        if cost < best_cost:
            best, best_cost = i, cost
        if cost == 0:
            break
    return best


@pytest.mark.parametrize("seed", range(6))
def test_label_spots_scored_at_once_match_the_loop_over_pairs(seed):
    from qpnlp.interpret._labels import _least_crowded, _overlaps

    rng = np.random.default_rng(seed)

    def boxes(n):                                   # on a coarse grid: shared edges, identical boxes, equal costs
        corner = rng.integers(0, 20, size=(n, 2)).astype(float) * 0.5
        return np.concatenate([corner, corner + rng.integers(1, 6, size=(n, 2)) * 0.5], axis=1)

    frame = np.array([1.0, 1.0, 9.0, 9.0])
    for n, m in ((1, 0), (1, 1), (5, 3), (56, 40), (56, 0)):
        candidates, blocked = boxes(n), boxes(m)
        if n > 1:
            candidates[1] = candidates[0]                                               # a tie
        assert _overlaps(candidates, blocked).tolist() == [_overlap_loop(b, blocked) for b in candidates]
        assert _least_crowded(candidates, blocked, frame) == _least_crowded_loop(candidates, blocked, frame)
    crowded = np.tile(np.array([[2.0, 2.0, 3.0, 3.0]]), (4, 1))                         # every spot costs the same
    assert _least_crowded(crowded, crowded[:2], frame) == 0

def _label_boxes(ax: Axes):
    """The boxes of the label texts (without their leader lines)."""
    ax.figure.canvas.draw()
    return [Text.get_window_extent(t) for t in ax.texts]


@pytest.mark.parametrize("spread", [0.0, 1e-3, 0.05])
def test_word_labels_do_not_overlap(spread, tmp_path):
    """Ten words at (nearly) the same point, and a realistic spread: no two labels overlap, none hides a point."""
    g = torch.Generator().manual_seed(0)
    centre = torch.tensor([0.3 + 0.2j, -0.1 + 0.4j], dtype=torch.complex64)
    states = centre + spread * torch.randn(10, 2, dtype=torch.complex64, generator=g)
    words = ["congress", "government", "people", "states", "war", "peace", "economy", "slavery", "gold", "jobs"]
    axes = plot_word_states(states, words, title="ten words")
    _save(axes[0].figure, tmp_path / "labels.png")
    for ax in axes:
        boxes = _label_boxes(ax)
        assert len(boxes) == 10
        for a, b in itertools.combinations(boxes, 2):
            assert not a.overlaps(b), f"labels overlap: {a} and {b}"
        points = ax.transData.transform(ax.collections[0].get_offsets())
        for box in boxes:
            assert not any(box.contains(x, y) for x, y in points), "a label covers a point"


def test_similarity_over_time(tmp_path):
    table = pd.DataFrame({"war": [0.1, 0.5, 0.2], "peace": [0.3, 0.3, 0.4]},
                         index=pd.Index([1800, 1900, 2000], name="year"))
    ax = plot_similarity_over_time(table, title="union")
    _save(ax.figure, tmp_path / "similarity.png")
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["war", "peace"]
    np.testing.assert_allclose(lines[0].get_ydata(), [0.1, 0.5, 0.2])
    np.testing.assert_allclose(lines[1].get_xdata(), [1800, 1900, 2000])
    assert ax.get_xlabel() == "year" and ax.get_ylabel() == "cosine similarity"


def test_period_histogram(tmp_path):
    periods = np.array([2.0, 3.0, 3.5, 100.0, 1e4, np.inf, np.inf])
    ax = plot_period_histogram(periods, bins=5, reference=20)
    _save(ax.figure, tmp_path / "periods.png")
    assert sum(b.get_height() for b in ax.patches) == 5                   # the finite periods
    assert "2 infinite left out" in ax.get_title() and ax.get_xscale() == "log"
    assert "tokens" in ax.get_xlabel()
    assert "frequencies" in ax.get_ylabel() and "word and dimension" in ax.get_ylabel()   # what a count is
    linear = plot_period_histogram(torch.tensor([1.0, 2.0, 3.0]), log=False, bins=3, ylabel="words")
    assert [b.get_height() for b in linear.patches] == [1, 1, 1] and linear.get_ylabel() == "words"


@pytest.mark.parametrize("call, error, match", [
    (lambda: plot_density_matrix(torch.ones(2, 3)), ValueError, "square"),
    (lambda: plot_density_matrix(torch.full((2, 2), float("nan"))), ValueError, "NaN"),
    (lambda: plot_density_matrix(torch.eye(2), part="diagonal"), ValueError, "part"),
    (lambda: plot_density_matrix(torch.eye(2), scale="sqrt"), ValueError, "scale"),
    (lambda: plot_density_matrix(torch.eye(2), decades=0), ValueError, "decades"),
    (lambda: plot_density_matrix(torch.eye(2), labels=["a"]), ValueError, "labels"),
    (lambda: plot_density_matrix_parts(torch.eye(2), parts=["modulus", "abs"]), ValueError, "parts"),
    (lambda: plot_density_matrix_parts(torch.eye(2), ax=[1, 2], axes=[1, 2]), TypeError, "not both"),
    (lambda: plot_measurement_probabilities(torch.tensor([0.5, 1.5])), ValueError, r"\[0, 1\]"),
    (lambda: plot_measurement_probabilities(torch.ones(2, 2)), ValueError, "shape"),
    (lambda: plot_word_states(torch.ones(2, 3), ["a", "b"], dims=[3]), ValueError, "dims"),
    (lambda: plot_word_states(torch.ones(2, 3), ["a"]), ValueError, "words"),
    (lambda: plot_word_states(torch.ones(2, 3), ["a", "b"], dims=[0, 1], ax=Figure().add_subplot()),
     ValueError, "need 2 Axes"),
    (lambda: plot_similarity_over_time([[1.0]]), TypeError, "DataFrame"),
    (lambda: plot_similarity_over_time(pd.DataFrame()), ValueError, "empty"),
    (lambda: plot_period_histogram([np.inf]), ValueError, "no finite"),
    (lambda: plot_period_histogram([-1.0, 2.0]), ValueError, "positive"),
    (lambda: plot_density_matrix(torch.eye(2), ax="left"), TypeError, "Axes"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("call, error, match", [
    # matplotlib's "Invalid vmin or vmax" from the colour scale
    (lambda: plot_density_matrix(torch.zeros(2, 2)), ValueError, "zero matrix"),
    (lambda: plot_density_matrix(torch.zeros(2, 2), part="real"), ValueError, "zero matrix"),
    (lambda: plot_density_matrix(torch.eye(2), decades=math.inf), ValueError, "positive and finite"),
    (lambda: plot_density_matrix(torch.eye(2), decades=400), ValueError, "below the float64 range"),
    # the imaginary part was dropped with only a ComplexWarning; NaN / negative references drew nothing
    (lambda: plot_period_histogram(torch.tensor([1 + 1j, 2 + 0j])), TypeError, "periods must be real"),
    (lambda: plot_period_histogram(["a"]), TypeError, "periods must be real"),
    (lambda: plot_period_histogram([1.0, 2.0], reference=float("nan")), ValueError, "reference must be"),
    (lambda: plot_period_histogram([1.0, 2.0], reference=-1.0), ValueError, "reference must be"),
    (lambda: plot_period_histogram([1.0, 2.0], reference="20"), ValueError, "reference must be"),
    # int(0.5) showed dimension 0
    (lambda: plot_word_states(torch.ones(2, 3), ["a", "b"], dims=[0.5]), TypeError, r"dims must be integers"),
    # numpy's "could not convert string to float"
    (lambda: plot_similarity_over_time(pd.DataFrame({"a": [1.0, 2.0]}, index=["x", "y"])), TypeError,
     r"numeric index \(times\)"),
    (lambda: plot_similarity_over_time(pd.DataFrame({"a": [1 + 1j, 2]}, index=[0, 1])), TypeError, "real"),
])
def test_bad_input_that_used_to_fail_in_matplotlib_or_draw_the_wrong_thing(call, error, match):
    try:
        with pytest.raises(error, match=match):
            call()
    finally:
        plt.close("all")


@pytest.mark.parametrize("given", [False, True])
def test_similarity_over_time_of_many_words_keeps_every_legend_entry_in_the_figure(given):
    # from about 20 words the legend ran off the bottom of the figure (entries lost) and the constrained layout
    # squeezed the Axes to nothing (45 pixels high with 25 words)
    table = pd.DataFrame({f"word{i}": np.linspace(0, 1, 5) * i / 60 for i in range(60)},
                         index=pd.Index(np.arange(5.0), name="year"))
    ax = plot_similarity_over_time(table, ax=plt.subplots(figsize=(6.5, 3.6), layout="constrained")[1]
                                   if given else None)
    fig = ax.figure
    fig.draw_without_rendering()
    frame = fig.bbox
    texts = ax.get_legend().get_texts()
    assert len(texts) == 60
    for text in texts:
        box = text.get_window_extent()
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 + 1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
    assert ax.get_window_extent().height > 0.6 * frame.height
    if given:
        assert tuple(fig.get_size_inches()) == (6.5, 3.6)               # the user's figure keeps its size
    else:
        assert ax.get_window_extent().width > 0.4 * 6.5 * fig.dpi        # widened for the columns, not squeezed


def test_similarity_over_time_at_one_time_shows_a_marker_per_word():
    # a line through one point drew nothing: the Axes looked empty beside a full legend
    ax = plot_similarity_over_time(pd.DataFrame({"war": [0.4], "peace": [0.7]}, index=pd.Index([1950.0])))
    assert [line.get_marker() not in (None, "None", "", " ") for line in ax.get_lines()] == [True, True]


def test_similarity_over_time_draws_missing_values_as_gaps():
    # a word missing at some times (NaN, as pandas writes it) was refused: "table values contains NaN or inf"
    table = pd.DataFrame({"war": [0.1, np.nan, 0.3, np.nan, 0.2], "peace": [0.2, 0.3, 0.1, 0.4, 0.5]},
                         index=pd.Index([1800, 1850, 1900, 1950, 2000], name="year"))
    war, peace = plot_similarity_over_time(table).get_lines()
    np.testing.assert_array_equal(war.get_ydata(), table["war"].to_numpy())          # NaN: a gap in the line
    assert war.get_marker() not in (None, "None", "") and peace.get_marker() in (None, "None", "")
    for bad, match in ((np.inf, "inf"), (np.nan, "all NaN")):
        with pytest.raises(ValueError, match=match):
            plot_similarity_over_time(pd.DataFrame({"war": [bad, np.nan]}))
    with pytest.raises(ValueError, match="index"):
        plot_similarity_over_time(pd.DataFrame({"war": [0.1, 0.2]}, index=[1800.0, np.nan]))


@pytest.mark.parametrize("times", [1, 3])
def test_similarity_over_time_of_more_words_than_colours_tells_every_word_apart(times):
    # past the 10 colours of the cycle, word 11 was drawn as word 1: same colour, same solid line
    table = pd.DataFrame(np.random.default_rng(0).random((times, 25)), columns=[f"w{i}" for i in range(25)])
    ax = plot_similarity_over_time(table)
    looks = [(line.get_color(), line.get_linestyle(), line.get_marker()) for line in ax.get_lines()]
    handles = [(h.get_color(), h.get_linestyle(), h.get_marker()) for h in ax.get_legend().legend_handles]
    assert len(set(looks)) == 25 and handles == looks


def test_bfloat16_tensors_plot_as_their_float32_values():
    """numpy has no bfloat16: ``.numpy()`` raised "Got unsupported ScalarType BFloat16"."""
    p = torch.tensor([0.5, 0.25, 0.25], dtype=torch.bfloat16)
    ax = plot_measurement_probabilities(p)
    assert [patch.get_height() for patch in ax.patches] == [0.5, 0.25, 0.25]
    ax = plot_period_histogram(torch.tensor([2.0, 4.0, 4.0, float("inf")], dtype=torch.bfloat16))
    assert sum(patch.get_height() for patch in ax.patches) == 3
    plt.close("all")


@pytest.mark.parametrize("part", ["modulus", "phase", "imag"])
def test_a_lazy_conjugate_density_matrix_plots_its_values(rho, part):
    """``rho.conj()`` (or ``.mH``) is a view with the conjugate bit: ``.numpy()`` raised "Can't call numpy() on
    Tensor that has conjugate bit set"; it now plots as the resolved matrix (its phases negated)."""
    dense = rho.dense().data
    lazy = dense.conj()
    assert lazy.is_conj()
    got = plot_density_matrix(lazy, part=part).images[0].get_array()
    expected = plot_density_matrix(lazy.resolve_conj(), part=part).images[0].get_array()
    np.testing.assert_array_equal(np.ma.getdata(got), np.ma.getdata(expected))
    if part == "imag":
        np.testing.assert_allclose(np.ma.getdata(got), -dense.imag.numpy(), atol=1e-7)


def test_probabilities_of_any_tensor_layout_plot_as_the_plain_tensor(real_layout):
    p = torch.tensor([0.125, 0.5, 0.0625, 0.3125])
    ax = plot_measurement_probabilities(real_layout(p))
    assert [b.get_height() for b in ax.patches] == p.tolist()
