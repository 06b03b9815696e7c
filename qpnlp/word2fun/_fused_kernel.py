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

``_step`` cuts each of its stages into ``parts`` that write apart, run by numba's threads in the kernel compiled
with ``parallel`` (``prange``; ``range`` in the serial kernel and in plain Python): the tokens' functions (step 1)
by ranges of tokens; the positives' logistic by chunks of ``_CHUNK`` pairs, each chunk's loss kept apart and the
losses summed in order at the end; the gradients of the tokens' functions (steps 2-3) by ranges of tokens whose
bounds are multiples of 4 (the negatives' groups of four stay whole), each part reading every pair and taking
those of its tokens in the batch's order; :math:`G` by ranges of negatives, each row summing the tokens' products
four at a time in the tokens' order; the rows' steps (5-7) by ranges of words. Every number is computed by the same
operations in the same order as by one part, so a step's result does not depend on ``parts``: a run of one worker
makes the same updates, bit for bit, in one thread or several (``tests/word2fun/test_fused_step.py`` compares 1,
2, 3 and 7 parts, and the step before the parts).

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
#: The parts' loops (``_step``): numba's ``prange`` once ``_kernel`` has bound it, ``range`` in plain Python.
prange = range
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
    loss = _log1p_sum(y, e)
    for i in range(x.shape[0]):
        s = (1.0 if y[i] >= 0.0 else e[i]) / (1.0 + e[i])
        g[i] = t(-s) if flip else t(s) * weight
    return loss * weight


def _log1p_sum(y, e):  # pragma: no cover - compiled
    """:math:`\\sum_i \\log(1 + e^{y_i})` from ``y`` and ``e = e^{-|y|}`` (float64, (m,)): :math:`\\sum_i
    \\max(y_i, 0)` plus the log of the product of the :math:`1 + e_i` (one ``log`` per 512 terms)."""
    loss = 0.0
    for lo in range(0, y.shape[0], 512):
        top, prod, yb, eb = 0.0, 1.0, y[lo:lo + 512], e[lo:lo + 512]  # views: loops over plain indices vectorise
        for i in range(yb.shape[0]):
            top += max(yb[i], 0.0)
            prod *= 1.0 + eb[i]
        loss += top + math.log(prod)
    return loss


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


def _forward(tabs, words, tau, flags, nums, f, sig, trig, lo, hi):  # pragma: no cover - compiled
    """:math:`f_n` of tokens ``lo .. hi - 1`` into ``f`` (N, D), its logistic step's :math:`\\sigma(z_n)` into
    ``sig`` and ``sc``, ``dc`` (``_trig``) into ``trig`` (2, N, D) for the VJP."""
    t = f.dtype.type
    a = np.empty(f.shape[1], f.dtype)
    for n in range(lo, hi):
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


def _pair_steps(f, H, pair_centre, context, gp, y, e, g_f, count, lo, hi):  # pragma: no cover - compiled
    """Step 2 for the pairs whose centre token is one of ``lo .. hi - 1``, in the batch's order, ``_CHUNK`` at a
    time: :math:`g_b` into ``gp`` (B,), the logistic's ``y``, ``e`` (float64, (B,)) for :func:`_positives_loss`,
    :math:`\\partial L/\\partial f_n \\mathrel{+}= g_b h_{c(b)}` into ``g_f`` and the pairs of each token into
    ``count``."""
    t = f.dtype.type
    own, m = np.empty(context.shape[0], np.int64), 0
    for b in range(context.shape[0]):
        if lo <= pair_centre[b] < hi:
            own[m] = b
            m += 1
    p, g, yc, ec = np.empty(_CHUNK, f.dtype), np.empty(_CHUNK, f.dtype), np.empty(_CHUNK), np.empty(_CHUNK)
    for c0 in range(0, m, _CHUNK):
        k = min(_CHUNK, m - c0)
        for i in range(k):
            b = own[c0 + i]
            p[i] = _dot(f[pair_centre[b]], H[context[b]])
        _logistic(p[:k], True, t(1.0), g[:k], yc[:k], ec[:k])
        for i in range(k):
            b = own[c0 + i]
            n, hv = pair_centre[b], H[context[b]]
            gp[b], y[b], e[b] = g[i], yc[i], ec[i]
            count[n] += t(1.0)
            gn = g_f[n]
            for j in range(gn.shape[0]):
                gn[j] += g[i] * hv[j]


def _positives_loss(y, e):  # pragma: no cover - compiled
    """Step 2's loss: :func:`_log1p_sum` of each ``_CHUNK`` pairs in the batch's order, summed in that order."""
    loss = 0.0
    for lo in range(0, y.shape[0], _CHUNK):
        hi = min(lo + _CHUNK, y.shape[0])
        loss += _log1p_sum(y[lo:hi], e[lo:hi])
    return loss


def _add_combination(out, coefs, rows):  # pragma: no cover - compiled
    """``out += coefs @ rows``: ``out`` (D,), ``coefs`` (m,), ``rows`` (m, D), four rows per pass over ``out``
    (four products per load and store), then the last ``m % 4``."""
    m, m4 = coefs.shape[0], coefs.shape[0] - coefs.shape[0] % 4
    for i in range(0, m4, 4):
        r0, r1, r2, r3 = rows[i], rows[i + 1], rows[i + 2], rows[i + 3]
        c0, c1, c2, c3 = coefs[i], coefs[i + 1], coefs[i + 2], coefs[i + 3]
        for j in range(out.shape[0]):
            out[j] += c0 * r0[j] + c1 * r1[j] + c2 * r2[j] + c3 * r3[j]
    for i in range(m4, m):
        c, r = coefs[i], rows[i]
        for j in range(out.shape[0]):
            out[j] += c * r[j]


def _negative_logistic(f, hn, count, weight, g_f, gam, token_loss, lo, hi):  # pragma: no cover - compiled
    """Step 3 for the tokens ``lo .. hi - 1`` (``lo`` a multiple of 4): :math:`\\gamma_{n\\cdot}` into ``gam``
    (N, k), each token's loss into ``token_loss`` (float64, (N,)), :math:`\\partial L/\\partial f` into ``g_f``;
    the logits of four tokens at a time (each negative's row read once for the four)."""
    k, D, N = hn.shape[0], f.shape[1], f.shape[0]
    t = f.dtype.type
    y, e = np.empty(k), np.empty(k)
    top = min(hi, N - N % 4)
    for n0 in range(lo, top, 4):
        f0, f1, f2, f3 = f[n0], f[n0 + 1], f[n0 + 2], f[n0 + 3]
        for i in range(k):
            h = hn[i]
            a0, a1, a2, a3 = t(0.0), t(0.0), t(0.0), t(0.0)
            for j in range(D):
                a0 += f0[j] * h[j]
                a1 += f1[j] * h[j]
                a2 += f2[j] * h[j]
                a3 += f3[j] * h[j]
            gam[n0, i], gam[n0 + 1, i], gam[n0 + 2, i], gam[n0 + 3, i] = a0, a1, a2, a3
        for r in range(4):
            q = gam[n0 + r]
            token_loss[n0 + r] = _logistic(q, False, count[n0 + r] / t(k) * weight, q, y, e)  # q becomes gamma
        for r in range(4):                     # dL/df of the four tokens: their gammas times the negatives' rows
            _add_combination(g_f[n0 + r], gam[n0 + r], hn)
    for n in range(max(lo, top), hi):  # the last N % 4 tokens, one at a time
        q, gn = gam[n], g_f[n]
        for i in range(k):
            q[i] = _dot(f[n], hn[i])
        token_loss[n] = _logistic(q, False, count[n] / t(k) * weight, q, y, e)
        for i in range(k):
            gi, hi_ = q[i], hn[i]
            for j in range(gn.shape[0]):
                gn[j] += gi * hi_[j]


def _negative_compass_grad(f, gam, Gi, i):  # pragma: no cover - compiled
    """Step 3's :math:`G_i = \\sum_n \\gamma_{ni} f_n` into ``Gi`` ((D,), zeros), the tokens four at a time in their
    order (summed as when the tokens' steps ran one after another)."""
    _add_combination(Gi, gam[:, i], f)


def _compass(H, f, negatives, gam, G, pair_centre, context, gp, lr, part, parts):  # pragma: no cover - compiled
    """Step 4 for the compass rows ``v`` with ``v % parts == part``: the negatives' (:math:`G_i` first), in their
    order, then the positives' pair after pair; each row takes its steps in the order of the whole step's."""
    for i in range(negatives.shape[0]):
        if negatives[i] % parts == part:
            hv, Gi = H[negatives[i]], G[i]
            _negative_compass_grad(f, gam, Gi, i)
            for j in range(hv.shape[0]):
                hv[j] += Gi[j] * -lr
    for b in range(context.shape[0]):
        if context[b] % parts == part:
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


def _update_rows(tabs, words, order, tau, sig, g_f, row_mult, rough, nums, flags, factors, present, trig, lo,
                 hi):  # pragma: no cover - compiled
    """Steps 5-7 word by word for the sorted tokens ``order[lo:hi]`` (``lo``, ``hi`` where a word's tokens start:
    ``order`` sorts ``words``, stably): the sums over the word's tokens, all taken at its rows before the step,
    then its rows' steps, then the projection; every other word's rows are apart, so this is the torch ops'
    gather, steps and ``index_add_``, with each row read and written while cached."""
    acc = np.empty((5, g_f.shape[1]), g_f.dtype)
    while lo < hi:
        u, end = words[order[lo]], lo + 1
        while end < hi and words[order[end]] == u:
            end += 1
        dc_, dl, st = _word_sums(tabs, u, order[lo:end], tau, sig, g_f, row_mult, rough, nums, flags, trig, acc)
        _add_steps(tabs, u, acc, dc_, dl, st, nums, flags, factors, present)
        if flags[2]:
            _project(tabs, u, nums)
        lo = end


def _cuts(n, parts, multiple):  # pragma: no cover - compiled
    """``parts + 1`` bounds that cut ``0 .. n`` into ``parts`` ranges of about equal size, each inner bound a
    multiple of ``multiple``: part ``p`` is ``cut[p] .. cut[p + 1] - 1``."""
    cut = np.empty(parts + 1, np.int64)
    for p in range(parts + 1):
        cut[p] = min(n, (n * p // parts) // multiple * multiple)
    cut[parts] = n
    return cut


def _word_cuts(words, order, parts):  # pragma: no cover - compiled
    """``_cuts`` of the sorted tokens ``order``, each inner bound moved forward to where a word's tokens start."""
    N = words.shape[0]
    cut = _cuts(N, parts, 1)
    for p in range(1, parts):
        c = max(cut[p], cut[p - 1])
        while 0 < c < N and words[order[c]] == words[order[c - 1]]:
            c += 1
        cut[p] = c
    return cut


def _first_bad_ids(words, pair_centre, context, negatives, V):  # pragma: no cover - compiled
    """0 if every id lies in its table's range, else 1-4: the first of the four id arrays with one outside."""
    for i, (ids, rows) in enumerate(((words, V), (pair_centre, words.shape[0]), (context, V), (negatives, V))):
        for j in range(ids.shape[0]):
            if ids[j] < 0 or ids[j] >= rows:
                return i + 1
    return 0


def _gather(H, negatives):  # pragma: no cover - compiled
    """The negatives' compass rows, (k, D)."""
    k, D = negatives.shape[0], H.shape[1]
    hn = np.empty((k, D), H.dtype)
    for i in range(k):  # element by element: an array assignment compiles a shape check with its message (seconds)
        for j in range(D):
            hn[i, j] = H[negatives[i], j]
    return hn


def _step(tabs, H, words, order, times, pair_centre, context, negatives, nums, flags, row_mult, rough, factors,
          present, parts):  # pragma: no cover - compiled
    """The whole step (:mod:`qpnlp.word2fun.fused_step`'s docstring): ``(summed loss (float64), 0)``, or
    ``(0, i)`` with nothing written when the ``i``-th id array of ``_first_bad_ids`` has an id outside its table.

    ``order``: the permutation that sorts ``words`` stably (int64, (N,)).  ``flags``: per-word frequencies (III,
    IV), phases (IV), logistic step, polynomial sines (float32), train the compass, roughness steps.  ``parts``:
    each stage is cut into this many parts (``prange``: in parallel where compiled so), which write apart and
    each compute what the whole stage would, in the same order: the result does not depend on ``parts``.
    """
    bad = _first_bad_ids(words, pair_centre, context, negatives, H.shape[0])
    if bad:
        return 0.0, bad
    N, D, B, k = words.shape[0], H.shape[1], context.shape[0], negatives.shape[0]
    dt = H.dtype
    tau = np.empty(N, dt)
    for n in range(N):
        tau[n] = (times[n] - nums[_START]) / nums[_WIDTH] * nums[_SCALE]
    f, sig, trig = np.empty((N, D), dt), np.zeros(N, dt), np.empty((2, N, D), dt)
    tokens, gp, y, e = _cuts(N, parts, 4), np.empty(B, dt), np.empty(B), np.empty(B)
    g_f, count, gam, token_loss, hn = np.zeros((N, D), dt), np.zeros(N, dt), np.empty((N, k), dt), np.empty(N), \
        _gather(H, negatives)
    for p in prange(parts):  # steps 1-3 of the part's tokens and of their pairs
        lo, hi = tokens[p], tokens[p + 1]
        _forward(tabs, words, tau, flags, nums, f, sig, trig, lo, hi)
        _pair_steps(f, H, pair_centre, context, gp, y, e, g_f, count, lo, hi)
        _negative_logistic(f, hn, count, nums[_NEG_WEIGHT], g_f, gam, token_loss, lo, hi)
    G, rows_at = np.zeros((k, D), dt), _word_cuts(words, order, parts)
    for p in prange(parts):  # step 4 for the part's compass rows, steps 5-7 for its words
        if flags[4]:
            _compass(H, f, negatives, gam, G, pair_centre, context, gp, nums[_LR], p, parts)
        _update_rows(tabs, words, order, tau, sig, g_f, row_mult, rough, nums, flags, factors, present, trig,
                     rows_at[p], rows_at[p + 1])
    loss, neg = _positives_loss(y, e), 0.0
    for n in range(N):
        neg += token_loss[n]
    return loss + neg, 0


def _run(tabs, H, words, order, times, pair_row, context, rows, pairs, negatives, lrs, nums, flags, row_mult,
         rough, factors, present, base, total, parts):  # pragma: no cover - compiled
    """The batches of a run, one ``_step`` each (its stages cut into ``parts``): ``(total + their losses, -1)``,
    or, when batch ``i``'s ids do not fit their tables, ``(total + the losses before it, i)`` with batch ``i`` not
    applied.

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
                          nums, flags, rm, rg, factors, present, parts)
        if bad:
            return total, i
        total += float(t(loss))  # the batch's loss in the model's dtype, as the loop adds it
    return total, -1


#: The functions ``_run`` calls and their fast-math flags: ``_kernel`` binds each name to its numba dispatcher
#: before it compiles ``_run`` (numba resolves a global when it compiles the caller). Those under ``_FASTMATH``
#: (``_step`` and its helpers) are inlined into ``_run``; ``_sincos`` and ``_exp_minus_abs``, IEEE operation for
#: operation, are compiled on their own (a copy optimised again rounds the same).
_HELPERS = {name: _FASTMATH for name in (
    "_step", "_logistic", "_dot", "_rows", "_angles", "_trig", "_step_logit", "_forward", "_log1p_sum",
    "_pair_steps", "_positives_loss", "_add_combination", "_negative_logistic", "_negative_compass_grad", "_compass",
    "_token_sums", "_word_sums", "_add_harmonics", "_add_steps", "_project", "_update_rows", "_cuts", "_word_cuts",
    "_first_bad_ids", "_gather")}
_HELPERS.update(_sincos=frozenset(), _exp_minus_abs=frozenset())
_PYTHON = {name: globals()[name] for name in _HELPERS}  # the helpers as written (the names get rebound)


@functools.cache
def _kernel(parallel: bool = False):
    """``_run`` compiled (on first use; cached on disk), its parts in threads with ``parallel`` (the module
    docstring), with ``_step`` and its fast-math helpers inlined
    (``qpnlp._numba.jit`` with ``inline``): one function, so that a process that compiles it and one that loads it
    from the cache run the same machine code (compiled apart, each helper's copy linked into the step was optimised
    again there, and processes bound calls to different copies: their losses differed in the last bits)."""
    import numba

    return _numba.jit_calling(_run, {**_dispatchers(), "prange": numba.prange}, _FASTMATH, parallel)


def _dispatchers() -> dict:
    """The numba dispatcher of each name of ``_HELPERS``: inlined where compiled with ``_FASTMATH``."""
    return {name: _numba.jit(_PYTHON[name], fastmath, inline=bool(fastmath)) for name, fastmath in _HELPERS.items()}
