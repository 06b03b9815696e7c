"""The library as it was at an earlier commit, importable next to today's, for interleaved before/after timing.

``load_baseline(rev)`` extracts ``qpnlp/`` at ``rev`` (``git archive``) into a
temporary directory as the package ``qpnlp_baseline`` (absolute imports
rewritten) and imports it. Both versions then run in one process, so a
benchmark can alternate them batch by batch under the same machine load
instead of comparing runs taken at different times.

The default ``BASELINE_REV`` is the commit before the speed work of issue 22.
"""

from __future__ import annotations

import importlib
import io
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

BASELINE_REV = "970051e"
_NAME = "qpnlp_baseline"
_IMPORT = re.compile(r"^(\s*)(from|import) qpnlp(?=[.\s])", re.MULTILINE)
_REPO = Path(__file__).resolve().parent.parent


def extract_package(rev: str, prefix: str = "qpnlp_baseline_", parent: Path | None = None) -> Path:
    """``qpnlp/`` at ``rev`` (``git archive``) in a fresh temporary directory (inside ``parent`` when given, so that
    the caller's temporary directory removes it); returns that directory."""
    archive = subprocess.run(["git", "archive", "--format=tar", rev, "qpnlp"], cwd=_REPO, check=True,
                             capture_output=True).stdout
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(root, filter="data")
    return root


def load_baseline(rev: str = BASELINE_REV):
    """Import ``qpnlp`` at ``rev`` as ``qpnlp_baseline`` (cached per process)."""
    if _NAME in sys.modules:
        return sys.modules[_NAME]
    root = extract_package(rev)
    (root / "qpnlp").rename(root / _NAME)
    for path in (root / _NAME).rglob("*.py"):
        text = path.read_text()
        path.write_text(_IMPORT.sub(lambda m: f"{m.group(1)}{m.group(2)} {_NAME}", text))
    sys.path.insert(0, str(root))
    module = importlib.import_module(_NAME)
    for sub in ("hilbert", "measurement", "nn", "models", "training"):
        importlib.import_module(f"{_NAME}.{sub}")
    module.__baseline_rev__ = rev
    return module
