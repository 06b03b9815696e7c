"""Calls that fail leave the user's process as they found it: no half-drawn figure stays open in pyplot.

The process settings a successful call must leave alone (RNG streams, threads, warnings filters, logging, signal
handlers, matplotlib's rcParams and backend) are checked in tests/test_global_state.py and
tests/interpret/test_plots.py; this module holds the checks of the failure paths.
"""

from __future__ import annotations

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from qpnlp.interpret import plot_density_matrix, plot_density_matrix_parts  # noqa: E402

RHO = torch.diag(torch.tensor([0.9, 0.1, 0.0])).to(torch.complex64)


@pytest.fixture(autouse=True)
def _no_figures():
    plt.close("all")
    yield
    plt.close("all")


@pytest.mark.parametrize("plot", [plot_density_matrix, plot_density_matrix_parts], ids=lambda f: f.__name__)
def test_a_plot_that_raises_closes_the_figure_it_opened_and_only_that_one(plot):
    """Labels of the wrong length are refused after the figure was opened: the half-drawn figure stayed in pyplot
    (the next ``plt.show()`` or a notebook cell's output showed it, ``plt.gcf()`` returned it)."""
    mine = plt.figure()
    with pytest.raises(ValueError, match="got 1 labels for 3 rows of rho"):
        plot(RHO, labels=["a"])
    assert plt.get_fignums() == [mine.number] and plt.gcf() is mine


def test_a_plot_that_raises_into_the_callers_axes_leaves_the_callers_figure_open():
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="got 1 labels"):
        plot_density_matrix(RHO, labels=["a"], ax=ax)
    assert plt.get_fignums() == [fig.number]


def test_a_plot_cut_short_by_ctrl_c_closes_its_figure(monkeypatch):
    from qpnlp.interpret import plot_word_states, plots

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "place_labels", interrupted)          # Ctrl-C while the labels are placed
    with pytest.raises(KeyboardInterrupt):
        plot_word_states(torch.tensor([[0.6, 0.8j]]), ["x"])
    assert plt.get_fignums() == []
