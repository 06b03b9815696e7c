"""The public API is what ``tests/public_api.txt`` lists: every name in the ``__all__`` of every public module (the
functions and classes defined in a public module without one), with the parameters (names, kinds, defaults) of the
functions and classes.

A name removed or renamed, a parameter removed, renamed or made required, or a default changed fails here, so it
cannot reach a release unnoticed: write it in CHANGELOG.md (Changed / Removed, with the replacement; a deprecation
shim for a rename), then rewrite the list with ``python tests/test_public_api.py``. Additions fail too, so the
list stays the surface of today.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

LISTED = Path(__file__).with_name("public_api.txt")


def _public_modules() -> list[str]:
    import qpnlp

    found = ["qpnlp"] + [m.name for m in pkgutil.walk_packages(qpnlp.__path__, "qpnlp.")
                         if not any(part.startswith("_") for part in m.name.split("."))]
    return sorted(found)


def _parameters(obj) -> str:
    """``(a, b=1, *, c=None)`` without annotations (their spelling differs between Python versions)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    plain = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=plain, return_annotation=inspect.Signature.empty))


def _exported(module) -> list[str]:
    """``__all__``, or the public functions and classes defined in ``module``."""
    if hasattr(module, "__all__"):
        return sorted(module.__all__)
    return sorted(n for n, v in vars(module).items() if not n.startswith("_") and (inspect.isfunction(v) or
                  inspect.isclass(v)) and v.__module__ == module.__name__)


def surface() -> list[str]:
    """One line per exported name: ``module.name`` and, for a function or class, its parameters."""
    lines = []
    for name in _public_modules():
        module = importlib.import_module(name)
        for exported in _exported(module):
            obj = getattr(module, exported)
            shown = _parameters(obj) if callable(obj) and not isinstance(obj, type(sys)) else ""
            lines.append(f"{name}.{exported}{shown}")
    return lines


def test_the_public_api_is_the_listed_one():
    listed = LISTED.read_text(encoding="utf-8").splitlines()
    today = surface()
    diff = "\n".join(difflib.unified_diff(listed, today, "tests/public_api.txt", "today", lineterm="", n=0))
    assert today == listed, (f"the public API changed; say so in CHANGELOG.md (Changed / Removed, with the "
                             f"replacement), then run `python tests/test_public_api.py`:\n{diff}")


def main(argv: list[str]) -> None:
    """Rewrite the list (or the file ``argv[0]``) from this checkout's qpnlp: ``python tests/test_public_api.py``
    puts ``tests/`` first on ``sys.path``, not the checkout, so qpnlp came from wherever it was installed (another
    checkout's editable install: its surface was written here), or did not import at all."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import qpnlp

    out = Path(argv[0]) if argv else LISTED
    out.write_text("\n".join(surface()) + "\n", encoding="utf-8")
    print(f"wrote the public API of {Path(qpnlp.__file__).parent} to {out}")


def test_the_list_is_rewritten_from_this_checkout(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, __file__, str(tmp_path / "api.txt")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    here = Path(__file__).resolve().parents[1] / "qpnlp"
    assert done.returncode == 0 and f"wrote the public API of {here} to" in done.stdout, done.stderr
    assert (tmp_path / "api.txt").read_text(encoding="utf-8").splitlines() == surface()


if __name__ == "__main__":
    main(sys.argv[1:])
