"""``qpnlp._cache.locked_cache``: one computation per missing value, and a function that calls itself."""

from __future__ import annotations

import threading

from qpnlp._cache import locked_cache


def test_a_cached_function_may_call_itself():
    """The lock that a call holds was a plain one: a cached function calling itself (a recursion, or a loader that
    loads a part through itself) waited for its own caller for ever."""
    calls: list[int] = []

    @locked_cache(maxsize=None)
    def fib(n: int) -> int:
        calls.append(n)
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(fib(20)), daemon=True)   # a deadlock stays in there
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "the recursive call waited for the lock its caller holds"
    assert result == [6765] and sorted(calls) == list(range(21))                      # each value computed once
    assert fib.cache_info().currsize == 21 and fib.__wrapped__ is not fib
