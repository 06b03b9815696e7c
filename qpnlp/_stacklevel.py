"""The ``stacklevel`` that makes a warning name the user's line, however deep in qpnlp it is raised."""

from __future__ import annotations

import os
import sys

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def outside_qpnlp() -> int:
    """The ``stacklevel`` of the first frame outside the qpnlp package, for a ``warnings.warn`` in the caller.

    A fixed ``stacklevel`` names the right line for one way in only: the low-coverage warning of
    ``prepare``, raised when ``run_split`` called it, named ``run_split``'s own line in qpnlp.
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
