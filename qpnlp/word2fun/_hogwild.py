"""The threads of Word2Fun's training (``qpnlp.word2fun.loop``): the batch stream prefetched by a background
thread (:func:`prefetch`) and, with ``TrainConfig.workers`` > 1, hogwild workers started and awaited together
(:func:`run_workers`), none left running once the call has returned or raised.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator

__all__ = ["prefetch", "run_workers"]


def prefetch(batches, stop: threading.Event, depth: int = 16) -> tuple[Iterator, threading.Event]:
    """An iterator over ``batches``, produced ``depth`` ahead by a background thread (numpy and torch release the
    GIL), and an event set when that thread has ended.

    The producer gives up when the ``stop`` event is set (a consumer failed),
    and so does the iterator: it sends no more batches, and never waits for
    one the stopped producer will not send. The producer never waits on a full
    queue once ``stop`` is set either, its end mark and its error included: a
    failure with the queue full left it blocked for good, holding its batches.
    """
    q: queue.Queue = queue.Queue(maxsize=depth)
    end = object()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def produce():
        try:
            for b in batches:
                if not put(b):
                    return
            put(end)
        except BaseException as e:  # handed to the consumers
            put(e)
        finally:
            ended.set()

    def consume():
        while not stop.is_set():
            try:
                b = q.get(timeout=0.1)
            except queue.Empty:
                continue
            if b is end:
                return
            if isinstance(b, BaseException):
                raise b
            yield b

    ended = threading.Event()
    threading.Thread(target=produce, name="qpnlp-word2fun-prefetch", daemon=True).start()
    return consume(), ended


def run_workers(task: Callable[[int], object], n: int, stop: threading.Event) -> list:
    """``task(w)`` for ``w`` in ``range(n)``, each in a thread of its own; their results, or the error each raised.

    The threads start working once all have started (a worker that Ctrl-C cut short in ``start()`` sees ``stop``
    and ends); a worker that fails sets ``stop``, so the others give up (the caller stops the producer of their
    stream, and awaits it).  The call returns, or raises (Ctrl-C), only once every started thread has ended: none
    trains the model on after it.
    """
    out: list = [None] * n
    go, ended = threading.Event(), [threading.Event() for _ in range(n)]

    def work(w):
        try:
            go.wait()              # once all have started: a worker Ctrl-C cut short in start() sees stop and ends
            out[w] = task(w)
        except BaseException as e:
            stop.set()
            out[w] = e
        finally:
            ended[w].set()

    threads, started = [threading.Thread(target=work, args=(w,)) for w in range(n)], 0
    try:
        for t in threads:
            t.start()
            started += 1
        go.set()
        for t in threads:
            t.join()
    finally:
        stop.set()
        go.set()
        # Ctrl-C too waits for the threads to end: none trains the model on after the call has raised. Events, not
        # join: a join that Ctrl-C interrupted takes its running thread for ended (Python < 3.13, bpo-45274).
        for event in ended[:started]:
            event.wait()
    return out
