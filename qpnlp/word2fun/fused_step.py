"""Word2Fun's whole SGD step as one compiled function (numba), on CPU: families II-IV, shared negatives.

:func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor` in torch ops is a chain of
about a hundred small operations per batch, each of which takes the GIL (two
hogwild threads then scale 1.2x).  For the configuration :func:`~qpnlp.word2fun.train.fit`
trains by default (family IV, the logistic step, negatives shared by the
batch) this module runs the same step as one compiled call that releases the
GIL from start to end.  Shapes: ``N`` centre tokens (``words``, ``times``),
``B`` pairs (``pair_centre``, ``context``), ``k`` shared negatives, ``D``
coordinates, ``h = D / 2``, ``V`` words.  In the order the step runs:

1. per centre token :math:`n` (word :math:`u`, normalised time :math:`\\tau_n`, :math:`s_n = \\tau_n / S`):
   :math:`a^{(1)} = \\Omega^{(1)}_u \\tau_n + \\Theta^{(1)}_u`,
   :math:`a^{(2)} = \\Omega^{(2)}_u \\tau_n + \\Theta^{(2)}_u`
   (:math:`\\Theta = 0` for III; the fixed :math:`\\Omega` of II),
   :math:`f_n = B_u + R_u \\odot [\\sin a^{(1)}; \\cos a^{(2)}] + A_u (\\sigma(z_n) - \\tfrac12)`,
   :math:`z_n = k_u (s_n - c_u)`, :math:`k_u = e^{\\ell_u}` (the last term with the logistic step), (N, D);
2. positive pairs :math:`b`: :math:`p_b = f_{n(b)} \\cdot h_{c(b)}`, loss :math:`\\log(1 + e^{-p_b})`,
   :math:`g_b = \\sigma(p_b) - 1`, :math:`\\partial L/\\partial f_{n(b)} \\mathrel{+}= g_b h_{c(b)}`;
3. shared negatives :math:`i`: :math:`q_{ni} = f_n \\cdot h_{v_i}`, :math:`w_n = m_n c / k` (:math:`m_n` pairs of
   token :math:`n`, :math:`c` = ``negative_weight``), loss :math:`w_n \\log(1 + e^{q_{ni}})`,
   :math:`\\gamma_{ni} = w_n \\sigma(q_{ni})`,
   :math:`\\partial L/\\partial f_n \\mathrel{+}= \\sum_i \\gamma_{ni} h_{v_i}`,
   :math:`G_i = \\sum_n \\gamma_{ni} f_n` (k, D);
4. the compass (unless frozen): :math:`h_{v_i} \\mathrel{+}= -\\eta G_i`, then pair after pair
   :math:`h_{c(b)} \\mathrel{+}= -\\eta g_b f_{n(b)}`;
5. word by word (the tokens grouped by word), from its rows before the step: the sums over the word's tokens
   of :math:`g_n`, :math:`g_n \\odot sc_n`, :math:`g_n \\odot dc_n`, :math:`\\tau_n g_n \\odot dc_n` and
   :math:`(\\sigma(z_n) - \\tfrac12) g_n` (:math:`g_n = -\\eta r_n \\partial L/\\partial f_n`, :math:`r_n` =
   ``row_lr``; :math:`sc_n`, :math:`dc_n` the basis and its derivative in the angles), of the logistic step's
   centre and log-rate gradients and of the roughness weights :math:`\\eta \\lambda_n r_n`: the VJP
   (:meth:`~qpnlp.word2fun.model.Word2Fun.function_vjp`) is linear in :math:`g`, so these sums give the word's
   steps, one pass over the coordinates per token;
6. the word's rows' steps from them, minus the summed roughness weight times :math:`\\partial\\rho/\\partial`
   rows (:func:`~qpnlp.word2fun.sgd.roughness`), each table's step times its multiplier
   (:func:`~qpnlp.word2fun.step_sizes.table_lr_factor`), added once (the torch ops' ``index_add_`` adds the
   tokens' steps one after another: the same sum in another order);
7. the word's step centre and log-rate projected onto their ranges (:func:`~qpnlp.word2fun.step_sizes.step_bounds`).

Steps 5-7 touch only the word's own rows, so taking the words one after another is the torch ops'
gather, steps, ``index_add_`` and projection, with each row read and written while it is in cache.

Every gradient is taken at the parameters before the step, as in torch ops, and the values agree
with them to float rounding: sums in another order, float32 sines and cosines from a vectorised
polynomial (float64 ones from libm), and :math:`\\sigma` and :math:`\\log(1 + e^y)` from one
vectorised :math:`e^{-|y|}` per logit (the logs summed as the log of a product).  The loss is summed in
float64 and returned in the model's dtype.  NaN propagates as in torch ops (no ``nnan`` fast-math flag;
the projection keeps a NaN).  CPU time per step of ``fit``'s defaults: about 0.8x that of the torch ops
with the compiled pair loop (``benchmarks/word2fun_step.py``, on a loaded machine).

The kernel checks every id against its table before it writes anything.  :class:`FusedStep` holds what
does not change between batches (the tables as arrays, the flags, step factors and bounds), so that a
training loop (:func:`~qpnlp.word2fun.sgd.batch_step`) pays per batch only for the batch;
:func:`fused_sgd_step` builds one for a single step.

Not compiled here (:func:`accepts` is False; the step runs in torch ops): other families, negatives
per pair, tensors not on the CPU, not float32/float64 or not contiguous, numba missing, or
``QPNLP_WORD2FUN_COMPILED=0`` / ``QPNLP_COMPILED=0`` (which also turn off
:mod:`~qpnlp.word2fun.pair_loop`).  :data:`ENABLED` (tests) turns off this step alone.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from qpnlp import _numba
from qpnlp._numba import check_rows
from qpnlp.word2fun import pair_loop
from qpnlp._elementary import exp_minus_abs as _exp_minus_abs  # both rebound to compiled versions by
from qpnlp._elementary import sincos as _sincos  # _kernel, as the helpers below
from qpnlp.word2fun.model import Word2Fun
from qpnlp.word2fun.step_sizes import STEP_CENTRE_LR, row_step_scales, step_bounds, table_lr_factor

__all__ = ["ENABLED", "FAMILIES", "FusedStep", "accepts", "fused_sgd_step", "takes_model"]

#: Whether :func:`accepts` may take the step (tests set it False to compare with the torch ops and pair loop).
ENABLED = True
#: The families this step compiles.
FAMILIES = ("II", "III", "IV")
#: The parameter tables in the order the kernel takes them (absent ones are empty arrays).
TABLES = ("base", "amplitude", "omega1", "omega2", "theta1", "theta2", "step_amplitude", "step_centre", "step_rate")
#: Entries of the kernel's scalar array (in the model's dtype).
_LR, _START, _WIDTH, _SCALE, _NEG_WEIGHT, _C_LO, _C_HI, _L_LO, _L_HI = range(9)
#: Sums are reassociated (vectorised dot products); NaN and infinity semantics are kept.
_FASTMATH = frozenset({"reassoc", "contract"})
#: Positive pairs per pass of their dot products, logistic and outer products (their rows stay in cache).
_CHUNK = 256


def _logistic(x, flip, weight, g, y, e):  # pragma: no cover - compiled
    """Logistic losses of logits ``x`` (m,): :math:`w \\sum_i \\log(1 + e^{y_i})` with ``y = -x`` (``flip``,
    positive pairs) or ``x``; ``g = -sigma(y)`` (``flip``, i.e. sigma(x) - 1) or ``w sigma(y)``.

    ``y``, ``e`` are float64 scratch (m,); the sum of ``log(1 + e)`` is the log of a product (one ``log`` per
    512 terms, each factor in [1, 2]), so that only ``exp`` runs per logit, vectorised.
    """
    t = g.dtype.type
    for i in range(x.shape[0]):
        y[i] = -float(x[i]) if flip else float(x[i])
    _exp_minus_abs(y, e)
    loss = 0.0
    for lo in range(0, x.shape[0], 512):
        top, prod, yb, eb = 0.0, 1.0, y[lo:lo + 512], e[lo:lo + 512]  # views: loops over plain indices vectorise
        for i in range(yb.shape[0]):
            top += max(yb[i], 0.0)
            prod *= 1.0 + eb[i]
        loss += top + math.log(prod)
    for i in range(x.shape[0]):
        s = (1.0 if y[i] >= 0.0 else e[i]) / (1.0 + e[i])
        g[i] = t(-s) if flip else t(s) * weight
    return loss * weight


def _dot(a, b):  # pragma: no cover - compiled
    acc = a[0] * b[0]
    for j in range(1, a.shape[0]):
        acc += a[j] * b[j]
    return acc


def _rows(tabs, u, flags):  # pragma: no cover - compiled
    """Word ``u``'s rows: ``(r, o1, o2, t1, t2, A)`` (the frequencies of row 0 for II; stand-ins where absent)."""
    ou = u if flags[0] else 0
    r, o1, o2 = tabs[1][u], tabs[2][ou], tabs[3][ou]
    t1, t2 = (tabs[4][u], tabs[5][u]) if flags[1] else (o1, o2)
    return r, o1, o2, t1, t2, tabs[6][u] if flags[2] else r


def _angles(o1, o2, t1, t2, phase, tau, a):  # pragma: no cover - compiled
    """``a = [Omega1 tau + Theta1; Omega2 tau + Theta2]`` (no phases without ``phase``), (D,)."""
    h = o1.shape[0]
    for o, t_, a_ in ((o1, t1, a[:h]), (o2, t2, a[h:])):  # views: plain indices vectorise
        if phase:
            for j in range(h):
                a_[j] = t_[j] + o[j] * tau
        else:
            for j in range(h):
                a_[j] = o[j] * tau


def _trig(a, sc, dc, fast):  # pragma: no cover - compiled
    """``sc = [sin a1; cos a2]`` (f's basis) and ``dc = [cos a1; -sin a2]`` (its derivative in the angles)."""
    h = a.shape[0] // 2
    _sincos(a[:h], sc[:h], dc[:h], fast)
    d2 = dc[h:]
    _sincos(a[h:], d2, sc[h:], fast)
    for j in range(h):
        d2[j] = -d2[j]


def _step_logit(tabs, u, tau, nums, logistic):  # pragma: no cover - compiled
    """``(k_u, s_n - c_u)`` of the logistic step (zeros without it)."""
    t = nums.dtype.type
    if not logistic:
        return t(0.0), t(0.0)
    return t(math.exp(tabs[8][u, 0])), tau / nums[_SCALE] - tabs[7][u, 0]


def _forward(tabs, words, tau, flags, nums, f, sig, trig, a):  # pragma: no cover - compiled
    """:math:`f_n` of every token into ``f`` (N, D), its logistic step's :math:`\\sigma(z_n)` into ``sig`` and
    ``sc``, ``dc`` (``_trig``) into ``trig`` (2, N, D) for the VJP."""
    t = f.dtype.type
    for n in range(words.shape[0]):
        u, sc, dc = words[n], trig[0, n], trig[1, n]
        r, o1, o2, t1, t2, A = _rows(tabs, u, flags)
        _angles(o1, o2, t1, t2, flags[1], tau[n], a)
        _trig(a, sc, dc, flags[3])
        b, fn = tabs[0][u], f[n]
        for j in range(fn.shape[0]):
            fn[j] = b[j] + r[j] * sc[j]
        if flags[2]:
            k, ds = _step_logit(tabs, u, tau[n], nums, True)
            sig[n] = t(1.0) / (t(1.0) + math.exp(-(k * ds)))
            d = sig[n] - t(0.5)
            for j in range(fn.shape[0]):
                fn[j] += A[j] * d


def _positives(f, H, pair_centre, context, g_f, gp, count):  # pragma: no cover - compiled
    """Step 2, ``_CHUNK`` pairs at a time: the loss, :math:`g_b` into ``gp``, :math:`\\partial L/\\partial f`
    into ``g_f``, the pairs of each token into ``count``."""
    t = f.dtype.type
    p, y, e = np.empty(_CHUNK, f.dtype), np.empty(_CHUNK), np.empty(_CHUNK)
    loss = 0.0
    for lo in range(0, context.shape[0], _CHUNK):
        m = min(_CHUNK, context.shape[0] - lo)
        for b in range(m):
            p[b] = _dot(f[pair_centre[lo + b]], H[context[lo + b]])
        loss += _logistic(p[:m], True, t(1.0), gp[lo:lo + m], y[:m], e[:m])
        for b in range(lo, lo + m):
            n, hv, g = pair_centre[b], H[context[b]], gp[b]
            count[n] += t(1.0)
            gn = g_f[n]
            for j in range(gn.shape[0]):
                gn[j] += g * hv[j]
    return loss


def _negatives_of(n, f, hn, q, weight, g_f, G, train_h, y, e):  # pragma: no cover - compiled
    """Step 3 for token ``n`` whose logits ``q`` (k,) are computed: loss, ``g_f[n]``, ``G``."""
    loss = _logistic(q, False, weight, q, y, e)  # q becomes gamma
    fn, gn = f[n], g_f[n]
    for i in range(q.shape[0]):
        gi, hi = q[i], hn[i]
        for j in range(gn.shape[0]):
            gn[j] += gi * hi[j]
        if train_h:
            Gi = G[i]
            for j in range(gn.shape[0]):
                Gi[j] += gi * fn[j]
    return loss


def _outer4(f, hn, gam, n0, g_f, G, train_h):  # pragma: no cover - compiled
    """``g_f[n0 + r] += gam[r] @ hn`` and ``G += gam.T @ f[n0:n0 + 4]`` for the four tokens ``n0 .. n0 + 3``,
    four negatives per pass over a row of ``g_f`` (four products per load and store)."""
    k, k4 = hn.shape[0], hn.shape[0] - hn.shape[0] % 4
    for r in range(4):
        gn = g_f[n0 + r]
        for i in range(0, k4, 4):
            h0, h1, h2, h3 = hn[i], hn[i + 1], hn[i + 2], hn[i + 3]
            c0, c1, c2, c3 = gam[r, i], gam[r, i + 1], gam[r, i + 2], gam[r, i + 3]
            for j in range(gn.shape[0]):
                gn[j] += c0 * h0[j] + c1 * h1[j] + c2 * h2[j] + c3 * h3[j]
        for i in range(k4, k):
            c, h = gam[r, i], hn[i]
            for j in range(gn.shape[0]):
                gn[j] += c * h[j]
    if train_h:
        f0, f1, f2, f3 = f[n0], f[n0 + 1], f[n0 + 2], f[n0 + 3]
        for i in range(k):
            Gi, c0, c1, c2, c3 = G[i], gam[0, i], gam[1, i], gam[2, i], gam[3, i]
            for j in range(Gi.shape[0]):
                Gi[j] += c0 * f0[j] + c1 * f1[j] + c2 * f2[j] + c3 * f3[j]


def _negatives(f, H, negatives, count, weight, g_f, G, train_h):  # pragma: no cover - compiled
    """Step 3: the shared negatives' loss, :math:`\\partial L/\\partial f` into ``g_f``, :math:`G` into ``G``;
    the logits of four tokens at a time (each negative's row read once for the four)."""
    k, D, N = negatives.shape[0], f.shape[1], f.shape[0]
    t = f.dtype.type
    hn = np.empty((k, D), f.dtype)
    for i in range(k):  # element by element: an array assignment compiles a shape check with its message (seconds)
        for j in range(D):
            hn[i, j] = H[negatives[i], j]
    q, y, e = np.empty((4, k), f.dtype), np.empty(k), np.empty(k)
    loss = 0.0
    for n0 in range(0, N - N % 4, 4):
        f0, f1, f2, f3 = f[n0], f[n0 + 1], f[n0 + 2], f[n0 + 3]
        for i in range(k):
            h = hn[i]
            a0, a1, a2, a3 = t(0.0), t(0.0), t(0.0), t(0.0)
            for j in range(D):
                a0 += f0[j] * h[j]
                a1 += f1[j] * h[j]
                a2 += f2[j] * h[j]
                a3 += f3[j] * h[j]
            q[0, i], q[1, i], q[2, i], q[3, i] = a0, a1, a2, a3
        for r in range(4):
            loss += _logistic(q[r], False, count[n0 + r] / t(k) * weight, q[r], y, e)  # q becomes gamma
        _outer4(f, hn, q, n0, g_f, G, train_h)
    for n in range(N - N % 4, N):
        for i in range(k):
            q[0, i] = _dot(f[n], hn[i])
        loss += _negatives_of(n, f, hn, q[0], count[n] / t(k) * weight, g_f, G, train_h, y, e)
    return loss


def _compass(H, f, negatives, G, pair_centre, context, gp, lr):  # pragma: no cover - compiled
    """Step 4: the negatives' compass rows, then the positives' pair after pair."""
    for i in range(negatives.shape[0]):
        hv, Gi = H[negatives[i]], G[i]
        for j in range(hv.shape[0]):
            hv[j] += Gi[j] * -lr
    for b in range(context.shape[0]):
        fn, hv, st = f[pair_centre[b]], H[context[b]], gp[b] * -lr
        for j in range(hv.shape[0]):
            hv[j] += st * fn[j]


def _token_sums(gn, m, sc, dc, tau, half, A, acc):  # pragma: no cover - compiled
    """Step 5 for one token: ``acc += [g; g sc; g dc; tau g dc; (sigma - 1/2) g]`` with ``g = m gn``; returns
    ``g . A`` (one pass over the coordinates)."""
    ga = gn.dtype.type(0.0)
    for j in range(gn.shape[0]):
        g = gn[j] * m
        gd = g * dc[j]
        acc[0, j] += g
        acc[1, j] += g * sc[j]
        acc[2, j] += gd
        acc[3, j] += gd * tau
        acc[4, j] += g * half
        ga += g * A[j]
    return ga


def _word_sums(tabs, u, tokens, tau, sig, g_f, row_mult, rough, nums, flags, trig, acc):  # pragma: no cover
    """Step 5 for word ``u`` and its ``tokens``: ``acc`` (5, D) (``_token_sums``) and the sums
    ``(dc, dl, st)`` of the centre's and log-rate's steps and of the roughness weights."""
    t = acc.dtype.type
    acc[:] = t(0.0)
    r, o1, o2, t1, t2, A = _rows(tabs, u, flags)
    dc_, dl, st = t(0.0), t(0.0), t(0.0)
    for n in tokens:
        m = row_mult[n if row_mult.shape[0] > 1 else 0]
        ga = _token_sums(g_f[n], m, trig[0, n], trig[1, n], tau[n], sig[n] - t(0.5), A, acc)
        if flags[2]:  # the logistic step: dc = -k gam, dl = k (s - c) gam, gam = (g . A) sigma (1 - sigma)
            k, ds = _step_logit(tabs, u, tau[n], nums, True)
            gam = ga * (sig[n] * (t(1.0) - sig[n]))
            dc_ += -k * gam
            dl += k * ds * gam
        if flags[5]:
            st += rough[n if rough.shape[0] > 1 else 0]
    return dc_, dl, st


def _add_harmonics(r, o, th, acc, lo, st, S, flags, present, factors, fo, fth):  # pragma: no cover - compiled
    """Step 6 for one half (``lo``: 0 or h) of the harmonic rows: amplitudes ``r[lo:lo + h]``, frequencies ``o``
    and phases ``th`` (h,), each step from the rows before it, the roughness's (weight ``st``) included."""
    stS = st * S
    for j in range(o.shape[0]):
        rj, oj = r[lo + j], o[j]
        step_r = acc[1, lo + j]
        if flags[5]:  # II: w = S Omega fixed, dR = w^2 R; III, IV: dR = (S Omega R) Omega S, dOmega = (S Omega R) R S
            step_r -= stS * (oj * S * rj * oj) if flags[0] else st * (oj * S * rj * (oj * S))
        if present[2]:
            step_o = rj * acc[3, lo + j]
            if flags[5]:
                step_o -= stS * (oj * S * rj * rj)
            o[j] += step_o * fo
        if present[4]:
            th[j] += rj * acc[2, lo + j] * fth
        r[lo + j] += step_r * factors[1]


def _add_steps(tabs, u, acc, dc_, dl, st, nums, flags, factors, present):  # pragma: no cover - compiled
    """Step 6 for word ``u``: its rows' steps from the sums of ``_word_sums`` (the VJP is linear in g), the
    roughness's gradient (weight ``st``) included, each table's step times its factor."""
    t = acc.dtype.type
    D, S = acc.shape[1], nums[_SCALE]
    h = D // 2
    r, o1, o2, t1, t2, A = _rows(tabs, u, flags)
    b = tabs[0][u]
    for j in range(D):
        b[j] += acc[0, j] * factors[0]
    _add_harmonics(r, o1, t1, acc, 0, st, S, flags, present, factors, factors[2], factors[4])
    _add_harmonics(r, o2, t2, acc, h, st, S, flags, present, factors, factors[3], factors[5])
    if flags[2]:  # the logistic step; roughness: d/dA = k A / 6, d/dl = k |A|^2 / 12
        kst = t(math.exp(tabs[8][u, 0])) * st if flags[5] else t(0.0)
        dl += t(-1.0 / 12.0) * _dot(A, A) * kst
        for j in range(D):
            A[j] += (acc[4, j] + t(-1.0 / 6.0) * A[j] * kst) * factors[6]
        tabs[7][u, 0] += dc_ * factors[7]
        tabs[8][u, 0] += dl * factors[8]


def _project(tabs, u, nums):  # pragma: no cover - compiled
    """Step 7 for word ``u``: the centre into [c_lo, c_hi], the log-rate into [l_lo, l_hi] (NaN stays NaN)."""
    for i, lo, hi in ((7, nums[_C_LO], nums[_C_HI]), (8, nums[_L_LO], nums[_L_HI])):
        x = tabs[i][u, 0]
        if x < lo:
            tabs[i][u, 0] = lo
        elif x > hi:
            tabs[i][u, 0] = hi


def _update_rows(tabs, words, order, tau, sig, g_f, row_mult, rough, nums, flags, factors, present, trig,
                 acc):  # pragma: no cover - compiled
    """Steps 5-7 word by word (tokens grouped by word: ``order`` sorts ``words``, stably): the sums over the
    word's tokens, all taken at its rows before the step, then its rows' steps, then the projection; every
    other word's rows are apart, so this is the torch ops' gather, steps and ``index_add_``, with each row read
    and written while cached."""
    N, lo = words.shape[0], 0
    while lo < N:
        u, hi = words[order[lo]], lo + 1
        while hi < N and words[order[hi]] == u:
            hi += 1
        dc_, dl, st = _word_sums(tabs, u, order[lo:hi], tau, sig, g_f, row_mult, rough, nums, flags, trig, acc)
        _add_steps(tabs, u, acc, dc_, dl, st, nums, flags, factors, present)
        if flags[2]:
            _project(tabs, u, nums)
        lo = hi


def _first_bad_ids(words, pair_centre, context, negatives, V):  # pragma: no cover - compiled
    """0 if every id lies in its table's range, else 1-4: the first of the four id arrays with one outside."""
    for i, (ids, rows) in enumerate(((words, V), (pair_centre, words.shape[0]), (context, V), (negatives, V))):
        for j in range(ids.shape[0]):
            if ids[j] < 0 or ids[j] >= rows:
                return i + 1
    return 0


def _step(tabs, H, words, order, times, pair_centre, context, negatives, nums, flags, row_mult, rough, factors,
          present):  # pragma: no cover - compiled
    """The whole step (module docstring): ``(summed loss (float64), 0)``, or ``(0, i)`` with nothing written
    when the ``i``-th id array of ``_first_bad_ids`` has an id outside its table.

    ``order``: the permutation that sorts ``words`` stably (int64, (N,)).  ``flags``: per-word frequencies (III,
    IV), phases (IV), logistic step, polynomial sines (float32), train the compass, roughness steps.
    """
    bad = _first_bad_ids(words, pair_centre, context, negatives, H.shape[0])
    if bad:
        return 0.0, bad
    N, D, B, k = words.shape[0], H.shape[1], context.shape[0], negatives.shape[0]
    dt = H.dtype
    tau = np.empty(N, dt)
    for n in range(N):
        tau[n] = (times[n] - nums[_START]) / nums[_WIDTH] * nums[_SCALE]
    f, sig, trig, a = np.empty((N, D), dt), np.zeros(N, dt), np.empty((2, N, D), dt), np.empty(D, dt)
    _forward(tabs, words, tau, flags, nums, f, sig, trig, a)
    g_f, gp, count, G = np.zeros((N, D), dt), np.empty(B, dt), np.zeros(N, dt), np.zeros((k, D), dt)
    loss = _positives(f, H, pair_centre, context, g_f, gp, count)
    loss += _negatives(f, H, negatives, count, nums[_NEG_WEIGHT], g_f, G, flags[4])
    if flags[4]:
        _compass(H, f, negatives, G, pair_centre, context, gp, nums[_LR])
    _update_rows(tabs, words, order, tau, sig, g_f, row_mult, rough, nums, flags, factors, present, trig,
                 np.empty((5, D), dt))
    return loss, 0


#: The compiled functions the step calls and their fast-math flags: ``_kernel`` binds each name to its
#: compiled version before it compiles ``_step`` (numba resolves a global when it compiles the caller).
_HELPERS = {name: _FASTMATH for name in (
    "_logistic", "_dot", "_rows", "_angles", "_trig", "_step_logit", "_forward", "_positives", "_negatives_of",
    "_outer4", "_negatives", "_compass", "_token_sums", "_word_sums", "_add_harmonics", "_add_steps", "_project",
    "_update_rows", "_first_bad_ids")}
_HELPERS.update(_sincos=frozenset(), _exp_minus_abs=frozenset())
_PYTHON = {name: globals()[name] for name in _HELPERS}  # the helpers as written (the names get rebound)


@functools.cache
def _kernel():
    """``_step`` compiled (on first use; cached on disk), its helpers bound to their compiled versions."""
    for name, fastmath in _HELPERS.items():
        globals()[name] = _numba.jit(_PYTHON[name], fastmath)
    return _numba.jit(_step, _FASTMATH)


def _weights(model: Word2Fun) -> list:
    """The tables of :data:`TABLES` (None where the model has none; II's fixed frequencies as one row)."""
    out = []
    for name in TABLES:
        if name in ("omega1", "omega2") and model.family == "II":
            out.append(model.omega_fixed.view(1, -1))
        else:
            module = getattr(model, name, None)
            out.append(None if module is None else module.weight)
    return out


def takes_model(model: Word2Fun) -> bool:
    """Whether :class:`FusedStep` takes ``model``: :data:`ENABLED`, the compiled loops available
    (:func:`~qpnlp.word2fun.pair_loop.available`), a family of :data:`FAMILIES`, contiguous CPU tables of one
    float dtype."""
    if not (ENABLED and model.family in FAMILIES and pair_loop.available()):
        return False
    return _numba.takes(*[w for w in _weights(model) if w is not None], model.compass.weight)


def accepts(model: Word2Fun, negatives: torch.Tensor, *tensors: torch.Tensor | float | None) -> bool:
    """Whether :func:`fused_sgd_step` takes this step: :func:`takes_model`, ``k >= 1`` negatives shared by the
    batch (``negatives`` (k,)), and every tensor among ``tensors`` (the batch, ``roughness_penalty``,
    ``row_lr``; floats and None are skipped) on the CPU."""
    if not (negatives.dim() == 1 and negatives.numel() > 0 and takes_model(model)):
        return False
    return all(t.device.type == "cpu" for t in (negatives, *tensors) if isinstance(t, torch.Tensor))


def _array(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


def _index(t: torch.Tensor, what: str) -> np.ndarray:
    """``t`` as a contiguous int64 array (its range is checked by the kernel, before it writes)."""
    if t.dim() != 1 or t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise ValueError(f"{what} ids must be a 1-D integer tensor; got {t.dtype} of shape {tuple(t.shape)}")
    return _array(t.to(torch.int64).contiguous())


def _row_scales(roughness_penalty, row_lr, lr: float, n: int, dtype: torch.dtype, np_dtype) -> tuple:
    """``(row_mult, rough, smooth)``: :func:`~qpnlp.word2fun.step_sizes.row_step_scales` as arrays of 1 or N
    values in the model's dtype (``dtype``, ``np_dtype`` as numpy's; per-token values checked to be N), and whether
    roughness steps are taken."""
    for t, what in ((row_lr, "row_lr"), (roughness_penalty, "roughness_penalty")):
        if isinstance(t, torch.Tensor) and tuple(t.shape) != (n,):
            raise ValueError(f"{what} must have one value per centre token, shape ({n},); got {tuple(t.shape)}")
    row, rough = row_step_scales(roughness_penalty, row_lr, lr, dtype)
    arrays = (_array(x.contiguous()) if isinstance(x, torch.Tensor) else np.array([x], np_dtype)
              for x in (row, 0.0 if rough is None else rough))
    return (*arrays, rough is not None)


class FusedStep:
    """:func:`fused_sgd_step` bound to one model and its step settings: what does not change between batches
    (the tables as arrays, read and written in place, the flags, the tables' step factors and bounds) is
    read once, so that a training loop pays per batch only for the batch.

    Build it again if the model's parameters are replaced or moved (in-place updates are seen). Raises
    ``ValueError`` unless :func:`takes_model`.
    """

    def __init__(self, model: Word2Fun, negative_weight: float = 1.0, centre_lr: float = STEP_CENTRE_LR):
        if not takes_model(model):
            raise ValueError("the fused step needs numba, family II, III or IV and contiguous CPU tables of one "
                             f"float dtype (fused_step.takes_model); got family {model.family!r}")
        weights, H = _weights(model), model.compass.weight
        self.model, self.dtype, self.H = model, H.dtype, _array(H)
        np_dtype = self.H.dtype
        empty = np.empty((0, 0), np_dtype)
        self.tabs = tuple(empty if w is None else _array(w) for w in weights)
        self.present = tuple(w is not None and not (model.family == "II" and name.startswith("omega"))
                             for name, w in zip(TABLES, weights))
        ts, S = model.time_scale, model.time_scale.scale
        self.factors = np.array([table_lr_factor(name, S, centre_lr) for name in TABLES], np_dtype)
        bounds = step_bounds(model)
        (c_lo, c_hi), (l_lo, l_hi) = bounds.get("step_centre.weight", (0, 1)), bounds.get("step_rate.weight", (0, 1))
        self.nums = np.array([0.0, ts.start, ts.end - ts.start, S, negative_weight, c_lo, c_hi, l_lo, l_hi], np_dtype)
        self.flags = (model.family != "II", model.family == "IV", model.logistic, H.dtype == torch.float32,
                      not model.freeze_compass)
        self.kernel = _kernel()

    def compile(self) -> None:
        """Compile the kernel for the argument types of this step's calls, without running it: loaded from numba's
        cache on disk, or compiled (about half a minute) on the first run after an install.  A training loop calls
        this before it starts its clock (:func:`~qpnlp.word2fun.loop.train_source`); a call compiles if this was not
        done.  Nothing to do under ``NUMBA_DISABLE_JIT=1`` (numba's debugging switch: the kernel is the Python
        function)."""
        if not hasattr(self.kernel, "compile"):
            return
        import numba

        ids, values = np.empty(0, np.int64), np.empty(0, self.H.dtype)
        args = self._kernel_args(ids, ids, values, ids, ids, ids, self.nums, False, values, values)
        self.kernel.compile(tuple(numba.typeof(a) for a in args))

    def _kernel_args(self, words, order, times, pair_centre, context, negatives, nums, smooth, row_mult,
                     rough) -> tuple:
        """The kernel's arguments in ``_step``'s order: the batch's arrays with what this step holds."""
        return (self.tabs, self.H, words, order, times, pair_centre, context, negatives, nums, self.flags + (smooth,),
                row_mult, rough, self.factors, self.present)

    def __call__(self, words: torch.Tensor, times: torch.Tensor, pair_centre: torch.Tensor, context: torch.Tensor,
                 negatives: torch.Tensor, lr: float, roughness_penalty: float | torch.Tensor = 0.0,
                 row_lr: torch.Tensor | None = None) -> torch.Tensor:
        """One step on a batch: the arguments of :func:`fused_sgd_step` after the model's."""
        N, B = words.shape[0], context.shape[0]
        if tuple(times.shape) != (N,) or tuple(pair_centre.shape) != (B,):
            raise ValueError(f"times (N,) and pair_centre (B,) must match words ({N},) and context ({B},); got "
                             f"{tuple(times.shape)} and {tuple(pair_centre.shape)}")
        ids = (_index(words, "word"), _index(pair_centre, "centre token"), _index(context, "context word"),
               _index(negatives, "negative"))
        row_mult, rough, smooth = _row_scales(roughness_penalty, row_lr, lr, N, self.dtype, self.H.dtype)
        nums = self.nums.copy()
        nums[_LR] = lr
        order = _array(torch.sort(words, stable=True).indices)  # sorted here: numba's argsort compiles for seconds
        loss, bad = self.kernel(*self._kernel_args(ids[0], order, _array(times.to(self.dtype).contiguous()), ids[1],
                                                   ids[2], ids[3], nums, smooth, row_mult, rough))
        if bad:  # nothing was written: name the ids
            self.check_ids(words, pair_centre, context, negatives)
        return torch.tensor(loss, dtype=self.dtype)

    def check_ids(self, words: torch.Tensor, pair_centre: torch.Tensor, context: torch.Tensor,
                  negatives: torch.Tensor) -> None:
        """Raise ``IndexError`` naming the first of a batch's id tensors with an id outside its table."""
        V = self.model.vocab_size
        for t, rows, what in ((words, V, "word"), (pair_centre, words.shape[0], "centre token"),
                              (context, V, "context word"), (negatives, V, "negative")):
            check_rows(t, rows, what)


def fused_sgd_step(model: Word2Fun, words: torch.Tensor, times: torch.Tensor, pair_centre: torch.Tensor,
                   context: torch.Tensor, negatives: torch.Tensor, lr: float,
                   roughness_penalty: float | torch.Tensor, row_lr: torch.Tensor | None, negative_weight: float,
                   centre_lr: float) -> torch.Tensor:
    """:func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor` as one compiled call (see :func:`accepts`).

    Same parameters and result (the summed loss before the step, a tensor of the model's dtype), with the
    step sizes and bounds of :mod:`~qpnlp.word2fun.step_sizes`, as in the torch ops.  Raises ``IndexError``
    for ids out of range and ``ValueError`` for shapes that do not match, before anything is written.
    A training loop builds one :class:`FusedStep` instead (the same step, prepared once).

    Parameters
    ----------
    model, words, times, pair_centre, context, negatives, lr : see centre_sgd_step_tensor
        As in :func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor`, for a step :func:`accepts` (a CPU model of
        families II-IV, negatives ``(k,)`` shared by the batch).
    roughness_penalty, row_lr, negative_weight, centre_lr : see centre_sgd_step_tensor
        As in :func:`~qpnlp.word2fun.sgd.centre_sgd_step_tensor`.
    """
    return FusedStep(model, negative_weight, centre_lr)(words, times, pair_centre, context, negatives, lr,
                                                         roughness_penalty, row_lr)
