r"""Optimal measurements: how well could *any* measurement tell the classes apart?

A classifier that measures a sentence state :math:`\rho_x` once and answers
the outcome (outcome c means class c) succeeds with probability
:math:`\operatorname{Tr}(\rho_x E_{y})`; averaged over a data set with class
priors :math:`p_c` this is :math:`\sum_c p_c \operatorname{Tr}(\bar\rho_c E_c)`,
which depends on the sentences only through the class averages
:math:`\bar\rho_c` (:func:`class_averages`). Its maximum over all POVMs is

* for two classes, the Helstrom bound (Helstrom, *Quantum Detection and
  Estimation Theory*, 1976):

  .. math:: P^\ast = \tfrac12\big(1 + \|p_0\bar\rho_0 - p_1\bar\rho_1\|_1\big),

  reached by the projector onto the positive eigenspace of
  :math:`p_0\bar\rho_0 - p_1\bar\rho_1` (:func:`helstrom`);
* for more classes, no closed form; the pretty-good measurement
  :math:`E_c = \rho^{-1/2} p_c\bar\rho_c\,\rho^{-1/2}`, :math:`\rho = \sum_c p_c\bar\rho_c`
  (Hausladen & Wootters 1994) gets :math:`P_{\mathrm{pgm}}` with
  :math:`P^{\ast 2} \le P_{\mathrm{pgm}} \le P^\ast` (Barnum & Knill 2002), so
  :math:`[P_{\mathrm{pgm}}, \sqrt{P_{\mathrm{pgm}}}]` brackets the optimum
  (:func:`pretty_good_measurement`).

:func:`measurement_bound` does both from labelled sentences, and
:func:`single_shot_accuracy` gives the same figure for a *learned*
measurement (each outcome read as its best class), so the two sit side by
side: a learned measurement far below the bound limits the model; a bound
near chance means the sentence states themselves do not separate the
classes.

What this does *not* bound: QPDN reads the exact probability vector of a
sentence (the limit of infinitely many copies) and a linear layer with an
argmax on top, which is not linear in :math:`\rho_x`, so its accuracy can
exceed :math:`P^\ast`. The bound is for decisions linear in the state: one
measurement, one outcome, one answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, promote, tolerance
from qpnlp.hilbert._linalg import decompose
from qpnlp.hilbert._operands import as_density_tensor
from qpnlp.hilbert._validation import check_dimension, check_same_device
from qpnlp.measurement import POVM, Projector, born_probabilities_dense, povm_probabilities_dense

__all__ = ["OptimalMeasurement", "helstrom", "pretty_good_measurement", "class_averages", "measurement_bound",
           "single_shot_accuracy"]


@dataclass(frozen=True, eq=False)        # == is identity: the generated one compared tensors and raised
class OptimalMeasurement:
    """The best single-shot discrimination of class states: the accuracy and the measurement reaching it.

    Attributes
    ----------
    method : str
        ``"helstrom"`` (exact optimum) or ``"pretty-good"`` (a lower bound of the optimum).
    success_probability : torch.Tensor
        Real ``(...)``: the accuracy of ``measurement`` (the optimum for Helstrom).
    upper_bound : torch.Tensor
        Real ``(...)``: no measurement does better (``sqrt`` of the pretty-good success, or the Helstrom value).
    measurement : POVM
        C outcomes, outcome c decides class c.
    priors : torch.Tensor
        Real ``(..., C)`` class priors.
    class_states : DensityMatrix
        Batch ``(..., C)``: the class-average density matrices.
    """

    method: str
    success_probability: torch.Tensor
    upper_bound: torch.Tensor
    measurement: POVM
    priors: torch.Tensor
    class_states: DensityMatrix

    def __str__(self) -> str:
        p, u = self.success_probability.reshape(-1), self.upper_bound.reshape(-1)
        bound = f"{float(p[0]):.4f}" if self.method == "helstrom" else f"[{float(p[0]):.4f}, {float(u[0]):.4f}]"
        return (f"optimal single-shot accuracy ({self.method}, {self.priors.shape[-1]} classes, "
                f"d={self.class_states.dim}): {bound}")


def _dense(obj, name: str) -> torch.Tensor:
    """Dense ``(..., d, d)`` of a state object, or of a tensor checked as a density matrix whose errors name the
    caller's argument ``name``, not ``rho`` (else TypeError)."""
    if isinstance(obj, (DensityMatrix, PureState, Ensemble, torch.Tensor)):
        return as_density_tensor(obj, name)
    return _type_error(name, obj)


def _type_error(name: str, obj):
    raise TypeError(f"{name} must be a PureState, Ensemble, DensityMatrix or complex (..., d, d) tensor; "
                    f"got {type(obj).__name__}")


def _priors(priors, num: int, like: torch.Tensor) -> torch.Tensor:
    if isinstance(priors, torch.Tensor):        # never copied to the states' device silently
        check_same_device(("the states", like), ("priors", priors))
    real = like.real.dtype
    p = torch.full((num,), 1.0 / num, dtype=real, device=like.device) if priors is None \
        else torch.as_tensor(priors, dtype=real, device=like.device)
    valid = p.dim() > 0 and p.shape[-1] == num and bool((p >= 0).all())       # comparisons so that NaN fails
    if not (valid and bool(((p.sum(-1) - 1).abs() <= tolerance(real, num)).all())):
        raise ValueError(f"priors must be {num} non-negative numbers summing to one; got {p.tolist()}")
    return p


def helstrom(rho0, rho1, prior0: float | torch.Tensor = 0.5) -> OptimalMeasurement:
    r"""Helstrom measurement and bound for two states with priors :math:`(p_0, 1 - p_0)`.

    :math:`P^\ast = \tfrac12(1 + \|p_0\rho_0 - p_1\rho_1\|_1)`; the measurement
    is :math:`E_0 = \Pi_{>0}(p_0\rho_0 - p_1\rho_1)`, :math:`E_1 = I - E_0`.

    Parameters
    ----------
    rho0, rho1 : PureState, Ensemble, DensityMatrix or torch.Tensor
        The two states, dimension d; batch dims broadcast.
    prior0 : float or torch.Tensor
        :math:`p_0` (a tensor broadcasts with the batch dims).

    Examples
    --------
    >>> a, b = PureState.basis_state(0, 2), PureState.from_real(torch.tensor([0.6, 0.8]))
    >>> result = helstrom(a, b, 0.5)           # 1/2 (1 + sqrt(1 - |<a|b>|^2)) = 0.9
    >>> round(float(result.success_probability), 6)
    0.9
    """
    r0, r1 = promote(_dense(rho0, "rho0"), _dense(rho1, "rho1"))
    if r0.shape[-1] != r1.shape[-1]:
        raise ValueError(f"dimension mismatch: rho0 has d={r0.shape[-1]} but rho1 has d={r1.shape[-1]}")
    if isinstance(prior0, torch.Tensor):        # a 0-dim one may be a CPU scalar, as in torch's operators
        check_same_device(("rho0", r0), ("prior0", prior0))
    p0 = torch.as_tensor(prior0, dtype=r0.real.dtype, device=r0.device)
    if not bool(((p0 >= 0) & (p0 <= 1)).all()):                       # NaN fails too
        raise ValueError(f"prior0 must be in [0, 1]; got {p0.tolist()}")
    gamma = p0[..., None, None] * r0 - (1 - p0)[..., None, None] * r1
    lam, u = decompose(torch.linalg.eigh, gamma)
    success = 0.5 * (1 + lam.abs().sum(-1))
    rows = u.mT                                                     # row s: eigenvector s
    positive = (lam > 0).unsqueeze(-1).to(rows.dtype)
    vectors = torch.stack([rows * positive, rows * (1 - positive)], dim=-3)
    priors = torch.stack(torch.broadcast_tensors(p0, 1 - p0), -1)
    states = torch.stack(torch.broadcast_tensors(r0, r1), -3)
    return OptimalMeasurement("helstrom", success, success, POVM(vectors, validate=False), priors,
                              DensityMatrix._trusted(data=states))


def pretty_good_measurement(class_states, priors=None) -> OptimalMeasurement:
    r"""Pretty-good measurement :math:`E_c = \rho^{-1/2} p_c \rho_c \rho^{-1/2}` for C states and its success probability.

    :math:`\rho = \sum_c p_c\rho_c`, inverted on its support (the kernel,
    where no class has weight, is added to outcome 0 so the effects sum to
    I). Success :math:`P = \sum_c p_c\operatorname{Tr}(\rho_c E_c)`, with
    :math:`P \le P^\ast \le \sqrt P` (Barnum & Knill, J. Math. Phys. 43,
    2097 (2002)); optimal for symmetric pure states.

    Parameters
    ----------
    class_states : DensityMatrix or torch.Tensor
        Batch ``(..., C)`` / tensor ``(..., C, d, d)``.
    priors : torch.Tensor or sequence of float, optional
        ``(C,)`` or ``(..., C)``; default uniform.

    Examples
    --------
    >>> trine = torch.tensor([[1, 0], [-0.5, 0.75 ** 0.5], [-0.5, -0.75 ** 0.5]], dtype=torch.complex128)
    >>> result = pretty_good_measurement(PureState(trine).proj())
    >>> round(float(result.success_probability), 6)      # optimal for the trine: 2/3
    0.666667
    """
    rho_c = _dense(class_states, "class_states")
    if rho_c.dim() < 3 or rho_c.shape[-3] < 2:
        raise ValueError(f"class_states must hold C >= 2 states (..., C, d, d); got shape {tuple(rho_c.shape)}")
    num, d = rho_c.shape[-3], rho_c.shape[-1]
    p_in = _priors(priors, num, rho_c)
    # rho^{-1/2} scales rounding errors by 1/sqrt(mu_min): in complex64 the effects of a valid input summed to I
    # only within 3e-4, so the measurement is built in complex128 and returned in the input's precision.
    support_tol = tolerance(rho_c.dtype, d)
    wide, p = rho_c.to(torch.complex128), p_in.to(torch.float64)
    average = (p.to(wide.dtype)[..., None, None] * wide).sum(-3)
    mu, w = decompose(torch.linalg.eigh, average)
    support = mu > support_tol * mu.amax(-1, keepdim=True)
    inv_sqrt = torch.where(support, torch.where(support, mu, torch.ones_like(mu)).rsqrt(), torch.zeros_like(mu))
    root_inv = (w * inv_sqrt.to(w.dtype).unsqueeze(-2)) @ w.mH                           # rho^{-1/2}
    lam, u = decompose(torch.linalg.eigh, wide)
    factors = u * lam.clamp_min(0).sqrt().to(u.dtype).unsqueeze(-2)                    # rho_c = A A^dagger
    x = root_inv.unsqueeze(-3) @ factors * p.sqrt().to(u.dtype)[..., None, None]       # E_c = X X^dagger
    kernel = (w * (~support).to(w.dtype).unsqueeze(-2)).mT                              # rows: kernel vectors
    extra = torch.zeros_like(x.mT)
    extra[..., 0, :, :] = kernel
    vectors = torch.cat([x.mT, extra], dim=-2)                                          # (..., C, 2d, d)
    # Tr(rho_c E_c), each class with its own effect only (one effect of rank 2d per class): (..., C, 2d, d) in
    # memory, not the (..., C, C, 2d, d) of every class with every effect, whose diagonal alone was read
    own = povm_probabilities_dense(wide, vectors.unsqueeze(-3), validate=False).squeeze(-1)   # inputs checked
    success = (p * own).sum(-1).to(p_in.dtype)
    return OptimalMeasurement("pretty-good", success, success.clamp_min(0).sqrt(),
                              POVM(vectors.to(rho_c.dtype), validate=False), p_in, DensityMatrix._trusted(data=rho_c))


def _as_labels(labels, n: int) -> torch.Tensor:
    labels = torch.as_tensor(labels)
    if labels.dtype.is_floating_point or labels.dtype.is_complex or labels.shape != (n,):
        raise ValueError(f"labels must be {n} integers (one per sentence); got {labels.dtype} {tuple(labels.shape)}")
    if bool((labels < 0).any()):
        raise ValueError(f"labels must be >= 0; got {int(labels.min())}")
    return labels.long()


def _checked(obj, name: str):
    """A state object as it is, or a tensor checked once as a density matrix named ``name`` and wrapped unchecked.

    ``class_averages`` checks ``sentences`` whole before splitting it by class, so that an error gives the user's
    batch index and shape, not those within a class's sub-batch; the sub-batches are then not checked again.
    """
    return DensityMatrix._trusted(data=_dense(obj, name)) if isinstance(obj, torch.Tensor) else obj


def _contribution(obj) -> torch.Tensor:
    """Sum over the batch of the dense states of one sentence object (batch shape (m,) or ())."""
    if isinstance(obj, Ensemble):
        x = (obj.states.data * obj.weights.sqrt().to(obj.dtype).unsqueeze(-1)).reshape(-1, obj.dim)
        return x.mT @ x.conj()
    if isinstance(obj, PureState):
        x = obj.data.reshape(-1, obj.dim)
        return x.mT @ x.conj()
    rho = _dense(obj, "sentences")
    return rho.reshape(-1, *rho.shape[-2:]).sum(0)


def _batch_size(sentences) -> int:
    """B of one batched sentence object: a state object of batch shape ``(B, ...)`` or a ``(B, ..., d, d)`` tensor."""
    if isinstance(sentences, torch.Tensor):
        if sentences.dim() < 3:
            raise ValueError(f"sentences as a tensor must be a batch of B density matrices (B, ..., d, d); got shape "
                             f"{tuple(sentences.shape)}")
        return sentences.shape[0]
    if not isinstance(sentences, (DensityMatrix, PureState, Ensemble)):
        _type_error("sentences", sentences)
    if not sentences.batch_shape:
        raise ValueError(f"sentences is one unbatched {type(sentences).__name__} (batch shape ()): pass a batch "
                         f"(B,) of sentences or a list of them")
    return sentences.batch_shape[0]


def class_averages(sentences, labels, num_classes: int | None = None) -> tuple[DensityMatrix, torch.Tensor]:
    r"""Class-average density matrices :math:`\bar\rho_c = \frac{1}{N_c}\sum_{x: y_x = c}\rho_x` and the counts :math:`N_c`.

    Parameters
    ----------
    sentences : Ensemble, DensityMatrix, PureState or sequence of them
        One object with batch shape ``(B,)`` (e.g. ``QPDN.ensemble(ids,
        mask)``), or B unbatched objects. Ensembles are never expanded to
        B d x d matrices: each class sums :math:`X^T \bar X` of its
        weighted member states.
    labels : torch.Tensor or sequence of int
        ``(B,)`` classes in ``[0, C)``.
    num_classes : int, optional
        C; default ``max(labels) + 1``. Every class needs a sentence.

    Returns
    -------
    tuple of DensityMatrix and torch.Tensor
        Batch ``(C,)`` averages and long ``(C,)`` counts.

    Examples
    --------
    >>> words = PureState.from_real(torch.eye(2)).data                      # |e0>, |e1>
    >>> avg, counts = class_averages(PureState(words), [0, 1])
    >>> avg.data.real.tolist(), counts.tolist()
    ([[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 1.0]]], [1, 1])
    """
    items = list(sentences) if isinstance(sentences, (list, tuple)) else None
    n = len(items) if items is not None else _batch_size(sentences)
    if n == 0:
        raise ValueError("sentences is empty: need at least one sentence (and one label) per class")
    labels = _as_labels(labels, n)
    num = int(labels.max()) + 1 if num_classes is None else check_dimension("num_classes", num_classes)
    counts = torch.bincount(labels, minlength=num)
    if counts.numel() > num or bool((counts == 0).any()):
        raise ValueError(f"every class in [0, {num}) needs a sentence and labels must be < {num}; "
                         f"counts per class {counts.tolist()}")
    if items is not None:
        items = [_checked(x, f"sentences[{i}]") for i, x in enumerate(items)]
    else:
        sentences = _checked(sentences, "sentences")
    sums = []
    for c in range(num):
        chosen = (labels == c).nonzero().squeeze(-1)
        if items is not None:
            sums.append(sum(_contribution(items[int(i)]) for i in chosen))
        else:
            sums.append(_contribution(sentences[chosen.to(sentences.device)]))
    total = torch.stack(sums)
    return DensityMatrix._trusted(data=total / counts.to(total.device, total.real.dtype)[:, None, None]), counts


def measurement_bound(sentences, labels, *, num_classes: int | None = None, priors=None) -> OptimalMeasurement:
    r"""The best single-shot accuracy any measurement of the sentence states can reach on a labelled set.

    Class averages (:func:`class_averages`), priors (default: the class
    frequencies), then :func:`helstrom` for two classes (exact) or
    :func:`pretty_good_measurement` for more (a bracket). Compare with
    :func:`single_shot_accuracy` of the learned measurement.

    Parameters
    ----------
    sentences, labels, num_classes
        As in :func:`class_averages`.
    priors : torch.Tensor or sequence of float, optional
        ``(C,)`` class priors; default the class frequencies in ``labels``.

    Returns
    -------
    OptimalMeasurement
        The bracket ``success_probability <= optimum <= upper_bound`` (equal for two classes) and the measurement
        reaching ``success_probability``.

    Examples
    --------
    >>> a, b = PureState.basis_state(0, 3), PureState.basis_state(2, 3)
    >>> sentences = [Ensemble(a.data[None]), Ensemble(b.data[None]), Ensemble(a.data[None])]
    >>> float(measurement_bound(sentences, [0, 1, 0]).success_probability)      # orthogonal classes
    1.0
    """
    averages, counts = class_averages(sentences, labels, num_classes)
    if counts.numel() < 2:            # pretty_good_measurement would blame its own class_states argument
        raise ValueError(f"labels must name at least two classes to discriminate (or num_classes >= 2); got "
                         f"{counts.numel()} class with {counts.tolist()} sentences")
    if priors is None:
        priors = counts.to(averages.data.real.dtype) / counts.sum()
    if counts.numel() == 2:
        p = _priors(priors, 2, averages.data)
        return helstrom(averages[0], averages[1], p[0])
    return pretty_good_measurement(averages, priors)


def _measurement_rows(projectors: Projector) -> torch.Tensor:
    r"""Vectors ``(k, r, d)`` of a batch of projectors that are one measurement: all k r rows orthonormal.

    Only then do the :math:`P_k` sum to at most I (orthogonal projectors); unit vectors that overlap (e.g. a
    ``ProjectiveMeasurement`` with ``orthonormal=False`` after training, or k > d) are no measurement.
    """
    vectors = projectors.vectors
    if vectors.dim() != 3:
        raise ValueError(f"need a batch (k,) of projectors; got batch shape {tuple(projectors.batch_shape)}")
    rows = vectors.reshape(-1, vectors.shape[-1])
    err = float((rows @ rows.mH - torch.eye(rows.shape[0], dtype=rows.dtype, device=rows.device)).abs().max())
    tol = tolerance(rows.dtype, max(rows.shape))
    if rows.shape[0] > rows.shape[1] or err > tol:
        raise ValueError(f"the {rows.shape[0]} projector vectors in C^{rows.shape[1]} must be orthonormal to form "
                         f"a measurement (sum_k P_k <= I); got max |V V^dagger - I| = {err:.3g} (tolerance "
                         f"{tol:.2g}). Use ProjectiveMeasurement(orthonormal=True) or POVM.from_frame(vectors)")
    return vectors


def _projector_joint(vectors: torch.Tensor, rho_c: torch.Tensor) -> torch.Tensor:
    r""":math:`\operatorname{Tr}(\rho_c P_k)` ``(C, k)`` of orthonormal projector rows ``(k, r, d)`` and states
    ``(C, d, d)``, with the column :math:`\operatorname{Tr}\rho_c - \sum_k \operatorname{Tr}(\rho_c P_k)` of the rest
    of the space, :math:`I - \sum_k P_k`, appended when the k r rows do not span :math:`\mathbb{C}^d`.

    From the rows (:func:`~qpnlp.measurement.born_probabilities_dense`, O(C k r d) memory), never the k
    d x d matrices :math:`P_k` (a complete measurement of d = 256 outcomes held 256^3 entries).
    """
    joint = born_probabilities_dense(rho_c, vectors, validate=False)                      # rows checked by the caller
    if vectors.shape[0] * vectors.shape[1] < vectors.shape[-1]:                           # incomplete: add I - sum P_k
        trace = torch.diagonal(rho_c, dim1=-2, dim2=-1).sum(-1).real.to(joint.dtype)
        joint = torch.cat([joint, (trace - joint.sum(-1)).unsqueeze(-1)], dim=-1)
    return joint


def single_shot_accuracy(measurement, class_states, priors=None) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Accuracy :math:`\sum_k \max_c p_c\operatorname{Tr}(\bar\rho_c E_k)` of a measurement whose outcome k is read as its best class.

    The best classical post-processing of one outcome (a deterministic map
    from outcomes to classes is optimal), so it is comparable with
    :func:`measurement_bound`; never above the Helstrom value.

    Parameters
    ----------
    measurement : POVM, Projector batch, ProjectiveMeasurement or POVMMeasurement
        k outcomes on :math:`\mathbb{C}^d`. Projectors must be orthogonal (all
        their vectors orthonormal; ValueError otherwise). Incomplete projective
        measurements get one extra outcome for the rest of the space,
        :math:`I - \sum_k P_k`.
    class_states : DensityMatrix or torch.Tensor
        Batch ``(C,)`` class averages.
    priors : torch.Tensor, optional
        ``(C,)``; default uniform.

    Returns
    -------
    accuracy : torch.Tensor
        Real scalar.
    assignment : torch.Tensor
        Long ``(k,)``: the class each outcome is read as (``(k + 1,)`` with
        the rest of the space last for an incomplete projective measurement).
    """
    rho_c = _dense(class_states, "class_states")
    if rho_c.dim() != 3:
        raise ValueError(f"class_states must be C states (C, d, d); got shape {tuple(rho_c.shape)}")
    p = _priors(priors, rho_c.shape[0], rho_c)
    if hasattr(measurement, "as_povm"):
        measurement = measurement.as_povm()
    elif hasattr(measurement, "as_projectors"):
        measurement = measurement.as_projectors()
    if isinstance(measurement, (Projector, POVM)) and measurement.vectors.shape[-1] != rho_c.shape[-1]:
        raise ValueError(f"dimension mismatch: the measurement acts on C^{measurement.vectors.shape[-1]} but "
                         f"class_states have d={rho_c.shape[-1]}")
    if isinstance(measurement, Projector):
        joint = _projector_joint(_measurement_rows(measurement), rho_c)
    elif isinstance(measurement, POVM):
        joint = povm_probabilities_dense(rho_c, measurement.vectors)                         # (C, k)
    else:
        raise TypeError(f"measurement must be a POVM, Projector, ProjectiveMeasurement or POVMMeasurement; "
                        f"got {type(measurement).__name__}")
    weighted = p.to(joint.dtype).unsqueeze(-1) * joint
    best, assignment = weighted.max(0)
    return best.sum(), assignment
