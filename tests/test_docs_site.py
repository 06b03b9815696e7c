"""The Sphinx site in docs/ builds with warnings as errors and has the pages, the maths, the notebooks and results.

The build executes the notebooks (myst-nb, cached under docs/_build/.jupyter_cache
by a key of the notebooks and the qpnlp sources; a failing cell fails the
build), so a first build takes a few minutes and an unchanged checkout seconds.
"""

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


def test_maths_is_rendered_by_a_local_mathjax(site):
    for page in ["concepts/phase-encodings", "concepts/word2fun", "concepts/mixtures", "api/hilbert",
                 "api/models", "notebooks/qpdn"]:
        html = _html(site, page)
        assert 'class="math' in html, page
        scripts = re.findall(r'<script[^>]+src="([^"]*mathjax[^"]*)"', html, re.I)
        assert scripts, f"{page}: no MathJax script"
        for src in scripts:                                   # served from the build, not a CDN
            assert "://" not in src and not src.startswith("//"), f"{page}: remote MathJax {src}"
            assert (site / page).parent.joinpath(src.split("?")[0]).resolve().is_file(), f"{page}: {src} missing"
    assert r"\omega_{j,d}" in _html(site, "concepts/phase-encodings")
    assert r"\frac{1}{|\hat V|}" in _html(site, "concepts/word2fun")


def test_no_unrendered_math_markup(site):
    """No :math: role left as text (e.g. in markdown) and no $$ left unparsed."""
    for page in [f"concepts/{c}" for c in CONCEPTS] + [f"api/{p}" for p in API_PAGES] + ["getting-started"]:
        html = _html(site, page)
        assert ":math:" not in html, page
        assert "$$" not in html, page


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.parts and "_modules" not in p.parts)


def test_no_page_loads_a_remote_script_or_stylesheet(site):
    remote = re.compile(r'<(?:script|link|img|iframe)\b[^>]*(?:src|href)="(?:https?:)?//', re.I)
    offenders = {str(p.relative_to(site)): m.group(0) for p in _pages(site)
                 for m in [remote.search(p.read_text(encoding="utf-8"))] if m}
    assert not offenders, f"pages that load remote resources: {offenders}"
    assert len(_pages(site)) > 30


FIGURES = {"qpdn": 3, "complex_order": 2, "word2fun": 1, "cnm": 0}


def _figures(site: Path, html: str, page: str) -> list[str]:
    """The images of a page that exist: inline data or a file of the build."""
    return [src for src in re.findall(r'<img[^>]+src="([^"]+)"', html)
            if src.startswith("data:image/") or (site / page).parent.joinpath(src).resolve().is_file()]


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_notebook_pages_hold_their_outputs_and_figures(site, name):
    page = f"notebooks/{name}"
    html = _html(site, page)
    if name == "cnm" and not os.environ.get("QPNLP_DATA"):
        pytest.skip("cnm.ipynb trains on the benchmark data: it is executed only when QPNLP_DATA is set")
    assert html.count('class="cell_output') >= 4, f"{page}: the notebook was not executed"
    assert "notebook ran in" in html                                     # the last cell ran
    assert "Traceback" not in html and 'class="output error' not in html
    figures = _figures(site, html, page)
    assert len(figures) >= FIGURES[name], f"{page}: {len(figures)} figures, expected {FIGURES[name]}"
    assert "<p>\\</p>" not in html                                         # no stray line from the generator


def test_notebooks_are_in_the_navigation_with_previous_and_next_links(site):
    index = _html(site, "index")
    for name in FIGURES:
        assert f'href="notebooks/{name}.html"' in index
    html = _html(site, "notebooks/qpdn")
    assert 'class="prev-page"' in html and 'class="next-page"' in html
    assert 'href="cnm.html"' in html


BENCHMARKS = ["index", "speed", "qpdn", "qpdn-selection", "cnm", "complex-order", "word2fun-drift",
              "word2fun-notes", "word2fun-sotu", "cgrnn", "cgrnn-notes", "gpu"]


@pytest.mark.parametrize("page", BENCHMARKS)
def test_benchmark_results_are_pages_with_tables(site, page):
    html = _html(site, f"benchmarks/{page}")
    assert "<table" in html or "<pre" in html, page
    assert "```" not in html and "{include}" not in html


def test_the_main_results_are_tables_on_their_pages(site):
    assert "MPQA" in _html(site, "benchmarks/qpdn") and "<table" in _html(site, "benchmarks/qpdn")
    assert "WikiQA" in _html(site, "benchmarks/cnm")
    cgrnn = _html(site, "benchmarks/cgrnn")
    assert all((site / "benchmarks" / src).resolve().is_file() for src in re.findall(r'<img[^>]+src="([^"]+)"', cgrnn))
    assert 'href="benchmarks/index.html"' in _html(site, "index")


def test_code_wraps_instead_of_scrolling_sideways(site):
    css = (site / "_static" / "qpnlp.css").read_text(encoding="utf-8")
    assert "pre-wrap" in css
    assert "_static/qpnlp.css" in _html(site, "notebooks/qpdn")


def _documented_objects(site: Path) -> dict[int, list[str]]:
    """The Python objects with an entry in the site's inventory, by identity."""
    import importlib

    from sphinx.util.inventory import InventoryFile

    with open(site / "objects.inv", "rb") as f:
        inventory = InventoryFile.load(f, "", lambda base, uri: uri)
    found: dict[int, list[str]] = {}
    for role, entries in inventory.items():
        if not role.startswith("py:"):
            continue
        for name in entries:
            parts, obj = name.split("."), None
            for split in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:split]))
                except ImportError:
                    continue
                for part in parts[split:]:
                    obj = getattr(obj, part, None)
                break
            if obj is not None:
                found.setdefault(id(obj), []).append(name)
    return found


def test_every_name_in_a_public_all_has_an_api_entry(site):
    """Classes, functions and constants exported by a public module are in the reference under some name."""
    import importlib

    documented = _documented_objects(site)
    names = ["qpnlp.cli", *(m.name for m in pkgutil.walk_packages(qpnlp.__path__, "qpnlp."))]
    modules = [importlib.import_module(n) for n in names if not any(part.startswith("_") for part in n.split("."))]
    exported = [(m.__name__, n) for m in modules for n in getattr(m, "__all__", ())]
    assert len(exported) > 600
    missing = [f"{m}.{n}" for m, n in exported
               if not any(e.rsplit(".", 1)[-1] == n for e in documented.get(id(getattr(sys.modules[m], n)), []))]
    assert not missing, f"exported but not in docs/api/ (document it, or give a constant a #: comment): {missing}"


def test_references_through_a_package_link_to_the_entry(site):
    """``:func:`qpnlp.interpret.single_shot_accuracy``` links to the entry under ``qpnlp.interpret.optimal``."""
    assert 'href="../api/interpret.html#qpnlp.interpret.optimal.single_shot_accuracy"' in _html(
        site, "concepts/general-measurements")
    assert 'href="../api/models.html#qpnlp.models.base.Model"' in _html(site, "tutorials/add-a-model")
    unlinked = {}
    for page in _pages(site):
        for text in re.findall(r'(?<!">)<code class="xref py[^"]*"><span class="pre">(qpnlp\.[\w.]+)', page.read_text(
                encoding="utf-8")):
            if not any(part.startswith("_") for part in text.split(".")):
                unlinked.setdefault(str(page.relative_to(site)), []).append(text)
    assert not unlinked, f"references shown as plain text (no entry found): {unlinked}"


def test_bases_name_no_private_class(site):
    html = "".join(_html(site, f"api/{p}") for p in API_PAGES)
    bases = re.findall(r"Bases: (.*?)</p>", html)
    assert len(bases) > 50
    private = sorted({b for b in bases if re.search(r'<span class="pre">_|\._\w', b)})
    assert not private and not any(">Batched<" in b or ">PrecisionMixin<" in b for b in bases), private
