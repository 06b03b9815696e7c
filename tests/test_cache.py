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


def test_a_hit_survives_a_cache_clear_between_its_reads():
    """The unbounded cache's fast path tested ``key in done`` and then read ``done[key]``: a ``cache_clear`` from
    another thread between the two raised KeyError. Here the clear runs inside the second key comparison (where
    another thread could run), deterministically."""
    @locked_cache(maxsize=None)
    def size(key) -> int:
        return 7

    class Key:
        """An argument equal to every Key; its second comparison clears the cache, as another thread could."""
        compared = 0

        def __hash__(self) -> int:
            return 1

        def __eq__(self, other) -> bool:
            Key.compared += 1
            if Key.compared == 2:
                size.cache_clear()
            return isinstance(other, Key)

    assert size(Key()) == 7
    assert size(Key()) == 7                     # an equal argument, not the same object: compared, not identical


def test_an_unbounded_cache_holds_each_value_once():
    """The unbounded cache kept its values twice, in ``lru_cache`` and in a dict of its own for lock-free hits (two
    structures that a ``cache_clear`` between the two stores left apart); one dict now, whose ``cache_info`` counts
    the computations and the calls that waited for one."""
    import gc

    value = ["vectors"]                                # a list: dicts that hold it are tracked by gc

    @locked_cache(maxsize=None)
    def make(n: int) -> object:
        return value

    assert make(1) is value and make(1) is value                      # the second: a hit without a lock
    assert len([r for r in gc.get_referrers(value) if isinstance(r, dict)]) == 1
    assert make.cache_info() == (0, 1, None, 1) and make.cache_info().currsize == 1
    make.cache_clear()
    assert make.cache_info().currsize == 0 and not [r for r in gc.get_referrers(value) if isinstance(r, dict)]
