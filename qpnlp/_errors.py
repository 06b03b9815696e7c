"""Errors shared by every trainer (classification, matching, Word2Fun): one class per way training stops; and
:func:`preview`, how an error message shows a value it refuses."""

from __future__ import annotations

from typing import Any


def preview(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters (the last three ``...``), for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def newer_format_note(found: Any, expected: str) -> str:
    """A note for the error on a file of format ``found`` where this qpnlp reads ``expected`` (``NAME/VERSION``):
    that a newer qpnlp wrote it, when ``found`` is a later version of the same format; else "".

    >>> newer_format_note("qpnlp-model/2", "qpnlp-model/1").startswith(" (written by a newer qpnlp than this one, ")
    True
    >>> newer_format_note("qpnlp-model/1", "qpnlp-model/1"), newer_format_note(3, "qpnlp-model/1")
    ('', '')
    """
    from qpnlp import __version__

    name, _, version = expected.rpartition("/")
    later = found[len(name) + 1:] if isinstance(found, str) and found.startswith(name + "/") else ""
    if not (later.isdigit() and version.isdigit() and int(later) > int(version)):
        return ""
    return f" (written by a newer qpnlp than this one, {__version__}: upgrade qpnlp to read it)"


class TrainingDiverged(RuntimeError):
    """The loss, a parameter or a trainer's dev score became NaN or infinite; what was saved before it is still good.

    The trainers of :mod:`qpnlp.training` restore the best parameters so far
    before raising; Word2Fun raises before the epoch's ``on_epoch`` call, so a
    checkpoint written after each epoch still holds the last finite one.

    Each parameter below but ``message`` is an attribute of the same name; so are ``history`` (the finished
    epochs, where the trainer keeps one) and ``context`` (a dict, empty, where callers add what a command needs
    to save the model).

    Parameters
    ----------
    message : str
        The error's text: where it happened and what to try.
    epoch : int
        The epoch, counting from 1.
    batch : int or None, default None
        The batch, counting from 1; None when the whole epoch's mean loss, or a parameter found after the epoch,
        revealed it.
    loss : float or None, default None
        The batch's loss or the epoch's mean loss (finite when a parameter revealed it); None when not known.
    """

    def __init__(self, message: str, *, epoch: int, batch: int | None = None, loss: float | None = None) -> None:
        super().__init__(message)
        self.epoch, self.batch, self.loss = epoch, batch, loss
        self.history: list[dict] = []
        self.context: dict = {}
