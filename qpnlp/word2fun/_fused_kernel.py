"""The compiled kernel of :mod:`qpnlp.word2fun.fused_step`: Word2Fun's whole SGD step as numba loops.

The steps 1-7 that :mod:`qpnlp.word2fun.fused_step`'s docstring writes out, as plain loops over arrays (``_step``),
``_run``, which takes a run of batches one ``_step`` after another, and ``_kernel``, which compiles ``_run`` on
first use.  :class:`~qpnlp.word2fun.fused_step.FusedStep` holds the arrays and calls the kernel, with a run of one
batch per step, and :func:`~qpnlp.word2fun.fused_runs.run_steps` with a run of up to 16: the one compiled entry
point, so that a batch stepped alone and in a run is the same machine code.  ``_step`` and its fast-math helpers
are inlined into ``_run`` (numba's ``inline="always"``), so that this machine code is also the same in a process
that compiles it and in one that loads it from the disk cache.  Compiled apart, they were not: numba links a copy
of each helper into every loop that calls it (LLVM's ``linkonce_odr``, optimised again there, which under
``reassoc`` may sum in another order) and the process binds each call to the copy it loaded first, so which copy
ran depended on what the process had compiled or loaded before (two entry points, ``_step`` for a batch and
``_run`` for a run, differed in the last bit; a process that compiled the kernel and one that loaded it too).
Private: nothing here checks its arguments (the callers check shapes and ids before they call).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from qpnlp import _numba
from qpnlp._elementary import exp_minus_abs as _exp_minus_abs  # both rebound to compiled versions by
from qpnlp._elementary import sincos as _sincos  # _kernel, as the helpers below

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
    """The whole step (:mod:`qpnlp.word2fun.fused_step`'s docstring): ``(summed loss (float64), 0)``, or
    ``(0, i)`` with nothing written when the ``i``-th id array of ``_first_bad_ids`` has an id outside its table.

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


def _run(tabs, H, words, order, times, pair_row, context, rows, pairs, negatives, lrs, nums, flags, row_mult,
         rough, factors, present, base, total):  # pragma: no cover - compiled
    """The batches of a run, one ``_step`` each: ``(total + their losses, -1)``, or, when batch ``i``'s ids do not
    fit their tables, ``(total + the losses before it, i)`` with batch ``i`` not applied.

    Token arrays (``words``, ``order``, ``times``, ``row_mult``, ``rough``) cover the run's tokens; batch ``i``'s
    are ``rows[i, 0]:rows[i, 1]`` of them (``row_mult``, ``rough`` of one value: that value for every token); its
    pairs ``pairs[i, 0]:pairs[i, 1]`` of the chunk's ``pair_row`` (rows of the chunk: minus ``base``, the run's
    first) and ``context``, its negatives ``negatives[i]`` and learning rate ``lrs[i]`` (written into ``nums``).
    """
    t = H.dtype.type
    for i in range(rows.shape[0]):
        r0, r1, p0, p1 = rows[i, 0], rows[i, 1], pairs[i, 0], pairs[i, 1]
        pc = np.empty(p1 - p0, np.int64)
        for b in range(p1 - p0):
            pc[b] = pair_row[p0 + b] - base - r0
        nums[_LR] = lrs[i]
        rm = row_mult if row_mult.shape[0] == 1 else row_mult[r0:r1]
        rg = rough if rough.shape[0] == 1 else rough[r0:r1]
        loss, bad = _step(tabs, H, words[r0:r1], order[r0:r1], times[r0:r1], pc, context[p0:p1], negatives[i],
                          nums, flags, rm, rg, factors, present)
        if bad:
            return total, i
        total += float(t(loss))  # the batch's loss in the model's dtype, as the loop adds it
    return total, -1


#: The functions ``_run`` calls and their fast-math flags: ``_kernel`` binds each name to its numba dispatcher
#: before it compiles ``_run`` (numba resolves a global when it compiles the caller). Those under ``_FASTMATH``
#: (``_step`` and its helpers) are inlined into ``_run``; ``_sincos`` and ``_exp_minus_abs``, IEEE operation for
#: operation, are compiled on their own (a copy optimised again rounds the same).
_HELPERS = {name: _FASTMATH for name in (
    "_step", "_logistic", "_dot", "_rows", "_angles", "_trig", "_step_logit", "_forward", "_positives",
    "_negatives_of", "_outer4", "_negatives", "_compass", "_token_sums", "_word_sums", "_add_harmonics", "_add_steps",
    "_project", "_update_rows", "_first_bad_ids")}
_HELPERS.update(_sincos=frozenset(), _exp_minus_abs=frozenset())
_PYTHON = {name: globals()[name] for name in _HELPERS}  # the helpers as written (the names get rebound)


@functools.cache
def _kernel():
    """``_run`` compiled (on first use; cached on disk) with ``_step`` and its fast-math helpers inlined
    (``qpnlp._numba.jit`` with ``inline``): one function, so that a process that compiles it and one that loads it
    from the cache run the same machine code (compiled apart, each helper's copy linked into the step was optimised
    again there, and processes bound calls to different copies: their losses differed in the last bits)."""
    return _numba.jit_calling(_run, _dispatchers(), _FASTMATH)


def _dispatchers() -> dict:
    """The numba dispatcher of each name of ``_HELPERS``: inlined where compiled with ``_FASTMATH``."""
    return {name: _numba.jit(_PYTHON[name], fastmath, inline=bool(fastmath)) for name, fastmath in _HELPERS.items()}
