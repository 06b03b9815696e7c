"""The API reference can be relied on: public names have a docstring, and the most used ones describe each parameter."""

import importlib
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


def _documented_parameters(doc: str) -> set[str]:
    """The names of the entries of a numpydoc ``Parameters`` section (``a, b : type`` names two)."""
    header = r"\n[ \t]*[A-Z]\w*( \w+)*\n[ \t]*-{3,}\n"
    match = re.search(rf"\n([ \t]*)Parameters\n[ \t]*-{{3,}}\n(.*?)(?={header}|\Z)", doc, re.S)
    if not match:
        return set()
    indent = match.group(1)
    names = set()
    for line in match.group(2).splitlines():
        if line.startswith(indent) and line[len(indent):len(indent) + 1] not in (" ", ""):
            names.update(n.strip().lstrip("*") for n in line.split(" : ")[0].split(","))
    return names


MOST_USED = [
    "qpnlp.hilbert." + n for n in
    ["fidelity", "trace_distance", "bures_distance", "bures_angle", "hellinger_affinity", "hellinger_distance",
     "hilbert_schmidt_distance", "sub_fidelity", "super_fidelity", "purity", "von_neumann_entropy", "linear_entropy",
     "renyi_entropy", "relative_entropy", "quantum_jensen_shannon_divergence", "random_pure_state", "random_unitary",
     "random_isometry", "PureState", "Ensemble"]
] + [
    "qpnlp.measurement." + n for n in
    ["born_probabilities", "born_probabilities_dense", "word_probabilities", "povm_probabilities",
     "povm_probabilities_dense", "random_povm"]
] + ["qpnlp.data.collate", "qpnlp.data.iterate_batches", "qpnlp.data.make_loader", "qpnlp.data.pad_batch",
     "qpnlp.training.fit", "qpnlp.word2fun.fit", "qpnlp.models.registered_models"
] + [
    "qpnlp.hilbert." + n for n in
    ["DensityMatrix", "SchmidtDecomposition", "schmidt_decomposition", "partial_transpose", "negativity",
     "log_negativity", "mutual_information", "conditional_entropy", "inner", "outer", "normalize", "dagger", "trace",
     "kron", "masked_softmax", "set_validation", "validation", "tolerance"]
] + [
    "qpnlp.testing." + n for n in
    ["dims", "batch_shapes", "complex_dtypes", "pure_states", "ensembles", "density_matrices", "unitaries",
     "projectors", "isometries", "povms", "assert_allclose", "assert_pure_state", "assert_density_matrix",
     "assert_probabilities", "assert_unitary", "assert_povm", "default_atol"]
] + [
    "qpnlp.interpret." + n for n in
    ["nearest_table", "measurement_vectors", "word_scores", "frequency_table", "period_distribution", "equal_eras",
     "era_label", "measurement_bound", "plot_density_matrix_parts"]
] + ["qpnlp.interpret.positional.sensitivity_scores"] + [
    "qpnlp.evaluation." + n for n in
    ["average_precision", "reciprocal_rank", "precision_at_1", "evaluate_bm25"]
] + [
    "qpnlp.evaluation.drift." + n for n in
    ["change_scores", "context_change_scores", "noise_corrected", "change_points", "auc", "evaluate_grid"]
] + ["qpnlp.evaluation.drift_baselines.temporal_referencing_grid", "qpnlp.evaluation.drift_baselines.procrustes_grid"]


@pytest.mark.parametrize("path", MOST_USED)
def test_the_most_used_functions_describe_every_parameter(path):
    module, _, name = path.rpartition(".")
    obj = getattr(importlib.import_module(module), name)
    parameters = [p.name for p in inspect.signature(obj).parameters.values()
                  if p.name not in ("self", "cls") and p.kind is not p.VAR_POSITIONAL]
    kwargs = [p.name for p in inspect.signature(obj).parameters.values() if p.kind is p.VAR_KEYWORD]
    documented = _documented_parameters(obj.__doc__ or "")
    missing = [p for p in parameters if p not in documented and not (p in kwargs and f"**{p}" in obj.__doc__)]
    assert not missing, f"{path}: parameters missing from its Parameters section: {missing}"


def test_the_parameter_reader_reads_numpydoc_entries():
    doc = """Summary.

    Parameters
    ----------
    rho, sigma : PureState
        States.
    base : float, optional
        Base.

    Examples
    --------
    >>> x : 1
    """
    assert _documented_parameters(doc) == {"rho", "sigma", "base"}
    assert _documented_parameters("Summary without sections.") == set()
