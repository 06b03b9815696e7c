r"""How the metric functions read their arguments: dense matrices, spectra and factors.

Every metric accepts a :class:`~qpnlp.hilbert.PureState`, an
:class:`~qpnlp.hilbert.Ensemble`, a :class:`~qpnlp.hilbert.DensityMatrix` or
a plain complex ``(..., d, d)`` tensor. The helpers here turn any of them
into what a formula needs, as cheaply and as exactly as the kind allows:

* :func:`as_density_tensor` - the dense :math:`\rho` ``(..., d, d)``;
* :func:`spectrum` - the eigenvalues, through the n x n Gram matrix for small ensembles;
* :func:`sqrt_factor` - a factor :math:`A` with :math:`\rho = A A^\dagger`:
  exact for pure states (:math:`A = |\psi\rangle`, d x 1) and ensembles
  (:math:`A = [\sqrt{p_i}\,w_i]`, d x n), from ``eigh`` otherwise;
* :func:`members` and :func:`factor_product` - the states and weights of a factor's columns, and
  :math:`A^\dagger B` of two factors from their overlaps, without building an ensemble's factor;
* :func:`eigen_factor` - :math:`\rho = U \operatorname{diag}(\lambda) U^\dagger`,
  from the thin SVD of :math:`A` for ensembles (no d x d matrix);
* :func:`root_overlap` - :math:`\operatorname{Tr}\sqrt\rho\sqrt\sigma` from
  those decompositions, with gradients that stay finite where eigenvalues or
  singular values repeat (padding, equal weights, the maximally mixed state).

Dense matrices built in floating point carry spurious eigenvalues of a few
:math:`\epsilon\,\lambda_{\max}` where the true ones are zero, and a square
root turns them into errors of :math:`\sqrt{\epsilon}` (half the digits).
The factors of dense matrices therefore drop eigenvalues below
:func:`rank_tolerance`, :math:`2\sqrt{d}\,\epsilon\,\lambda_{\max}`: a rank
deficiency is kept exact, at the price of treating true eigenvalues that
small as zero (they are below what the dtype resolves in a d x d matrix).
"""

from __future__ import annotations

import functools

import torch
from torch.autograd import forward_ad

from . import _mixture as M
from . import _validation as V
from ._ensemble import Ensemble
from ._linalg import adjoint_product, decompose, promote, safe_sqrt, squared_modulus
from ._overlaps import scaled_overlaps
from ._states import DensityMatrix, PureState

#: Eigenvalues of a dense state below ``RANK_FACTOR * sqrt(d) * eps * lambda_max`` are zero.
RANK_FACTOR = 2.0


def as_density_tensor(obj, name: str = "rho", validate: V.Validate = None) -> torch.Tensor:
    """Dense ``(..., d, d)`` tensor of a state, mixture, density matrix or raw tensor."""
    if isinstance(obj, DensityMatrix):
        return obj.data
    if isinstance(obj, PureState):
        return obj.proj().data
    if isinstance(obj, Ensemble):
        return obj.dense().data
    M.check_density_tensor(name, obj, validate)
    return obj


def _event(obj, name: str) -> tuple[int, tuple[int, ...], torch.device]:
    """Dimension, batch shape and device of a state argument (TypeError for anything else)."""
    if isinstance(obj, (PureState, Ensemble, DensityMatrix)):
        return obj.dim, tuple(obj.batch_shape), obj.device
    V.check_tensor(name, obj)
    V.check_square(name, obj)
    return obj.shape[-1], tuple(obj.shape[:-2]), obj.device


def check_pair(rho, sigma, names: tuple[str, str] = ("rho", "sigma")) -> None:
    """Two states of one dimension, broadcastable batch shapes and one device, or a clear error."""
    (d_a, batch_a, dev_a), (d_b, batch_b, dev_b) = _event(rho, names[0]), _event(sigma, names[1])
    V.check_dims_match(names[0], d_a, names[1], d_b)
    V.check_broadcast(names[0], batch_a, names[1], batch_b)
    if dev_a != dev_b:
        raise ValueError(f"arguments must be on one device; got {names[0]} on {dev_a}, {names[1]} on {dev_b}")


def spectrum(obj, name: str = "rho", validate: V.Validate = None) -> torch.Tensor:
    """Eigenvalues of rho clamped at zero, ascending; lazily through the Gram matrix for small ensembles.

    While validation is on (``validate``, default the global mode), a dense
    state with an eigenvalue below ``-tolerance`` raises ValueError (the
    eigenvalues are computed anyway, so the positivity check is free here,
    unlike at construction where it needs the strict mode).
    """
    if isinstance(obj, PureState):
        return torch.ones(obj.batch_shape + (1,), dtype=V.real_dtype_of(obj.dtype), device=obj.device)
    if isinstance(obj, Ensemble):
        return obj.eigvals().clamp_min(0)
    lam = obj.eigvals() if isinstance(obj, DensityMatrix) else decompose(torch.linalg.eigvalsh,
        as_density_tensor(obj, name, validate))
    if V.enabled(validate):
        V.check_spectrum(name, lam, lam.shape[-1])
    return lam.clamp_min(0)


def rank_tolerance(eigenvalues: torch.Tensor, dim: int) -> torch.Tensor:
    """Threshold ``(..., 1)`` below which eigenvalues of a dense ``dim``-dimensional state count as zero."""
    eps = torch.finfo(eigenvalues.dtype).eps
    largest = eigenvalues.detach().abs().amax(-1, keepdim=True)
    return RANK_FACTOR * dim ** 0.5 * eps * largest


def _dense_eigen(rho: torch.Tensor, name: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    lam, vecs = decompose(torch.linalg.eigh, rho)
    if V.enabled():
        V.check_spectrum(name, lam, rho.shape[-1])                    # free: the eigenvalues are here
    keep = lam > rank_tolerance(lam, rho.shape[-1])
    return lam, vecs, keep


def _root_kernel(roots: torch.Tensor) -> torch.Tensor:
    r"""Divided differences of the square root, :math:`K_{ij} = 1/(\sqrt{\lambda_i} + \sqrt{\lambda_j})`, ``(..., r, r)``.

    ``roots`` ``(..., r)`` are the :math:`\sqrt{\lambda_i}`;
    :math:`(\sqrt{\lambda_i} - \sqrt{\lambda_j})/(\lambda_i - \lambda_j)` needs no
    gap, so K is finite at repeated eigenvalues. 0 where both roots are zero.
    """
    total = roots.unsqueeze(-1) + roots.unsqueeze(-2)
    return torch.where(total > 0, 1.0 / torch.where(total > 0, total, torch.ones_like(total)), torch.zeros_like(total))


_interpreters = getattr(torch._C._functorch, "get_interpreter_stack", lambda: None)
_GRAD = getattr(getattr(torch._C._functorch, "TransformType", None), "Grad", None)


#: What :func:`first_order_only` and :func:`first_order_backward` tell a user who needs second derivatives.
FINITE_DIFFERENCES = ("first derivatives (grad, jacrev, jacfwd, vmap(grad)) are exact; for a Hessian-vector product "
                      "take central differences of the gradient, (g(x + h v) - g(x - h v)) / (2 h)")


#: How a user asks for the second derivatives that :func:`first_order_only` refuses.
SECOND_ORDER_ROUTES = ("torch.autograd.functional.hessian, a gradient of a create_graph=True gradient, "
                       "torch.func.hessian, jacrev or jacfwd of jacrev, a jvp of a gradient")


def _second_order_message(name: str, hint: str = FINITE_DIFFERENCES, routes: str = SECOND_ORDER_ROUTES) -> str:
    return f"second derivatives of {name} ({routes}) are not supported: its first derivatives are custom rules; {hint}"


def first_order_only(rule: str, name: str, ctx=None, hint: str = FINITE_DIFFERENCES,
                     routes: str = SECOND_ORDER_ROUTES) -> None:
    r"""NotImplementedError where a custom ``rule`` (``"backward"``, or ``"jvp"`` and its ``ctx``) may be differentiated.

    The Daleckii-Krein rules hold the decompositions they read (eigenvectors, roots) as constants, so a
    derivative of a rule would silently miss their change: a ``backward`` run under forward-mode AD (an eager
    dual level or a ``torch.func.jvp``: ``hessian``, ``jacfwd(jacrev(f))``), or a ``jvp`` under
    ``torch.func.grad`` (``jacrev(jacfwd(f))``) or of inputs that require grad (eager: the tangent would be
    differentiable). Second derivatives need the second divided differences. A reverse-mode derivative of a
    ``backward`` (``create_graph=True``) raises through :func:`first_order_backward`.
    """
    if rule == "backward":
        busy = forward_ad._current_level >= 0
    else:
        busy = any(i.key() == _GRAD for i in (_interpreters() or ())) or (
            torch.is_grad_enabled() and any(getattr(ctx, "needs_input_grad", ())))
    if busy:
        raise NotImplementedError(_second_order_message(name, hint, routes))


class _Refused(torch.autograd.Function):
    r"""``value`` (a copy), tied to ``ties``: differentiated, it raises :func:`first_order_only`'s message.

    ``forward(value, message, *ties)``. The result of a custom backward built with ``create_graph=True`` passes
    through it, so that a derivative of that result with respect to anything it depends on (the function's
    inputs, the incoming gradient) reaches this node and raises.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(value, message, *ties):
        return value.clone()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.message = inputs[1]

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError(ctx.message)

    @staticmethod
    def jvp(ctx, *tangents):
        raise NotImplementedError(ctx.message)


def first_order_backward(name: str, hint: str = FINITE_DIFFERENCES, routes: str = SECOND_ORDER_ROUTES):
    r"""Decorate a custom ``backward`` whose result is not differentiable: a second derivative raises.

    In place of ``once_differentiable``, which ties its error to fresh leaves that
    ``torch.autograd.grad(outputs, inputs)`` prunes: a gradient of the gradient then gave None or 0
    (``torch.autograd.functional.hessian``, ``jacrev(jacrev(f))``), silently. Here the backward runs without
    a graph (:func:`first_order_only` first, for forward-mode AD); where a graph is built (``create_graph=True``,
    as ``torch.func.grad`` always does), each result is tied by ``_Refused`` to the saved tensors and incoming
    gradients that require grad, so the function must save the inputs it differentiates. First derivatives
    are unchanged: the tie is an identity that only runs when differentiated. ``hint`` and ``routes`` word the
    error (what to do instead; which calls raise).
    """
    def decorate(backward):
        @functools.wraps(backward)
        def wrapper(ctx, *grads):
            first_order_only("backward", name, hint=hint, routes=routes)
            with torch.no_grad():
                result = backward(ctx, *grads)
            if not torch.is_grad_enabled():
                return result
            ties = [t for t in (*ctx.saved_tensors, *grads) if isinstance(t, torch.Tensor) and t.requires_grad]
            if not ties:
                return result
            message = _second_order_message(name, hint, routes)
            tied = [r if r is None else _Refused.apply(r, message, *ties)
                    for r in (result if isinstance(result, tuple) else (result,))]
            return tuple(tied) if isinstance(result, tuple) else tied[0]
        return wrapper
    return decorate


def dense_root_frechet(vecs: torch.Tensor, roots: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    r"""The Frechet derivative :math:`L(X) = U[(U^\dagger X U)\circ K]U^\dagger` of :math:`\sqrt\rho`, ``(..., d, d)``.

    At :math:`\rho = U\operatorname{diag}(s^2)U^\dagger`: ``vecs`` U ``(..., d, d)``, ``roots`` s ``(..., d)``,
    X ``(..., d, d)``; K the divided differences of ``_root_kernel``. K is real and symmetric, so L is
    self-adjoint under :math:`\operatorname{Re}\operatorname{Tr} X^\dagger Y`: the same map is the pullback
    of a gradient and the push-forward of a tangent.
    """
    return vecs @ ((vecs.mH @ x @ vecs) * _root_kernel(roots).to(vecs.dtype)) @ vecs.mH


class _PsdSqrt(torch.autograd.Function):
    r""":math:`\sqrt\rho = U\operatorname{diag}(\sqrt{\lambda})U^\dagger` with eigenvalues below :func:`rank_tolerance` set to zero.

    ``forward(rho, name)``; the spectrum is checked as ``_dense_eigen`` does. The backward is
    the Daleckii-Krein formula :math:`\bar\rho = U[(U^\dagger \bar A U) \circ K]U^\dagger`,
    :math:`K_{ij} = 1/(\sqrt{\lambda_i} + \sqrt{\lambda_j})` (0 where both are
    zero), finite at repeated eigenvalues, where ``eigh``'s backward divides
    by their zero gap and gives NaN (e.g. at the maximally mixed state).

    Returns the root and, not differentiable, the eigenvectors and roots the backward needs: the forward
    sets nothing on ``ctx`` (``setup_context`` does), so ``torch.func.grad`` and ``vmap`` run it too. The
    Frechet derivative is self-adjoint (``dense_root_frechet``): the ``jvp`` applies it to the tangent.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(rho, name):
        lam, vecs, keep = _dense_eigen(rho, name)
        roots = safe_sqrt(lam, keep)
        return (vecs * roots.to(vecs.dtype).unsqueeze(-2)) @ vecs.mH, vecs, roots

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, vecs, roots = output
        ctx.mark_non_differentiable(vecs, roots)
        ctx.save_for_backward(vecs, roots, inputs[0])                 # rho: a second derivative raises
        ctx.save_for_forward(vecs, roots)

    @staticmethod
    @first_order_backward("the square root of a density matrix")
    def backward(ctx, grad_root, _grad_vecs, _grad_roots):
        vecs, roots, _ = ctx.saved_tensors
        return dense_root_frechet(vecs, roots, grad_root), None

    @staticmethod
    def jvp(ctx, tangent, _name):
        first_order_only("jvp", "the square root of a density matrix", ctx)
        vecs, roots = ctx.saved_tensors
        return dense_root_frechet(vecs, roots, tangent), None, None


def sqrt_factor(obj, name: str = "rho") -> torch.Tensor:
    r"""A factor :math:`A` ``(..., d, r)`` with :math:`\rho = A A^\dagger` (see the module docstring).

    PureState: r = 1; Ensemble: r = n (the member states scaled by
    :math:`\sqrt{p_i}`, exact); dense: r = d, the Hermitian
    :math:`A = \sqrt\rho = U\operatorname{diag}(\sqrt{\lambda})U^\dagger` with
    eigenvalues below :func:`rank_tolerance` set to zero (gradients finite
    at repeated eigenvalues, see ``_PsdSqrt``).
    """
    if isinstance(obj, PureState):
        return obj.data.unsqueeze(-1)
    if isinstance(obj, Ensemble):
        return obj.factor()
    return _PsdSqrt.apply(as_density_tensor(obj, name), name)[0]


def members(obj, name: str = "rho") -> tuple[torch.Tensor, torch.Tensor | None]:
    r"""States ``(..., r, d)`` and weights ``(..., r)`` with :math:`\rho = \sum_i p_i |a_i\rangle\langle a_i|`.

    A PureState: its vector (r = 1) and None (weight one); an Ensemble: its states and weights, not copied; dense:
    the columns of :func:`sqrt_factor` as rows (r = d) and None. The factor of :func:`sqrt_factor` is
    :math:`[\sqrt{p_i}\,a_i]`; :func:`factor_product` uses it without building it.
    """
    if isinstance(obj, PureState):
        return obj.data.unsqueeze(-2), None
    if isinstance(obj, Ensemble):
        return obj.states.data, obj.weights
    return sqrt_factor(obj, name).mT, None


def factor_product(rho, sigma, names: tuple[str, str] = ("rho", "sigma")) -> torch.Tensor:
    r""":math:`A^\dagger B` ``(..., r, m)`` of the factors :math:`\rho = AA^\dagger`, :math:`\sigma = BB^\dagger` of
    :func:`sqrt_factor`, batch dims broadcasting.

    From :func:`members` (``scaled_overlaps``): :math:`\sqrt{p_i q_j}\langle a_i|b_j\rangle`, so neither a PureState
    nor an Ensemble is copied (``adjoint_product`` of the factors held the scaled copy of an ensemble's states, and
    ``A^\dagger A`` of a batch a second one, the conjugate view ``bmm`` copies).
    """
    (a, p), (b, q) = members(rho, names[0]), members(sigma, names[1])
    a, b = promote(a, b)
    return scaled_overlaps(a, p, b, q)


def root_operand(obj, name: str = "rho") -> tuple[str, torch.Tensor]:
    """The tensor a state is decomposed from, and how: ``"pure"`` (..., d), ``"factor"`` (..., d, n) or ``"dense"`` (..., d, d)."""
    if isinstance(obj, PureState):
        return "pure", obj.data
    if isinstance(obj, Ensemble):
        return "factor", obj.factor()
    return "dense", as_density_tensor(obj, name)


def _eigen(kind: str, x: torch.Tensor, name: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    r"""Eigenvalues ``(..., r)``, eigenvectors ``(..., d, r)`` and, for a factor :math:`A = U S W^\dagger`, W ``(..., n, r)``."""
    if kind == "pure":
        return torch.ones(x.shape[:-1] + (1,), dtype=V.real_dtype_of(x.dtype), device=x.device), x.unsqueeze(-1), None
    if kind == "factor":
        u, s, wh = decompose(torch.linalg.svd, x, full_matrices=False)
        return s.square(), u, wh.mH
    lam, vecs, keep = _dense_eigen(x, name)
    return torch.where(keep, lam, torch.zeros_like(lam)), vecs, None


def eigen_factor(obj, name: str = "rho") -> tuple[torch.Tensor, torch.Tensor]:
    r"""Eigenvalues ``(..., r)`` and orthonormal eigenvectors as columns ``(..., d, r)`` of the support.

    Ensembles go through the thin SVD :math:`A = U S W^\dagger` of their
    factor (:math:`\lambda = S^2`, no d x d matrix, no spurious eigenvalues);
    dense states through ``eigh`` with the eigenvalues below
    :func:`rank_tolerance` set to zero. Their autograd is torch's SVD/eigh
    backward, NaN at repeated values: differentiate functions of
    :math:`\sqrt\rho` through :func:`root_overlap` instead.
    """
    lam, vecs, _ = _eigen(*root_operand(obj, name), name)
    return lam, vecs


def root_pullback(kind: str, roots: torch.Tensor, vecs: torch.Tensor, right: torch.Tensor | None,
                  g_u: torch.Tensor, h: torch.Tensor | None) -> torch.Tensor:
    r"""Gradient of :math:`\operatorname{Tr}(\sqrt\rho\,G)` (G Hermitian) in the tensor rho was decomposed from.

    rho is given by its roots :math:`s_i = \sqrt{\lambda_i}` ``(..., r)`` and vectors U ``(..., d, r)``
    (and, for a factor :math:`A = U S W^\dagger`, ``right`` W ``(..., n, r)``); G enters only through
    ``g_u`` :math:`GU` ``(..., d, r)`` and ``h`` :math:`H = U^\dagger G U` ``(..., r, r)`` (None for a pure
    state). With the Daleckii-Krein kernel :math:`K_{ij} = 1/(s_i + s_j)` (``_root_kernel``, 0 where both
    roots are zero: directions that raise the rank, where :math:`\sqrt\rho` has an infinite slope in rho
    and a kink in a factor, get gradient 0):

    * pure, :math:`\sqrt\rho = \psi\psi^\dagger`: :math:`\bar\psi = 2 G \psi` ``(..., d, 1)``;
    * dense: :math:`\bar\rho = U (H \circ K) U^\dagger` ``(..., d, d)`` (U square);
    * factor :math:`A = U S W^\dagger`: :math:`\bar A = 2\bar\rho A
      = 2\,[U (H \circ K S) + (I - UU^\dagger) G U D]\,W^\dagger` ``(..., d, n)``,
      D the indicator of :math:`s_j > 0`; the complement of U enters only
      through :math:`(I - UU^\dagger) G U = GU - U H`, so no d x d matrix is formed.
    """
    if kind == "pure":
        return 2 * g_u
    kernel = _root_kernel(roots)
    if kind == "dense":
        return vecs @ (h * kernel.to(h.dtype)) @ vecs.mH
    support = (roots > 0).to(h.dtype).unsqueeze(-2)
    inside = vecs @ (h * (kernel * roots.unsqueeze(-2)).to(h.dtype))                # U (H o K S)
    return 2 * (inside + (g_u - vecs @ h) * support) @ right.mH


def hermitian_root_pullback(kind: str, roots: torch.Tensor, vecs: torch.Tensor, right: torch.Tensor | None,
                             grad: torch.Tensor) -> torch.Tensor:
    r""":func:`root_pullback` for the gradient ``grad`` ``(..., d, d)`` reaching :math:`\sqrt\rho` itself.

    :math:`\sqrt\rho` is Hermitian, so only the Hermitian part :math:`G = (\bar X + \bar X^\dagger)/2` of
    ``grad`` counts: :math:`\operatorname{Re}\operatorname{Tr}\bar X^\dagger dX
    = \operatorname{Re}\operatorname{Tr} G\,dX` for Hermitian dX.
    """
    g_u = 0.5 * (grad @ vecs + grad.mH @ vecs)                                       # G U
    return root_pullback(kind, roots, vecs, right, g_u, None if kind == "pure" else vecs.mH @ g_u)


def factor_root_pushforward(roots: torch.Tensor, vecs: torch.Tensor, right: torch.Tensor,
                            tangent: torch.Tensor) -> torch.Tensor:
    r"""Directional derivative ``(..., d, d)`` of :math:`\sqrt{AA^\dagger}` along ``tangent`` dA ``(..., d, n)``.

    A given by its thin SVD :math:`A = U S W^\dagger` (``vecs`` U ``(..., d, r)``, ``roots`` S ``(..., r)``,
    ``right`` W ``(..., n, r)``). With :math:`Y = U^\dagger dA\,W` and :math:`C = (I - UU^\dagger)\,dA\,W D`
    (D the indicator of :math:`s_j > 0`), the Daleckii-Krein formula for :math:`d(AA^\dagger)` gives
    :math:`U[(YS + SY^\dagger)\circ K]U^\dagger + CU^\dagger + UC^\dagger`, K of ``_root_kernel``. The adjoint
    of :func:`root_pullback` for a factor (the same conventions where S has zeros): a jvp and a vjp agree.
    """
    y = vecs.mH @ tangent @ right                                                    # U^H dA W  (..., r, r)
    scale = roots.to(y.dtype)
    inner = y * scale.unsqueeze(-2) + scale.unsqueeze(-1) * y.mH                   # Y S + S Y^H
    outer = (tangent @ right - vecs @ y) * (roots > 0).to(y.dtype).unsqueeze(-2)   # (I - U U^H) dA W D
    return vecs @ (inner * _root_kernel(roots).to(y.dtype)) @ vecs.mH + outer @ vecs.mH + vecs @ outer.mH


def _root_pullback(kind: str, roots: torch.Tensor, vecs: torch.Tensor, right: torch.Tensor | None,
                   overlap: torch.Tensor, other_roots: torch.Tensor, other_vecs: torch.Tensor) -> torch.Tensor:
    r""":func:`root_pullback` for :math:`G = \sqrt\sigma = V\operatorname{diag}(t)V^\dagger` given thin.

    ``other_vecs`` V ``(..., d, k)``, ``other_roots`` t ``(..., k)``, and ``overlap`` :math:`M = U^\dagger V`:
    :math:`GU = V T M^\dagger` and :math:`H = M T M^\dagger`, no d x d matrix.
    """
    scaled = overlap * other_roots.to(overlap.dtype).unsqueeze(-2)                  # M T  (..., r, k)
    g_u = other_vecs @ scaled.mH                                                     # G U  (..., d, r)
    h = None if kind == "pure" else scaled @ overlap.mH                              # U^H G U  (..., r, r)
    return root_pullback(kind, roots, vecs, right, g_u, h)


class _RootOverlap(torch.autograd.Function):
    r""":math:`\operatorname{Tr}\sqrt\rho\sqrt\sigma = \sum_{ij} s_i t_j |\langle u_i|v_j\rangle|^2` from both spectral decompositions.

    A custom Function because torch's SVD and ``eigh`` backwards divide by
    the gaps between singular values / eigenvalues: a padded ensemble (zero
    columns in its factor), equal weights on orthogonal words or a dense
    state with a repeated eigenvalue give 0/0 = NaN, although
    :math:`\sqrt\rho` is smooth there. The backward is the Daleckii-Krein
    formula of the square root, whose divided differences
    :math:`1/(s_i + s_j)` need no gap (``_root_pullback``). Inputs are
    the tensors of :func:`root_operand`; ``specs`` their ``(kind, name)``.

    Returns the value and, not differentiable, the decompositions the backward needs (a factor's right
    singular vectors W, or an empty tensor for the other kinds): the forward sets nothing on ``ctx``
    (``setup_context`` does), so ``torch.func.grad`` and ``vmap`` run it too. The value is real, so its
    ``jvp`` is the real inner product :math:`\operatorname{Re}\sum \bar g\,dx` of each gradient g with its tangent.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(x, y, specs):
        (lam_x, u, right_x), (lam_y, v, right_y) = (_eigen(kind, z, name) for (kind, name), z in zip(specs, (x, y)))
        u, v = promote(u, v)
        right_x, right_y = (u.new_empty(0) if w is None else w.to(u.dtype) for w in (right_x, right_y))
        overlap = adjoint_product(u, v)                         # (..., r, m); no factor copied per pair of a batch
        squares = squared_modulus(overlap)
        s, t = safe_sqrt(lam_x).to(squares.dtype), safe_sqrt(lam_y).to(squares.dtype)
        value = (s.unsqueeze(-2) @ squares @ t.unsqueeze(-1)).squeeze(-1).squeeze(-1)
        return value, s, u, right_x, t, v, right_y, overlap

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y, specs = inputs
        ctx.kinds, ctx.inputs = (specs[0][0], specs[1][0]), ((x.shape, x.dtype), (y.shape, y.dtype))
        ctx.mark_non_differentiable(*output[1:])
        ctx.save_for_backward(*output[1:], x, y)                     # x, y: a second derivative raises
        ctx.save_for_forward(*output[1:])

    @staticmethod
    def _gradient(ctx, i: int, saved) -> torch.Tensor:
        """The gradient of the value in input ``i``, unscaled and at the broadcast batch shape."""
        s, u, right_x, t, v, right_y, overlap = saved
        side = (s, u, right_x, overlap, t, v) if i == 0 else (t, v, right_y, overlap.mH, s, u)
        full = _root_pullback(ctx.kinds[i], *side)
        return full.squeeze(-1) if ctx.kinds[i] == "pure" else full

    @staticmethod
    @first_order_backward("Tr sqrt(rho) sqrt(sigma)")
    def backward(ctx, grad, *_grad_decompositions):
        saved = ctx.saved_tensors[:7]
        g = grad.to(saved[1].dtype)
        grads = [None, None, None]
        for i in range(2):
            if ctx.needs_input_grad[i]:
                full = _RootOverlap._gradient(ctx, i, saved)
                full = full * (g.unsqueeze(-1) if ctx.kinds[i] == "pure" else g.unsqueeze(-1).unsqueeze(-1))
                shape, dtype = ctx.inputs[i]
                grads[i] = full.to(dtype).sum_to_size(shape)                   # the input's batch shape and dtype
        return tuple(grads)

    @staticmethod
    def jvp(ctx, dx, dy, _specs):
        first_order_only("jvp", "Tr sqrt(rho) sqrt(sigma)", ctx)
        saved = ctx.saved_tensors
        value = None
        for i, tangent in enumerate((dx, dy)):
            if tangent is not None:
                grad = _RootOverlap._gradient(ctx, i, saved)
                term = (grad.conj() * tangent).real.sum(-1 if ctx.kinds[i] == "pure" else (-2, -1))
                value = term if value is None else value + term
        return (value.to(saved[0].dtype),) + (None,) * 7


def root_overlap(rho, sigma) -> torch.Tensor:
    r""":math:`\operatorname{Tr}\sqrt\rho\sqrt\sigma`, real ``(...)``, from the decompositions of :func:`eigen_factor`.

    :math:`\sum_{ij}\sqrt{\lambda_i\mu_j}\,|\langle u_i|v_j\rangle|^2`: an
    r x m matrix of overlaps, no d x d matrix for pure states and ensembles.
    Differentiable with finite gradients at repeated eigenvalues and
    singular values (see ``_RootOverlap``); not twice differentiable.
    """
    (kind_x, x), (kind_y, y) = root_operand(rho, "rho"), root_operand(sigma, "sigma")
    return _RootOverlap.apply(x, y, ((kind_x, "rho"), (kind_y, "sigma")))[0]
