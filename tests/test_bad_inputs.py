"""Bad inputs at every public entry of the library: a clear error, never a silent result (issue 17).

One table of ``(callable, bad input, exception type, message fragment)`` for
:mod:`qpnlp.hilbert`, :mod:`qpnlp.measurement` and the embeddings and layers
of :mod:`qpnlp.nn` that take data, and a second table built from the model
registry, so that a model registered without validation fails here.
``test_every_public_entry_has_a_case`` fails when a public name of those
packages has no row.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

import qpnlp.hilbert as H
import qpnlp.measurement as M
import qpnlp.nn as N
from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, validation
from qpnlp.models import get_model_class, registered_models

C64 = torch.complex64
I2 = torch.eye(2, dtype=C64) / 2                                  # the maximally mixed qubit
NOT_PSD = torch.diag(torch.tensor([1.5, -0.5])).to(C64)            # Hermitian, trace one, eigenvalue -0.5
E0, E1 = PureState.basis_state(0, 2), PureState.basis_state(1, 2)
META = torch.zeros(2, 2, dtype=C64, device="meta")
BELL = torch.tensor([1, 0, 0, 1], dtype=C64) / 2 ** 0.5


def _states(norm: float = 1.0) -> torch.Tensor:
    return torch.eye(2, dtype=C64)[None].expand(3, 2, 2) * norm   # (3, n=2, d=2)


W = torch.full((3, 2), 0.5)
P2 = torch.eye(2, dtype=C64)                                       # two unit projectors (k=2, d=2)
TRINE = torch.tensor([[1, 0], [-0.5, 0.75 ** 0.5], [-0.5, -0.75 ** 0.5]], dtype=C64)
IDS = torch.tensor([[2, 3, 0]])


def _strict(fn):
    def run():
        with validation("strict"):
            return fn()
    return run


def case(covers: str, fn, error: type, match: str, name: str | None = None):
    return pytest.param(covers, fn, error, match, id=f"{covers}-{name or match[:24]}")


CASES = [
    # ---------------------------------------------------------------- hilbert: objects
    case("PureState", lambda: PureState(torch.ones(2)), TypeError, "complex64 or complex128"),
    case("PureState", lambda: PureState(torch.tensor([3.0, 4.0], dtype=C64)), ValueError, "got norm 5"),
    case("PureState", lambda: PureState(torch.tensor([float("nan"), 1], dtype=C64)), ValueError, "finite"),
    case("PureState", lambda: PureState(torch.zeros(3, 0, dtype=C64)), ValueError, "is empty"),
    case("PureState", lambda: PureState([1.0, 0.0]), TypeError, "must be a torch.Tensor"),
    case("DensityMatrix", lambda: DensityMatrix(torch.eye(2, dtype=C64) * 2.5), ValueError, "trace one; got trace 5"),
    case("DensityMatrix", lambda: DensityMatrix(torch.tensor([[0.5, 1], [0, 0.5]], dtype=C64)), ValueError, "Hermitian"),
    case("DensityMatrix", lambda: DensityMatrix(torch.ones(2, 3, dtype=C64)), ValueError, r"\(\.\.\., d, d\)"),
    case("DensityMatrix", _strict(lambda: DensityMatrix(NOT_PSD)), ValueError, "positive semi-definite", "strict"),
    case("Ensemble", lambda: Ensemble(torch.zeros(0, 3, dtype=C64)), ValueError, "empty ensemble"),
    case("Ensemble", lambda: Ensemble(_states(), torch.tensor([[1.5, -0.5]] * 3)), ValueError, "non-negative"),
    case("Ensemble", lambda: Ensemble(_states(), W.to(C64)), TypeError, "real floating"),
    case("Ensemble", lambda: Ensemble(_states(), W * 2), ValueError, "sum to one along the last dim; got sum 2"),
    case("Ensemble", lambda: Ensemble(_states(), None, torch.ones(3, 2)), TypeError, "bool"),
    case("Ensemble", lambda: Ensemble(_states(), None, torch.ones(3, 3, dtype=torch.bool)), ValueError,
         "mask must have shape"),
    case("Ensemble", lambda: Ensemble(_states(), None, torch.zeros(3, 2, dtype=torch.bool)), ValueError,
         "empty mixture"),
    case("Ensemble", lambda: Ensemble(_states(5.0)), ValueError, "unit norm"),
    case("PureState", lambda: PureState.from_polar(torch.rand(3), torch.rand(4)), ValueError,
         r"shapes do not broadcast: amplitude has shape \(3,\) and phase has shape \(4,\)", "from_polar"),
    case("PureState", lambda: PureState.from_polar([0.6, 0.8], [0.0, 0.0]), TypeError, "amplitude must be a torch"),
    case("PureState", lambda: E0.inner(E0.data), TypeError, "other must be a PureState"),
    case("PureState", lambda: PureState(_states()).overlap(PureState(_states()[:2])), ValueError,
         r"self has batch shape \(3, 2\) and other has batch shape \(2, 2\)", "overlap"),
    case("PureState", lambda: PureState(_states()).evolve(P2.expand(4, 2, 2)), ValueError,
         r"unitary has batch shape \(4,\)", "evolve"),
    case("DensityMatrix", lambda: DensityMatrix(I2.expand(3, 2, 2)).expectation(P2.expand(4, 2, 2)), ValueError,
         r"observable has batch shape \(4,\)", "expectation"),
    case("DensityMatrix", lambda: DensityMatrix(I2.expand(3, 2, 2)).evolve(P2.expand(4, 2, 2)), ValueError,
         r"unitary has batch shape \(4,\)", "evolve"),
    case("SememeBasis", lambda: H.SememeBasis(torch.ones(2, 2, dtype=C64)), ValueError, "orthonormal"),
    case("SememeBasis", lambda: H.SememeBasis(torch.eye(2, dtype=C64), ["a"]), ValueError, "1 labels"),
    # ---------------------------------------------------------------- hilbert: metrics and entropies
    case("fidelity", lambda: H.fidelity(E0, PureState.basis_state(0, 3)), ValueError, "dimension mismatch"),
    case("fidelity", lambda: H.fidelity(I2.expand(2, 2, 2), I2.expand(3, 2, 2)), ValueError, "do not broadcast"),
    case("fidelity", lambda: H.fidelity(I2, META), ValueError, "one device"),
    case("fidelity", lambda: H.fidelity("rho", I2), TypeError, "torch.Tensor"),
    case("fidelity", lambda: H.fidelity(NOT_PSD, I2), ValueError, "eigenvalue -0.5", "not-psd"),
    case("infidelity", lambda: H.infidelity(PureState.basis_state(0, 2), PureState.basis_state(0, 3)), ValueError,
         "dimension mismatch"),
    case("infidelity", lambda: H.infidelity(NOT_PSD, I2), ValueError, "positive semi-definite"),
    case("trace_distance", lambda: H.trace_distance(I2 * 5, I2), ValueError, "trace one; got trace 5"),
    case("bures_distance", lambda: H.bures_distance(NOT_PSD, I2), ValueError, "positive semi-definite"),
    case("bures_angle", lambda: H.bures_angle(NOT_PSD, I2), ValueError, "positive semi-definite"),
    case("hellinger_distance", lambda: H.hellinger_distance(NOT_PSD, I2), ValueError, "positive semi-definite"),
    case("hellinger_affinity", lambda: H.hellinger_affinity(NOT_PSD, I2), ValueError, "positive semi-definite"),
    case("hilbert_schmidt_distance", lambda: H.hilbert_schmidt_distance(I2 * 2, I2), ValueError, "trace one"),
    case("sub_fidelity", _strict(lambda: H.sub_fidelity(NOT_PSD, I2)), ValueError, "positive semi-definite"),
    case("super_fidelity", lambda: H.super_fidelity(E0, PureState.basis_state(0, 3)), ValueError, "dimension"),
    case("von_neumann_entropy", lambda: H.von_neumann_entropy(NOT_PSD), ValueError, "eigenvalue -0.5"),
    case("von_neumann_entropy", lambda: H.von_neumann_entropy(DensityMatrix(NOT_PSD)), ValueError,
         "positive semi-definite", "object"),
    case("renyi_entropy", lambda: H.renyi_entropy(I2, -1.0), ValueError, "alpha must be >= 0"),
    case("renyi_entropy", lambda: H.renyi_entropy(NOT_PSD, 2.0), ValueError, "positive semi-definite"),
    case("linear_entropy", lambda: H.linear_entropy(torch.ones(2, 2, dtype=C64)), ValueError, "trace one"),
    case("purity", lambda: H.purity("rho"), TypeError, "torch.Tensor"),
    case("purity", lambda: H.purity(Ensemble(torch.zeros(0, 2, dtype=C64))), ValueError, "empty ensemble"),
    case("relative_entropy", lambda: H.relative_entropy(I2, NOT_PSD), ValueError, "sigma must be positive"),
    case("quantum_jensen_shannon_divergence",
         lambda: H.quantum_jensen_shannon_divergence(E0, PureState.basis_state(0, 3)), ValueError, "dimension"),
    # ---------------------------------------------------------------- hilbert: composite systems
    case("tensor_product", lambda: H.tensor_product(E0), ValueError, "at least two"),
    case("tensor_product", lambda: H.tensor_product(I2, META), ValueError, "one device"),
    case("tensor_product", lambda: H.tensor_product(PureState(_states()), PureState(_states()[:2])), ValueError,
         r"systems\[1\] has batch shape \(2, 2\)", "pure-batches"),
    case("tensor_product", lambda: H.tensor_product(I2.expand(3, 2, 2), E0, I2.expand(4, 2, 2)), ValueError,
         r"systems\[2\] has batch shape \(4,\)", "dense-batches"),
    case("partial_trace", lambda: H.partial_trace(torch.eye(4, dtype=C64) / 4, (2, 3), keep=0), ValueError,
         "multiply to 6"),
    case("partial_trace", lambda: H.partial_trace(torch.eye(4, dtype=C64) / 4, (2, 2), keep=2), ValueError,
         "keep must name"),
    case("partial_transpose", lambda: H.partial_transpose(torch.eye(4, dtype=C64) / 4, (2, 2), 2), ValueError,
         "subsystem"),
    case("schmidt_decomposition", lambda: H.schmidt_decomposition(BELL * 2, (2, 2)), ValueError, "unit norm"),
    case("schmidt_decomposition", lambda: H.schmidt_decomposition(BELL, (3, 2)), ValueError, "multiply to 6"),
    case("mutual_information", lambda: H.mutual_information("rho", (2, 2)), TypeError, "rho must be"),
    case("conditional_entropy", lambda: H.conditional_entropy(torch.eye(4, dtype=C64) / 4, (2, 2), given=2),
         ValueError, "given"),
    case("negativity", lambda: H.negativity(torch.eye(4, dtype=C64) / 4, (2, 3)), ValueError, "multiply to 6"),
    case("log_negativity", lambda: H.log_negativity(torch.eye(4, dtype=C64) * 2, (2, 2)), ValueError, "trace one"),
    # ---------------------------------------------------------------- hilbert: random states, functional core
    case("random_pure_state", lambda: H.random_pure_state(0), ValueError, "dim must be >= 1"),
    case("random_density_matrix", lambda: H.random_density_matrix(3, rank=4), ValueError, "rank must be in"),
    case("random_density_matrix", lambda: H.random_density_matrix(3, measure="haar"), ValueError, "measure"),
    case("random_isometry", lambda: H.random_isometry(2, 3), ValueError, "rows >= cols"),
    case("random_unitary", lambda: H.random_unitary(0), ValueError, "dim must be >= 1"),
    case("inner", lambda: H.inner(torch.ones(2, dtype=C64), torch.ones(3, dtype=C64)), ValueError, "one dimension"),
    case("outer", lambda: H.outer(torch.ones(2, dtype=C64), torch.ones(3, dtype=C64)), ValueError, "one dimension"),
    case("normalize", lambda: H.normalize(torch.zeros(2, 3)), ValueError, "zero vector"),
    case("normalize", lambda: H.normalize(torch.ones(2, 3, dtype=torch.long)), TypeError,
         "vectors must be a real floating or complex tensor; got torch.int64"),          # torch's RuntimeError
    case("normalize", lambda: H.normalize(torch.tensor(2.0)), ValueError, r"vectors must have shape \(\.\.\., d\)"),
    case("dagger", lambda: H.dagger(torch.ones(3, dtype=C64)), ValueError, "matrices"),
    case("trace", lambda: H.trace(torch.ones(2, 3, dtype=C64)), ValueError, "square"),
    case("kron", lambda: H.kron(torch.ones(2), torch.ones(2, 2)), ValueError, "matrices"),
    case("promote", lambda: H.promote(torch.ones(2), torch.ones(2, device="meta")), ValueError, "one device"),
    case("masked_softmax", lambda: H.masked_softmax(torch.zeros(2, 3), torch.ones(2, 3)), TypeError, "bool"),
    case("masked_softmax", lambda: H.masked_softmax(torch.zeros(2, 3), torch.ones(2, 2, dtype=torch.bool)),
         ValueError, "shape of scores"),
    case("masked_softmax", lambda: H.masked_softmax(torch.zeros(2, 3), torch.tensor([[True] * 3, [False] * 3])),
         ValueError, "empty sentence"),
    case("masked_softmax", lambda: H.masked_softmax(torch.tensor([0.0, math.nan]), torch.tensor([True, True])),
         ValueError, "finite"),
    case("contract", lambda: H.contract("ij,jk,kl->il", torch.ones(2, 3), torch.ones(4, 5), torch.ones(5, 6)),
         ValueError, "does not match"),
    case("contract", lambda: H.contract("ij,jk->ik", torch.ones(2, 3, 4), torch.ones(3, 4)), ValueError,
         "subscript 'ij' does not contain the correct number of indices", "two-operands"),   # torch's RuntimeError
    case("contract", lambda: H.contract("ij,jk", torch.ones(2, 3)), ValueError, "equal to the number of operands",
         "one-operand"),
    case("contract", lambda: H.contract("ij,jk,kl->il", torch.ones(2, 3), [1], torch.ones(5, 6)), TypeError,
         r"operands\[1\] must be a torch.Tensor; got list"),                            # an AttributeError
    case("set_validation", lambda: H.set_validation("loud"), ValueError, "validation mode"),
    case("validation", lambda: H.validation("loud").__enter__(), ValueError, "validation mode"),
    case("tolerance", lambda: H.tolerance(torch.int64), TypeError, "floating or complex"),
    case("to_qutip", lambda: H.to_qutip("rho"), TypeError, "PureState"),
    case("from_qutip", lambda: H.from_qutip("rho"), TypeError, "qutip"),
    # ---------------------------------------------------------------- measurement: the Born rule
    case("born_probabilities", lambda: M.born_probabilities(_states(5.0), W, P2), ValueError, "got norm 5"),
    case("born_probabilities", lambda: M.born_probabilities(_states(), torch.tensor([[1.5, -0.5]] * 3), P2),
         ValueError, "non-negative"),
    case("born_probabilities", lambda: M.born_probabilities(_states(), W.to(C64), P2), TypeError, "real floating"),
    case("born_probabilities", lambda: M.born_probabilities(_states(), W, P2 * 2), ValueError, "unit norm",
         "projectors"),
    case("born_probabilities", lambda: M.born_probabilities(_states(), W * 2, P2), ValueError, "sum to one"),
    case("born_probabilities", lambda: M.born_probabilities(_states(), W, torch.ones(2, 3, dtype=C64)),
         ValueError, "dimension mismatch"),
    case("born_probabilities", lambda: M.born_probabilities(_states() * math.nan, W, P2), ValueError, "norm nan"),
    case("born_probabilities", lambda: M.born_probabilities(_states(), W, P2.to("meta")), ValueError, "one device"),
    case("born_probabilities", lambda: M.born_probabilities(_states(), W, torch.ones(2, 2, 2, dtype=C64)),
         ValueError, "orthonormal rows", "rank-2"),
    case("born_probabilities", lambda: M.born_probabilities(_states()[:, :0], W[:, :0], P2), ValueError,
         r"no member states \(n = 0", "empty-mixture"),
    case("born_probabilities_dense", lambda: M.born_probabilities_dense(I2 * 10, P2), ValueError,
         "trace one; got trace 10"),
    case("born_probabilities_dense", lambda: M.born_probabilities_dense(I2, P2 * 3), ValueError, "unit norm"),
    case("word_probabilities", lambda: M.word_probabilities(torch.tensor([3.0, 4.0], dtype=C64), P2), ValueError,
         "got norm 5"),
    case("word_probabilities", lambda: M.word_probabilities(torch.ones(2, dtype=torch.long), P2), TypeError,
         "complex"),
    case("povm_probabilities", lambda: M.povm_probabilities(_states(), W, TRINE[:, None]), ValueError,
         "sum to the identity"),
    case("povm_probabilities", lambda: M.povm_probabilities(_states(3.0), W, P2[:, None]), ValueError, "unit norm"),
    case("povm_probabilities", lambda: M.povm_probabilities(_states()[:, :0], W[:, :0], P2[:, None]), ValueError,
         r"no member states \(n = 0", "empty-mixture"),
    case("povm_probabilities_dense", lambda: M.povm_probabilities_dense(I2 * 4, P2[:, None]), ValueError,
         "trace one"),
    case("Projector", lambda: M.Projector(torch.ones(1, 2, 2, dtype=C64)), ValueError, "orthonormal rows"),
    case("Projector", lambda: M.Projector.from_state(torch.tensor([3.0, 4.0], dtype=C64)), TypeError,
         "from_state takes a PureState"),
    case("ProjectiveMeasurement", lambda: M.ProjectiveMeasurement(3, 2, complete=True), ValueError,
         "num_outcomes == dim"),
    case("ProjectiveMeasurement", lambda: M.ProjectiveMeasurement(3, dtype=torch.float32), TypeError, "complex64"),
    case("ProjectiveMeasurement", lambda: M.ProjectiveMeasurement(2)(_states(5.0), W), ValueError, "got norm 5",
         "forward"),
    case("ProjectiveMeasurement", lambda: M.ProjectiveMeasurement(2)(_states(), W, torch.ones(3, 2)), TypeError,
         "bool", "mask"),
    case("ProjectiveMeasurement", lambda: M.ProjectiveMeasurement(2)(_states()[:, :0], W[:, :0]), ValueError,
         r"no member states \(n = 0", "empty-mixture"),
    case("ProjectiveMeasurement", lambda: M.ProjectiveMeasurement(2).post_measurement_state(E0, 1.0), TypeError,
         "outcome must be an integer; got float"),
    case("lueders_update", lambda: M.lueders_update(E0, M.Projector.from_state(E1)), ValueError,
         "probability 0"),
    case("lueders_update", lambda: M.lueders_update(PureState(_states()[:, 0]), M.Projector(P2[:, None])), ValueError,
         r"batch shapes do not broadcast: system has batch shape \(3,\) and Projector has batch shape \(2,\)"),
    case("POVM", lambda: M.POVM(TRINE[:, None]), ValueError, "sum to the identity"),
    case("POVM", lambda: M.POVM.from_frame(TRINE[:1]), ValueError, "span"),
    case("random_povm", lambda: M.random_povm(4, 2, rank=1), ValueError, r"num_outcomes \* rank >= dim"),
    case("kraus_update", lambda: M.kraus_update(E0, torch.ones(2, 3, dtype=C64)), ValueError, "dimension"),
    case("kraus_update", lambda: M.kraus_update(E0, torch.ones(2, 2)), TypeError, "complex"),
    case("kraus_update", lambda: M.kraus_update(E0, torch.full((2, 2), math.nan, dtype=C64)), ValueError,
         "operator must be finite"),
    case("kraus_update", lambda: M.kraus_update(PureState(_states()), P2.expand(4, 2, 2)), ValueError,
         r"operator has batch shape \(4,\)", "batches"),
    case("naimark_dilation", lambda: M.naimark_dilation(P2), TypeError, "takes a POVM"),
    case("POVMMeasurement", lambda: M.POVMMeasurement(4, 2, rank=1), ValueError, "num_outcomes \\* rank"),
    case("POVMMeasurement", lambda: M.POVMMeasurement(2, 3, init="random"), ValueError, "init must be"),
    case("POVMMeasurement", lambda: M.POVMMeasurement(2, 3)(_states(2.0), W), ValueError, "unit norm", "forward"),
    case("POVMMeasurement", lambda: M.POVMMeasurement(2, 3)(_states()[:, :0], W[:, :0]), ValueError,
         r"no member states \(n = 0", "empty-mixture"),
    # ---------------------------------------------------------------- nn: embeddings and layers that take data
    case("ComplexWordEmbedding", lambda: N.ComplexWordEmbedding(5, 2)(torch.tensor([[2, 5]])), ValueError,
         r"\[0, 5\) \(the vocabulary has 5 words\); got max id 5"),
    case("ComplexWordEmbedding", lambda: N.ComplexWordEmbedding(5, 2)(torch.tensor([[-1, 2]])), ValueError,
         "min id -1"),
    case("ComplexWordEmbedding", lambda: N.ComplexWordEmbedding(5, 2)(torch.tensor([[2.0]])), TypeError,
         "LongTensor"),
    case("ComplexWordEmbedding", lambda: N.ComplexWordEmbedding(5, 2, pretrained=torch.full((5, 2), math.nan)),
         ValueError, "NaN"),
    case("WordWeighting", lambda: N.WordWeighting(5)(IDS, torch.ones(1, 2, dtype=torch.bool), torch.ones(1, 3)),
         ValueError, "shape of ids"),
    case("WordWeighting", lambda: N.WordWeighting(5, "idf", idf=torch.ones(5))(IDS, IDS < 0, torch.ones(1, 3)),
         ValueError, "no word"),
    case("WordWeighting", lambda: N.WordWeighting(5, "idf", idf=torch.ones(4)), ValueError, "idf of shape"),
    case("ComplexOrderEmbedding", lambda: N.ComplexOrderEmbedding(3, 2)(IDS, IDS != 0), ValueError, "max id 3"),
    case("ComplexOrderEmbedding", lambda: N.ComplexOrderEmbedding(5, 2)(IDS, IDS), ValueError, "bool"),
    case("ComplexOrderEmbedding",
         lambda: N.ComplexOrderEmbedding(5, 2)(IDS, IDS != 0, torch.tensor([0.0, math.nan, 1.0])), ValueError,
         "NaN"),
    case("RealPositionalEmbedding", lambda: N.RealPositionalEmbedding(5, 2, position="pe", max_len=1)(IDS, IDS != 0),
         ValueError, "max_len"),
    case("RealPositionalEmbedding", lambda: N.RealPositionalEmbedding(3, 2)(IDS, IDS != 0), ValueError, "max id 3"),
    case("make_embedding", lambda: N.make_embedding("rope", 5, 2), ValueError, "unknown embedding kind"),
    case("CGRNN", lambda: N.CGRNN(2, 3)(torch.tensor([[[0.0, math.nan]]])), ValueError,
         r"x must be finite; got nan at batch index \(0, 0\)"),
    case("CGRNN", lambda: N.CGRNN(2, 3)(torch.ones(1, 2, 2), torch.ones(1, 2)), ValueError, "bool"),
    case("CGRNNCell", lambda: N.CGRNNCell(2, 3)(torch.tensor([[math.inf, 0.0]])), ValueError, "finite"),
    case("CGRNNCell", lambda: N.CGRNNCell(2, 3)(torch.ones(1, 5)), ValueError,
         r"x must have shape \(\.\.\., 2\); got \(1, 5\)"),                                 # a matmul RuntimeError
    case("ComplexLSTMCell", lambda: N.ComplexLSTMCell(3, 4)(torch.ones(3, dtype=C64)), ValueError,
         r"x must have shape \(B, 3\); got \(3,\)"),                           # gave h of shape (3, 4), silently
    case("URNNCell", lambda: N.URNNCell(3, 4)(torch.ones(3, dtype=C64)), ValueError,
         r"x must have shape \(B, 3\); got \(3,\)", "one-dim"),
    case("URNNCell", lambda: N.URNNCell(3, 4)(torch.ones(2, 2, 3, dtype=C64)), ValueError,
         r"x must have shape \(B, 3\); got \(2, 2, 3\)", "three-dim"),
    case("unit_rows", lambda: N.unit_rows(torch.tensor(2.0)), ValueError, r"z must have shape \(\.\.\., D\)"),
    case("as_complex_input", lambda: N.as_complex_input([1.0], C64, "h"), TypeError,
         "h must be a torch.Tensor; got list"),                                          # an AttributeError
    case("sinusoidal_frequencies", lambda: N.sinusoidal_frequencies(4, base=0.0), ValueError,
         "base must be a positive finite number; got 0.0"),                              # inf frequencies
    case("sinusoidal_frequencies", lambda: N.sinusoidal_frequencies(4, base=-1.0), ValueError,
         "base must be a positive finite number; got -1.0", "negative"),                 # NaN frequencies
    case("sinusoidal_position_encoding", lambda: N.sinusoidal_position_encoding(torch.arange(3.0), 4, base=math.nan),
         ValueError, "base must be a positive finite number; got nan"),
    case("default_positions", lambda: N.default_positions(IDS, torch.ones(1, 4, dtype=torch.bool)), ValueError,
         r"mask must have the shape of ids \(1, 3\); got \(1, 4\)"),                  # positions of the mask, silently
    case("ComplexRNN", lambda: N.ComplexRNN(2, 3)(torch.full((1, 2, 2), math.nan, dtype=C64)), ValueError, "finite"),
    case("hirose", lambda: N.hirose(torch.ones(2, dtype=C64), 0.0), ValueError, "m must be non-zero"),
    case("ModReLU", lambda: N.ModReLU(4)(torch.ones(2, 3, dtype=C64)), ValueError, r"last dimension 4"),
    case("ModReLU", lambda: N.ModReLU(4)(torch.ones(2, 1, dtype=C64)), ValueError, r"got shape \(2, 1\)",
         "broadcasting"),
    case("PartLayerNorm", lambda: N.PartLayerNorm(4)(torch.ones(2, 3, dtype=C64)), ValueError, "last dimension 4"),
    case("ComplexLSTMCell", lambda: N.ComplexLSTMCell(3, 4)(torch.ones(2, 3, dtype=C64), torch.zeros(2, 4, dtype=C64)),
         TypeError, r"pair \(h, c\)"),
    case("ComplexLSTMCell",
         lambda: N.ComplexLSTMCell(3, 4)(torch.ones(2, 3, dtype=C64), (torch.zeros(3, 4, dtype=C64),) * 2),
         ValueError, r"h must be a tensor of shape \(2, 4\)"),
    case("URNNCell", lambda: N.URNNCell(3, 4)(torch.ones(2, 3, dtype=C64), torch.zeros(4, dtype=C64)),
         ValueError, r"h must be a tensor of shape \(2, 4\)"),
    case("local_mixture", lambda: N.local_mixture(torch.ones(1, 3, 2), torch.zeros(1, 3), torch.ones(1, 3)),
         TypeError, "bool"),
    case("local_mixture", lambda: N.local_mixture(torch.ones(1, 3, 2), torch.zeros(1, 3),
                                                  torch.ones(1, 3, dtype=torch.bool), padding="left"),
         ValueError, "padding must be one of"),
    case("window_mask", lambda: N.window_mask(torch.ones(1, 3, dtype=torch.bool), padding="left"), ValueError,
         "padding must be one of"),
]

# Public names with no data to validate (constants, result containers) or no arguments.
NOT_ENTRIES = {"SchmidtDecomposition", "NaimarkDilation", "get_validation"}
NN_ENTRIES = {"ComplexWordEmbedding", "WordWeighting", "ComplexOrderEmbedding", "RealPositionalEmbedding",
              "make_embedding", "CGRNN", "CGRNNCell", "ComplexRNN", "local_mixture", "window_mask"}


@pytest.mark.parametrize("covers, fn, error, match", CASES)
def test_bad_input_gives_a_clear_error(covers, fn, error, match):
    with pytest.raises(error, match=match):
        fn()


def test_every_public_entry_has_a_case():
    public = {n for n in H.__all__ + M.__all__ if callable(getattr(H, n, None) or getattr(M, n, None))}
    covered = {p.values[0] for p in CASES}
    missing = sorted(public - NOT_ENTRIES - covered) + sorted(NN_ENTRIES - covered)
    assert not missing, f"add a bad-input case for {missing}"


# ------------------------------------------------------------------------------------------ the model registry
SIZES = dict(num_words=12, num_classes=3, dim=4, num_measurements=3, hidden=3, filters=2, kernel_sizes=[2],
             windows=[1, 2], vocab_size=12, heads=2, ffn_hidden=3)


def _model(name: str):
    klass = get_model_class(name)
    fields = {f.name for f in dataclasses.fields(klass.config_class)}
    config = klass.config_class.from_dict({k: v for k, v in SIZES.items() if k in fields})
    return klass(config, generator=torch.Generator().manual_seed(0)).eval()


def _call(model, ids, mask, a_ids=None, a_mask=None):
    if model.task == "matching":
        return model(ids, mask, ids if a_ids is None else a_ids, mask if a_mask is None else a_mask)
    return model(ids, mask)


GOOD = torch.tensor([[2, 3, 4, 0], [5, 6, 0, 0]])
BATCH_CASES = {                     # name: ((ids, mask) -> call arguments, exception, message fragment)
    "id-beyond-vocabulary": (lambda: (GOOD.clamp(max=12) + (GOOD == 4) * 8, GOOD != 0), ValueError,
                             r"\[0, 12\) \(the vocabulary has 12 words\); got max id 12"),
    "negative-id": (lambda: (GOOD - (GOOD == 5) * 6, GOOD != 0), ValueError, "min id -1"),
    "mask-true-at-padding": (lambda: (GOOD, torch.ones(2, 4, dtype=torch.bool)), ValueError, "padding id 0"),
    "all-padding-row": (lambda: (GOOD * torch.tensor([[1], [0]]), GOOD * torch.tensor([[1], [0]]) != 0), ValueError,
                        "empty sentence"),
    "float-mask": (lambda: (GOOD, (GOOD != 0).float()), ValueError, "mask must be a bool"),
    "mask-shape": (lambda: (GOOD, (GOOD != 0)[:, :3]), ValueError, r"shape \(2, 4\)"),
    "float-ids": (lambda: (GOOD.float(), GOOD != 0), ValueError, "LongTensor"),
    "one-dim-ids": (lambda: (GOOD[0], GOOD[0] != 0), ValueError, r"shape \(B, L\)"),
    "empty-batch": (lambda: (GOOD[:0], GOOD[:0] != 0), ValueError, "empty"),
    "mask-on-other-device": (lambda: (GOOD, (GOOD != 0).to("meta")), ValueError, "one device"),
}
BATCH_MODELS = [n for n in registered_models() if get_model_class(n).task in ("classification", "matching")]


@pytest.mark.parametrize("bad", sorted(BATCH_CASES))
@pytest.mark.parametrize("name", BATCH_MODELS)
def test_every_registered_model_refuses_a_bad_batch(name, bad):
    model = _model(name)
    make, error, match = BATCH_CASES[bad]
    with pytest.raises(error, match=match):
        _call(model, *make())


@pytest.mark.parametrize("name", BATCH_MODELS)
def test_every_registered_model_refuses_a_batch_on_another_device(name):
    model = _model(name).to("meta")
    with pytest.raises(ValueError, match="the model is on meta"):
        _call(model, GOOD, GOOD != 0)


@pytest.mark.parametrize("name", registered_models("matching"))
def test_matching_models_refuse_one_answer_for_two_questions(name):
    model = _model(name)
    with pytest.raises(ValueError, match="q_ids has batch size 2 but a_ids has 1"):
        model(GOOD, GOOD != 0, GOOD[:1], GOOD[:1] != 0)


@pytest.mark.parametrize("name", registered_models("temporal"))
def test_temporal_models_refuse_non_finite_times(name):
    model = _model(name)
    with pytest.raises(ValueError, match="finite"):
        model.vectors(torch.tensor([1]), torch.tensor([math.nan]))


def _wrong_values(field: dataclasses.Field):
    base = str(field.type).split("|")[0].strip()
    return {"int": [True, 2.5, "3"], "float": ["0.5", math.nan], "bool": [1, "yes"], "str": [3, None]}.get(base, [])


def _config_cases():
    out = []
    for name in registered_models():
        klass = get_model_class(name).config_class
        for field in dataclasses.fields(klass):
            for value in _wrong_values(field):
                if value is None and "None" in str(field.type):
                    continue
                out.append(pytest.param(name, field.name, value, id=f"{name}-{field.name}-{value!r}"))
    return out


@pytest.mark.parametrize("name, field, value", _config_cases())
def test_config_values_of_the_wrong_type_are_refused_with_the_field_named(name, field, value):
    klass = get_model_class(name).config_class
    values = {k: v for k, v in SIZES.items() if k in {f.name for f in dataclasses.fields(klass)}}
    with pytest.raises(ValueError, match=rf"{klass.__name__}\.{field} must be"):
        klass(**{**values, field: value})
    with pytest.raises(ValueError, match=rf"{klass.__name__}\.{field} must be"):
        klass.from_dict({**values, field: value})
