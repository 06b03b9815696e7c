"""Where the benchmark data lives.

The benchmark files are never part of the package; they are found through an
explicit ``root`` argument or the environment variable ``QPNLP_DATA``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_ENV_VAR", "data_root"]

#: Name of the environment variable that points at the benchmark data folder.
DATA_ENV_VAR = "QPNLP_DATA"


def data_root(root: str | os.PathLike[str] | None = None) -> Path:
    """Resolve the folder that holds the benchmark data.

    Parameters
    ----------
    root : str or path-like, optional
        Explicit folder. When omitted, ``$QPNLP_DATA`` is used.

    Returns
    -------
    pathlib.Path
        The absolute, existing folder (expected to contain ``classification/``
        and ``qa/``).

    Raises
    ------
    FileNotFoundError
        When no root is given and ``QPNLP_DATA`` is unset or empty, or when the
        folder does not exist. The message says how to set ``QPNLP_DATA``.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data_root(d) == Path(d).resolve()
    True
    """
    hint = (
        f"set the environment variable {DATA_ENV_VAR} to the benchmark data folder "
        f"(e.g. `export {DATA_ENV_VAR}=/path/to/shared/data`) or pass root=..."
    )
    if root is None:
        env = os.environ.get(DATA_ENV_VAR, "").strip()
        if not env:
            raise FileNotFoundError(f"no data root given and {DATA_ENV_VAR} is not set; {hint}")
        path, source = Path(env).expanduser(), f"{DATA_ENV_VAR}={env!r}"
    else:
        path, source = Path(root).expanduser(), f"root={str(root)!r}"
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a directory"
        raise FileNotFoundError(f"data root {path} ({source}) {what}; {hint}")
    return path.resolve()
