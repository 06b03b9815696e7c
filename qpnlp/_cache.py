"""A per-process cache that computes each value once, also when several threads ask for it at once.

``functools.lru_cache`` is safe to call from several threads, but it does not hold its callers back while the
value is computed: two threads asking for the same missing value both compute it. For the pretrained vectors
(seconds to minutes, and their size in memory per copy) each thread of a thread pool then read the file again.
:func:`locked_cache` computes a missing value under one lock per value (per arguments), so that the threads asking
for it wait and get that same object, while a thread asking for another value (another file) goes on.
"""

from __future__ import annotations

import collections
import functools
import os
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["locked_cache"]

T = TypeVar("T")

_MISSING = object()     # a value no function returns: "not computed yet" in the fast path of ``locked_cache``

#: What ``cache_info()`` returns: the fields of ``functools.lru_cache``'s.
CacheInfo = collections.namedtuple("CacheInfo", ["hits", "misses", "maxsize", "currsize"])


class _Unbounded:
    """``functools.lru_cache(maxsize=None)(fn)`` in one dict, keyed by the key of a call that :func:`locked_cache`
    makes, that a caller may also read without computing (``get``: lock-free, a dict read being atomic). ``hits`` of
    ``cache_info`` counts the calls of :meth:`fill` that found their value computed (the calls that waited for it),
    ``misses`` the computations."""

    def __init__(self, fn: Callable[..., T]):
        self.fn, self.values, self.counts, self.lock = fn, {}, [0, 0], threading.Lock()
        self.get = self.values.get              # bound once: cache_clear empties this same dict

    def fill(self, key, args: tuple, kwargs: dict) -> T:
        """The value of ``key``, ``fn(*args, **kwargs)`` computed if missing (the caller holds the key's lock)."""
        value = self.values.get(key, _MISSING)
        with self.lock:                         # calls with other arguments count at the same time
            self.counts[value is _MISSING] += 1      # [hits, misses]
        if value is _MISSING:
            value = self.values[key] = self.fn(*args, **kwargs)
        return value

    def cache_clear(self) -> None:
        self.values.clear()

    def cache_info(self) -> CacheInfo:
        return CacheInfo(*self.counts, None, len(self.values))


def locked_cache(maxsize: int | None) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """``functools.lru_cache(maxsize)`` whose calls hold one lock per arguments: a value missing from the cache is
    computed once, by the first thread that asks for it, and the threads asking for it meanwhile get it; threads
    asking for other values (another vectors file) go on at the same time (one lock per function made a thread
    reading a small file wait for another reading a large one).

    The wrapper keeps ``cache_clear``, ``cache_info`` and ``__wrapped__`` (the function itself) of ``lru_cache``;
    an unbounded cache (``maxsize=None``) is one dict (:class:`_Unbounded`) that answers a hit without a lock: a
    hit costs a lookup, not a lock made and two taken (2.4 us against 0.07 for ``qpnlp._numba.jit``, called in
    every training step), and its ``cache_info().hits`` counts only the hits that waited for a computation.
    The lock of given arguments lives while a call with them runs or waits; ``new_lock`` makes it, a reentrant
    one: the function may call itself (with a plain lock a recursive call waited for its own caller for ever).
    Two such functions that call each other from two threads could still wait on each other; none of qpnlp's do.

    A child process made by ``os.fork`` (a DataLoader worker, a ``multiprocessing`` pool on Linux) holds a copy of
    every lock as it was, but only the thread that forked: the lock of a value another thread was computing at
    that moment stayed held for ever there, and the child's first call for that value waited for ever. The child
    starts with no locks held (``os.register_at_fork``), and computes such a value itself. The registration keeps
    the wrapper alive: decorate module-level functions, not a function made per call.

    >>> calls = []
    >>> @locked_cache(maxsize=1)
    ... def answer():
    ...     calls.append(1)
    ...     return 42
    >>> answer(), answer(), len(calls)
    (42, 42, 1)
    """
    def decorate(fn: Callable[..., T]) -> Callable[..., T]:
        if maxsize is None:                         # one dict, read without a lock
            cached = _Unbounded(fn)
            lookup, compute = cached.get, cached.fill
        else:                                       # a bounded cache has no lock-free read
            cached = functools.lru_cache(maxsize=maxsize)(fn)
            lookup, compute = None, lambda key, args, kwargs: cached(*args, **kwargs)
        guard, held = threading.Lock(), {}          # arguments -> [their lock, the calls holding or awaiting it]

        @functools.wraps(fn)
        def once(*args, **kwargs):
            key = (args, tuple(kwargs.items()))     # unhashable arguments: lru_cache's TypeError, from here
            if lookup is not None:
                value = lookup(key, _MISSING)       # one read: a cache_clear between a test and a read: KeyError
                if value is not _MISSING:
                    return value
            with guard:
                entry = held.get(key)
                if entry is None:
                    entry = held[key] = [once.new_lock(), 0]
                entry[1] += 1
            try:
                with entry[0]:
                    return compute(key, args, kwargs)
            finally:
                with guard:
                    entry[1] -= 1
                    if not entry[1] and held.get(key) is entry:     # a forked child may have made a new one
                        del held[key]

        def forget_locks() -> None:
            """In a forked child: the locks of the calls the parent's other threads ran (not in the child) let go."""
            nonlocal guard
            guard = threading.Lock()
            held.clear()
            if isinstance(cached, _Unbounded):
                cached.lock = threading.Lock()

        if hasattr(os, "register_at_fork"):         # POSIX
            os.register_at_fork(after_in_child=forget_locks)
        once.new_lock, once.cache_clear, once.cache_info = threading.RLock, cached.cache_clear, cached.cache_info
        return once

    return decorate
