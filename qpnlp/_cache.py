"""A per-process cache that computes each value once, also when several threads ask for it at once.

``functools.lru_cache`` is safe to call from several threads, but it does not hold its callers back while the
value is computed: two threads asking for the same missing value both compute it. For the pretrained vectors
(seconds to minutes, and their size in memory per copy) each thread of a thread pool then read the file again.
:func:`locked_cache` computes a missing value under one lock per value (per arguments), so that the threads asking
for it wait and get that same object, while a thread asking for another value (another file) goes on.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["locked_cache"]

T = TypeVar("T")

_MISSING = object()     # a value no function returns: "not computed yet" in the fast path of ``locked_cache``


def locked_cache(maxsize: int | None) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """``functools.lru_cache(maxsize)`` whose calls hold one lock per arguments: a value missing from the cache is
    computed once, by the first thread that asks for it, and the threads asking for it meanwhile get it; threads
    asking for other values (another vectors file) go on at the same time (one lock per function made a thread
    reading a small file wait for another reading a large one).

    The wrapper keeps ``cache_clear``, ``cache_info`` and ``__wrapped__`` (the function itself) of ``lru_cache``;
    an unbounded cache (``maxsize=None``) answers a hit from a dict of its own, without a lock, so its
    ``cache_info().hits`` counts only the hits that waited for a computation.
    The lock of given arguments lives while a call with them runs or waits; ``new_lock`` makes it, a reentrant
    one: the function may call itself (with a plain lock a recursive call waited for its own caller for ever).
    Two such functions that call each other from two threads could still wait on each other; none of qpnlp's do.

    >>> calls = []
    >>> @locked_cache(maxsize=1)
    ... def answer():
    ...     calls.append(1)
    ...     return 42
    >>> answer(), answer(), len(calls)
    (42, 42, 1)
    """
    def decorate(fn: Callable[..., T]) -> Callable[..., T]:
        cached = functools.lru_cache(maxsize=maxsize)(fn)
        guard, held = threading.Lock(), {}          # arguments -> [their lock, the calls holding or awaiting it]
        # unbounded: the values computed, read without a lock (a dict read is atomic): a hit costs a lookup, not a
        # lock made and two taken (2.4 us against 0.07 for ``qpnlp._numba.jit``, called in every training step)
        done: dict | None = {} if maxsize is None else None

        @functools.wraps(fn)
        def once(*args, **kwargs):
            key = (args, tuple(kwargs.items()))     # unhashable arguments: lru_cache's TypeError, from here
            if done is not None:
                value = done.get(key, _MISSING)     # one read: a cache_clear between a test and a read: KeyError
                if value is not _MISSING:
                    return value
            with guard:
                entry = held.get(key)
                if entry is None:
                    entry = held[key] = [once.new_lock(), 0]
                entry[1] += 1
            try:
                with entry[0]:
                    value = cached(*args, **kwargs)
                    if done is not None:
                        done[key] = value
                    return value
            finally:
                with guard:
                    entry[1] -= 1
                    if not entry[1]:
                        del held[key]

        def cache_clear() -> None:
            cached.cache_clear()
            if done is not None:
                done.clear()

        once.new_lock, once.cache_clear, once.cache_info = threading.RLock, cache_clear, cached.cache_info
        return once

    return decorate
