"""Which frames are qpnlp's own: the ``stacklevel`` that makes a warning name the user's line, however deep in qpnlp
it is raised, and whether an exception was raised by a ``raise`` statement of qpnlp."""

from __future__ import annotations

import dis
import os
import sys
from types import CodeType

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def outside_qpnlp() -> int:
    """The ``stacklevel`` of the first frame outside the qpnlp package, for a ``warnings.warn`` in the caller.

    A fixed ``stacklevel`` names the right line for one way in only: the low-coverage warning of
    ``prepare``, raised when ``run_split`` called it, named ``run_split``'s own line in qpnlp.
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and in_qpnlp(frame.f_code):
        frame, level = frame.f_back, level + 1
    return level


def in_qpnlp(code: CodeType) -> bool:
    """Whether ``code`` (a frame's ``f_code``) is a function of the qpnlp package."""
    return os.path.abspath(code.co_filename).startswith(_PACKAGE)


_RAISE = dis.opmap["RAISE_VARARGS"]


def raised_by_qpnlp(error: BaseException) -> bool:
    """Whether ``error`` was raised by a ``raise`` statement of qpnlp, with a message qpnlp wrote (``raise
    ValueError("seed must be ...")``), rather than by Python, torch or another library, or by a builtin that a
    line of qpnlp called (``len(1, 2)``, ``[][1]``: their innermost frame is qpnlp's too, at a call or a
    subscript instead of a ``raise``). The innermost frame of the traceback says it (raising an error again,
    ``raise`` or ``raise error``, keeps the frame where it began)."""
    tb = error.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return in_qpnlp(code) and 0 <= tb.tb_lasti < len(code.co_code) and code.co_code[tb.tb_lasti] == _RAISE
