"""Plots render to PNG under Agg and show exactly the data they are given."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

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
def _no_pyplot_figures():
    """No plot function may open a pyplot figure (no global state, nothing to show)."""
    before = plt.get_fignums()
    yield
    assert plt.get_fignums() == before


@pytest.fixture
def rho():
    states = torch.tensor([[1, 0, 0], [0.6, 0.8j, 0]], dtype=torch.complex64)
    return Ensemble(states, torch.tensor([0.25, 0.75]))


def test_density_matrix_modulus_and_phase(rho, tmp_path):
    dense = rho.dense().data
    fig = plot_density_matrix(rho, labels=["a", "b", "c"])
    _save(fig, tmp_path / "modulus.png")
    image = fig.axes[0].images[0].get_array()
    np.testing.assert_allclose(image, dense.abs().numpy(), atol=1e-7)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["a", "b", "c"]
    fig = plot_density_matrix(DensityMatrix(dense), part="phase")
    _save(fig, tmp_path / "phase.png")
    phase = fig.axes[0].images[0].get_array()
    assert phase.mask.tolist() == (dense.abs() < 1e-6).tolist()              # no phase where rho_ij = 0
    np.testing.assert_allclose(phase[0, 1], math.atan2(-0.75 * 0.48, 0), atol=1e-6)  # rho_01 = 0.75 * 0.6 * (-0.8i)
    assert fig.axes[0].images[0].get_clim() == (-math.pi, math.pi)


def test_density_matrix_parts_and_given_axes(rho, tmp_path):
    fig = plot_density_matrix_parts(rho.dense().data, title="mixture")
    _save(fig, tmp_path / "parts.png")
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert len(images) == 2
    mine = Figure()
    axes = mine.subplots(1, 2)
    assert plot_density_matrix_parts(rho, axes=axes) is mine
    assert plot_density_matrix(rho, ax=axes[0]) is mine


def test_measurement_probability_bars(tmp_path):
    p = torch.tensor([0.1, 0.5, 0.05, 0.3])
    fig = plot_measurement_probabilities(p)
    _save(fig, tmp_path / "bars.png")
    bars = fig.axes[0].patches
    assert len(bars) == 4
    np.testing.assert_allclose([b.get_height() for b in bars], p.numpy())
    fig = plot_measurement_probabilities(p.numpy(), labels=list("abcd"), top=2)
    assert [b.get_height() for b in fig.axes[0].patches] == pytest.approx([0.5, 0.3])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["b", "d"]


def test_word_states_on_the_complex_plane(tmp_path):
    states = torch.tensor([[0.6, 0.8j], [-1j, 0]], dtype=torch.complex64)
    fig = plot_word_states(states, ["x", "y"])
    _save(fig, tmp_path / "states.png")
    assert len(fig.axes) == 2
    for j, ax in enumerate(fig.axes):
        points = ax.collections[0].get_offsets()
        np.testing.assert_allclose(points, np.stack([states[:, j].real, states[:, j].imag], 1), atol=1e-7)
        assert [t.get_text() for t in ax.texts] == ["x", "y"]
    one = Figure().add_subplot()
    assert len(plot_word_states(states, ["x", "y"], dims=[1], ax=one).axes) == 1


def test_similarity_over_time(tmp_path):
    table = pd.DataFrame({"war": [0.1, 0.5, 0.2], "peace": [0.3, 0.3, 0.4]},
                         index=pd.Index([1800, 1900, 2000], name="year"))
    fig = plot_similarity_over_time(table, title="union")
    _save(fig, tmp_path / "similarity.png")
    lines = fig.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["war", "peace"]
    np.testing.assert_allclose(lines[0].get_ydata(), [0.1, 0.5, 0.2])
    np.testing.assert_allclose(lines[1].get_xdata(), [1800, 1900, 2000])
    assert fig.axes[0].get_xlabel() == "year"


def test_period_histogram(tmp_path):
    periods = np.array([2.0, 3.0, 3.5, 100.0, 1e4, np.inf, np.inf])
    fig = plot_period_histogram(periods, bins=5, reference=20)
    _save(fig, tmp_path / "periods.png")
    ax = fig.axes[0]
    assert sum(b.get_height() for b in ax.patches) == 5                   # the finite periods
    assert "2 infinite left out" in ax.get_title() and ax.get_xscale() == "log"
    linear = plot_period_histogram(torch.tensor([1.0, 2.0, 3.0]), log=False, bins=3)
    assert [b.get_height() for b in linear.axes[0].patches] == [1, 1, 1]


@pytest.mark.parametrize("call, error, match", [
    (lambda: plot_density_matrix(torch.ones(2, 3)), ValueError, "square"),
    (lambda: plot_density_matrix(torch.full((2, 2), float("nan"))), ValueError, "NaN"),
    (lambda: plot_density_matrix(torch.eye(2), part="real"), ValueError, "part"),
    (lambda: plot_density_matrix(torch.eye(2), labels=["a"]), ValueError, "labels"),
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
