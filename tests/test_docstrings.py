"""The API reference can be relied on: public names have a docstring that describes each parameter."""

import importlib
import dataclasses
import inspect
import pkgutil
import re

import pytest

SUBPACKAGES = ["hilbert", "measurement", "nn", "models", "word2fun", "interpret", "testing", "data", "evaluation",
               "training"]


def _public_modules() -> list:
    modules = []
    for name in SUBPACKAGES:
        package = importlib.import_module(f"qpnlp.{name}")
        modules.append(package)
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                modules.append(importlib.import_module(info.name))
    return modules


def _public_callables() -> dict[str, object]:
    found = {}
    for module in _public_modules():
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                found.setdefault(id(obj), (f"{module.__name__}.{name}", obj))
    return dict(found.values())


def test_every_public_function_and_class_has_a_summary_line():
    callables = _public_callables()
    assert len(callables) > 300
    bare = [name for name, obj in callables.items()
            if not (obj.__doc__ if inspect.isfunction(obj) else vars(obj).get("__doc__") or "").strip()]
    assert not bare, f"public names without a docstring: {bare}"


def _section_entries(doc: str, section: str = "Parameters") -> list[tuple[list[str], str, str]]:
    """The entries of a numpydoc section, ``Parameters`` by default: ``(names, type, description)`` each, the names
    of ``a, b : type`` being ``["a", "b"]``, the type what follows `` : `` and the description its indented lines
    joined by spaces."""
    header = r"\n[ \t]*[A-Z]\w*( \w+)*\n[ \t]*-{3,}\n"
    match = re.search(rf"\n([ \t]*){section}\n[ \t]*-{{3,}}\n(.*?)(?={header}|\Z)", doc, re.S)
    if not match:
        return []
    indent = match.group(1)
    entries = []
    for line in match.group(2).splitlines():
        if line.startswith(indent) and line[len(indent):len(indent) + 1] not in (" ", ""):
            names, _, kind = line[len(indent):].partition(" : ")
            entries.append(([n.strip().lstrip("*") for n in names.split(",")], kind.strip(), []))
        elif entries and line.strip():
            entries[-1][2].append(line.strip())
    return [(names, kind, " ".join(lines)) for names, kind, lines in entries]


def _documented_parameters(doc: str, section: str = "Parameters") -> set[str]:
    """The names of the entries of a numpydoc section, ``Parameters`` by default (``a, b : type`` names two)."""
    return {name for names, _, _ in _section_entries(doc, section) for name in names}


def _constructor_is_qpnlp(cls: type) -> bool:
    """Whether the ``__init__`` that builds ``cls`` is written in qpnlp (or generated for it, as a dataclass's is).

    An inherited ``torch.nn.Module.__init__(*args, **kwargs)`` or ``object.__init__`` takes no keyword of the class's
    own, so its ``**kwargs`` needs no entry (a named tuple's fields come from its ``__new__`` and still do).
    """
    init = next(vars(c)["__init__"] for c in cls.__mro__ if "__init__" in vars(c))
    return (getattr(init, "__module__", None) or "").startswith("qpnlp")


def _signature(obj) -> inspect.Signature:
    """The signature of a function, or of a class's constructor (empty for an exception's built-in one)."""
    try:
        return inspect.signature(obj)
    except ValueError:
        if inspect.isclass(obj) and not _constructor_is_qpnlp(obj):
            return inspect.Signature()
        raise


def _constructor_docs(cls: type) -> list[str]:
    """The docstrings that may document the constructor of ``cls``: its own and its ``__init__``'s, and those of the
    qpnlp base classes whose constructors take the same parameters (a subclass that changes behaviour only, such as
    ``CNMRealConfig`` of ``CNMConfig`` or ``CNMReal`` of ``CNM``, documents what differs and leaves the rest to its
    base)."""
    own = _signature(cls)
    same = [c for c in cls.__mro__ if c is cls or (c.__module__.startswith("qpnlp") and _signature(c) == own)]
    inits = [vars(c)["__init__"] for c in same if "__init__" in vars(c)]
    return [doc for doc in [vars(c).get("__doc__") for c in same] + [init.__doc__ for init in inits] if doc]


def _is_record(cls) -> bool:
    """Whether ``cls`` is a dataclass or a named tuple: a class whose constructor's parameters are its fields."""
    return dataclasses.is_dataclass(cls) or (inspect.isclass(cls) and issubclass(cls, tuple)
                                             and hasattr(cls, "_fields"))


def _own_field_docs(cls: type) -> set[str]:
    """The attributes of ``cls`` documented by a docstring below them or a ``#:`` comment above them, read as autodoc
    reads them (``sphinx.pycode``): each renders as an attribute entry of the class in the API reference."""
    from sphinx.pycode import ModuleAnalyzer

    return {name for scope, name in ModuleAnalyzer.for_module(cls.__module__).find_attr_docs()
            if scope == cls.__qualname__}
def _missing_parameters(obj) -> list[str]:
    """The parameters of a function, or of a class's constructor, that its docstrings do not document.

    A function documents its parameters in its ``Parameters`` section; a class in the ``Parameters`` section of its
    own docstring (numpydoc's place for constructor parameters) or of ``__init__``'s; a record (dataclass or named
    tuple) may list its fields under ``Attributes`` instead (numpydoc's convention for records) or document each by
    a docstring of its own (:func:`_own_field_docs`). ``*args`` needs no entry; ``**kwargs`` is documented as
    ``**kwargs``.
    """
    parameters = [p for p in _signature(obj).parameters.values()
                  if p.name not in ("self", "cls") and p.kind is not p.VAR_POSITIONAL]
    if inspect.isclass(obj) and not _constructor_is_qpnlp(obj):
        parameters = [p for p in parameters if p.kind is not p.VAR_KEYWORD]
    docs = _constructor_docs(obj) if inspect.isclass(obj) else [obj.__doc__ or ""]
    documented = set().union(*(_documented_parameters(d) for d in docs))
    if _is_record(obj):
        documented |= set().union(*(_documented_parameters(d, "Attributes") for d in docs)) | _own_field_docs(obj)
    return [p.name for p in parameters if p.name not in documented and not (
        p.kind is p.VAR_KEYWORD and any(f"**{p.name}" in d for d in docs))]


CALLABLES = _public_callables()


@pytest.mark.parametrize("path", sorted(CALLABLES))
def test_every_public_function_and_class_describes_every_parameter(path):
    missing = _missing_parameters(CALLABLES[path])
    assert not missing, f"{path}: parameters missing from its Parameters section: {missing}"


def test_every_record_field_is_documented_once():
    """``NaimarkDilation`` and ``SchmidtDecomposition`` described their fields in a Parameters section and in a
    docstring per field: the API reference showed each field twice. A record documents a field in one place, and a
    named tuple by the field's own docstring (autodoc's entry of an undocumented field reads "Alias for field number
    0", beside the class's Parameters)."""
    records = {path: cls for path, cls in CALLABLES.items() if _is_record(cls)}
    assert {"qpnlp.measurement.NaimarkDilation", "qpnlp.hilbert.SchmidtDecomposition"} <= records.keys()
    twice, aliases = {}, {}
    for path, cls in records.items():
        in_sections = set().union(*(_documented_parameters(d, s) for d in _constructor_docs(cls)
                                    for s in ("Parameters", "Attributes")))
        if both := sorted(in_sections & _own_field_docs(cls)):
            twice[path] = both
        if not dataclasses.is_dataclass(cls) and (bare := [f for f in cls._fields if f not in _own_field_docs(cls)]):
            aliases[path] = bare
    assert not twice, f"fields documented in a section and by their own docstring: {twice}"
    assert not aliases, f"named-tuple fields without a docstring of their own: {aliases}"
def test_the_parameter_reader_reads_numpydoc_entries():
    doc = """Summary.

    Parameters
    ----------
    rho, sigma : PureState
        States.
    base : float, optional
        Base.

    Attributes
    ----------
    value : float
        Value.

    Examples
    --------
    >>> x : 1
    """
    assert _documented_parameters(doc) == {"rho", "sigma", "base"}
    assert _documented_parameters(doc, "Attributes") == {"value"}
    assert _section_entries(doc) == [(["rho", "sigma"], "PureState", "States."), (["base"], "float, optional",
                                                                                   "Base.")]
    assert _documented_parameters(doc, "Returns") == set()
    assert _documented_parameters("Summary without sections.") == set()


def test_the_checker_reads_signatures_and_sections():
    from qpnlp.hilbert import SchmidtDecomposition
    from qpnlp.models import CNMConfig, CNMRealConfig
    from qpnlp.nn import ProdGate

    def function(a, b, *args, **kwargs):
        """Summary.

        Parameters
        ----------
        a : int
            A.
        """

    @dataclasses.dataclass
    class Record:
        """Summary.

        Attributes
        ----------
        x : int
            X.
        """

        x: int
        y: int = 0

    class NotARecord:
        """Summary.

        Attributes
        ----------
        x : int
            X.
        """

        def __init__(self, x):
            self.x = x

    assert _missing_parameters(function) == ["b", "kwargs"]          # *args needs no entry; **kwargs does
    assert _missing_parameters(Record) == ["y"]                       # a dataclass's fields may be Attributes
    assert _missing_parameters(NotARecord) == ["x"]                   # another class's constructor may not
    assert list(_signature(SchmidtDecomposition).parameters) == ["coefficients", "left", "right"]   # __new__
    assert list(_signature(ProdGate).parameters) == ["args", "kwargs"] and _missing_parameters(ProdGate) == []
    assert CNMConfig.__doc__ in _constructor_docs(CNMRealConfig)     # same fields: the base documents them


ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const):`(?:[^`<]*<)?[~!]?([^`<>]+)>?`")


def _private_role_targets(doc: str) -> list[str]:
    """The targets of the Sphinx roles in ``doc`` with a private component (``qpnlp.nn._f``, ``_g``,
    ``X.__call__``): the API reference has no entry for them, so they render as unlinked text."""
    return [t for t in ROLE.findall(doc) if any(part.startswith("_") for part in t.split("."))]


def _rendered_docstrings() -> dict[str, str]:
    """The docstrings the API reference renders (``automodule`` with ``members``): each public module's, the
    functions and classes of its ``__all__`` (those defined in it, without one) and their public methods and
    properties."""
    import qpnlp

    names = ["qpnlp", "qpnlp.cli", *(m.name for m in pkgutil.walk_packages(qpnlp.__path__, "qpnlp."))]
    docs = {}
    for module in [importlib.import_module(n) for n in names if not any(p.startswith("_") for p in n.split("."))]:
        docs[module.__name__] = module.__doc__ or ""
        exported = getattr(module, "__all__", None)
        if exported is None:
            exported = [n for n, o in vars(module).items() if getattr(o, "__module__", None) == module.__name__]
        for name in exported:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                docs[f"{module.__name__}.{name}"] = obj.__doc__ or ""
            elif inspect.isclass(obj):
                docs[f"{module.__name__}.{name}"] = vars(obj).get("__doc__") or ""
                for attr, member in vars(obj).items():
                    member = getattr(member, "__func__", member)   # staticmethod, classmethod
                    if not attr.startswith("_") and (inspect.isfunction(member) or inspect.isdatadescriptor(member)
                                                     or hasattr(member, "func")):   # property, cached_property
                        docs[f"{module.__name__}.{name}.{attr}"] = getattr(member, "__doc__", None) or ""
    return docs


def test_rendered_docstrings_link_no_private_name():
    """A role in a rendered docstring names a public object: ``:func:`qpnlp.nn.embedding._table_gradient``` has no
    entry to link to (write an internal helper as ````code````, or point to the public name that uses it)."""
    docs = _rendered_docstrings()
    assert len(docs) > 1000 and "qpnlp.hilbert.PureState.inner" in docs and "qpnlp.nn.embedding" in docs
    private = {name: targets for name, doc in docs.items() if (targets := _private_role_targets(doc))}
    assert not private, f"roles to private names in rendered docstrings: {private}"


def test_the_role_reader_finds_private_targets():
    doc = ("See :func:`qpnlp.nn.embedding._table_gradient`, :meth:`~qpnlp.hilbert.PureState.dag`, "
           ":class:`the cache <qpnlp._atomic._Lock>`, :func:`_helper`, ``qpnlp._x`` and :mod:`qpnlp.hilbert`.")
    assert _private_role_targets(doc) == ["qpnlp.nn.embedding._table_gradient", "qpnlp._atomic._Lock", "_helper"]
