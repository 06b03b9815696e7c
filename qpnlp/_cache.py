"""A per-process cache that computes each value once, also when several threads ask for it at once.

``functools.lru_cache`` is safe to call from several threads, but it does not hold its callers back while the
value is computed: two threads asking for the same missing value both compute it. For the pretrained vectors
(seconds to minutes, and their size in memory per copy) each thread of a thread pool then read the file again.
:func:`locked_cache` computes a missing value under one lock per function, so that the others wait for it and
get that same object.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["locked_cache"]

T = TypeVar("T")


def locked_cache(maxsize: int | None) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """``functools.lru_cache(maxsize)`` whose calls hold one lock (per decorated function): a value missing from
    the cache is computed once, by the first thread that asks for it, and the threads asking meanwhile get it.

    The wrapper keeps ``cache_clear``, ``cache_info`` and ``__wrapped__`` (the function itself) of ``lru_cache``;
    its ``lock`` is the lock its calls hold, a reentrant one: the function may call itself (with a plain lock a
    recursive call waited for its own caller for ever). Two such functions that call each other from two threads
    could still wait on each other; none of qpnlp's do.

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

        @functools.wraps(fn)
        def once(*args, **kwargs):
            with once.lock:
                return cached(*args, **kwargs)

        once.lock, once.cache_clear, once.cache_info = threading.RLock(), cached.cache_clear, cached.cache_info
        return once

    return decorate
