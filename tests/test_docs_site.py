"""The Sphinx site in docs/ builds with warnings as errors and has the pages and the maths."""

import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import qpnlp

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API_PAGES = ["hilbert", "measurement", "nn", "models", "word2fun", "interpret", "data", "training", "evaluation", "testing", "cli"]
CONCEPTS = sorted(p.stem for p in (DOCS / "concepts").glob("*.md"))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("docs-html")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"sphinx-build failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return out


def _html(site: Path, page: str) -> str:
    path = site / f"{page}.html"
    assert path.is_file(), f"{page}.html was not built"
    return path.read_text(encoding="utf-8")


def test_concept_pages_include_phase_encodings_and_word2fun():
    assert {"sememe-basis", "superposition", "mixtures", "measurement", "validation",
            "phase-encodings", "word2fun"} <= set(CONCEPTS)


@pytest.mark.parametrize("page", ["index", "getting-started", "api/index"]
                         + [f"concepts/{c}" for c in CONCEPTS] + [f"api/{p}" for p in API_PAGES])
def test_page_is_built(site, page):
    assert "<h1>" in _html(site, page)


def test_every_public_module_has_an_api_entry(site):
    """Each non-private module of qpnlp is documented on an API page (add it to docs/api/*.rst)."""
    html = "".join((site / "api" / f"{p}.html").read_text(encoding="utf-8") for p in API_PAGES)
    names = ["qpnlp.cli", *(m.name for m in pkgutil.walk_packages(qpnlp.__path__, "qpnlp."))]
    public = [n for n in names if not any(part.startswith("_") for part in n.split("."))]
    missing = [n for n in public if f'id="module-{n}"' not in html]
    assert not missing, f"modules without an automodule entry in docs/api/: {missing}"


def test_maths_is_rendered(site):
    for page in ["concepts/phase-encodings", "concepts/word2fun", "concepts/mixtures", "api/hilbert",
                 "api/models"]:
        html = _html(site, page)
        assert 'class="math' in html, page
        assert re.search(r"<script[^>]+mathjax", html, re.I), f"{page}: no MathJax script"
    assert r"\omega_{j,d}" in _html(site, "concepts/phase-encodings")
    assert r"\frac{1}{|\hat V|}" in _html(site, "concepts/word2fun")


def test_no_unrendered_math_markup(site):
    """No :math: role left as text (e.g. in markdown) and no $$ left unparsed."""
    for page in [f"concepts/{c}" for c in CONCEPTS] + [f"api/{p}" for p in API_PAGES] + ["getting-started"]:
        html = _html(site, page)
        assert ":math:" not in html, page
        assert "$$" not in html, page


def test_notebooks_are_not_part_of_the_site(site):
    assert not (site / "notebooks").exists()
