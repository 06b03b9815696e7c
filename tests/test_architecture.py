"""The layout's dependency rule: imports point down the layers, and no module imports itself back.

Every import counts, including those inside functions (a cycle hidden by a
local import is still a cycle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "qpnlp"

# subpackage -> the qpnlp subpackages it may import (see docs/architecture.md).
ALLOWED = {
    "hilbert": set(),
    "data": set(),
    "measurement": {"hilbert"},
    "testing": {"hilbert", "measurement"},
    "nn": {"hilbert", "measurement", "data"},
    "models": {"nn", "measurement", "hilbert", "data"},
    "word2fun": {"models", "nn", "hilbert", "data"},
    "evaluation": {"data", "hilbert"},
    "training": {"models", "word2fun", "nn", "measurement", "hilbert", "data", "evaluation"},
    "interpret": {"models", "word2fun", "nn", "measurement", "hilbert", "data", "evaluation"},
    "commands": {"training", "interpret", "evaluation", "models", "word2fun", "nn", "measurement", "hilbert",
                 "data"},
    "cli": {"commands"},
}
MAX_LINES = 600


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of the qpnlp modules imported anywhere in ``path``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("qpnlp")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.startswith("qpnlp"):
                found.add(name)
                found |= {f"{name}.{a.name}" for a in node.names}
    return found


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _layer(name: str) -> str | None:
    """The subpackage of ``name`` (None for the package itself and its attributes, e.g. ``qpnlp.__version__``)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else None


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_point_down_the_layout(name):
    layer = _layer(name)
    if layer is None:
        return
    allowed = ALLOWED[layer] | {layer}
    wrong = sorted(i for i in _imports(MODULES[name]) if _layer(i) not in allowed | {None})
    assert not wrong, f"{name} ({layer}) imports {wrong}; {layer} may import {sorted(ALLOWED[layer])}"


def test_no_import_cycles_between_modules():
    graph = {name: {i for i in _imports(path) if i in MODULES and i != name} for name, path in MODULES.items()}
    # A package's __init__ re-exporting its own modules is not a cycle of the code; drop those edges.
    graph = {n: {m for m in deps if not (n == m.rsplit(".", 1)[0] and MODULES[n].name == "__init__.py")}
             for n, deps in graph.items()}
    graph = {n: {m for m in deps if MODULES[m].name != "__init__.py"} for n, deps in graph.items()}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_longer_than_the_limit(name):
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines (limit {MAX_LINES}); split it by concept"
