"""Training Word2Fun: :func:`fit` (corpus in, vectors out) and the SGD loop it runs.

:func:`fit` is the one entry point: it builds the vocabulary (dense ids, no
special tokens) and the model, optionally pre-trains a static model whose
target vectors become the frozen compass (compass-aligned training), trains
by skip-gram with negative sampling, saves a checkpoint after every epoch if
asked, and returns the :class:`~qpnlp.word2fun.keyed_vectors.KeyedVectors`
with the training statistics.

The loop (:func:`train_word2fun`) is minibatch SGD without autograd: batches
hold whole centre tokens with all their pairs
(:func:`~qpnlp.data.skipgram.iter_centre_batches`), :math:`f(u, t)` is
computed once per centre token and its gradient written out
(:func:`~qpnlp.word2fun.sgd.centre_sgd_step`), only the rows a batch reads
are updated, and several hogwild threads can share the model
(``TrainConfig.workers``).

Example
-------
>>> from qpnlp.data import TimestampedCorpus
>>> docs = [(1900 + i % 10, ["war", "peace", "treaty", "army"][i % 3:] + ["trade"]) for i in range(200)]
>>> result = fit(TimestampedCorpus.from_pairs(docs), TrainConfig(epochs=1), dim=4, min_count=1)
>>> len(result.vectors), result.vectors.time_span
(5, (1900.0, 1909.0))
"""

from __future__ import annotations

import dataclasses
import os
import time as _time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
import torch

from qpnlp.data.skipgram import NegativeSampler, iter_centre_batches, keep_probabilities
from qpnlp.data.timestamped import TimestampedCorpus
from qpnlp.data.vocab import Vocabulary
from qpnlp.word2fun.functions import SINUSOIDAL_FAMILIES, TimeScale
from qpnlp.word2fun.keyed_vectors import KeyedVectors
from qpnlp.word2fun.model import Word2Fun, Word2FunConfig
from qpnlp.word2fun.sgd import centre_sgd_step

__all__ = ["COMPASS_MODES", "TrainConfig", "TrainStats", "FitResult", "fit", "train_word2fun"]

COMPASS_MODES = ("trainable", "frozen")


@dataclass
class TrainConfig:
    """Hyper-parameters of :func:`train_word2fun` (word2vec defaults where they exist).

    ``batch_size`` counts pairs (batches end at centre-token boundaries);
    ``workers`` > 1 trains with that many hogwild threads of one torch thread
    each, fed by a background thread that generates the pairs (faster on
    several cores, not deterministic); ``workers=1`` runs in the calling
    thread with the torch thread setting of the caller.

    ``roughness_penalty`` :math:`\\lambda \\ge 0` (families II-IV) adds
    :math:`\\lambda\\, \\rho(u)` (:func:`roughness`, the mean squared speed of
    :math:`f(u, \\cdot)` over the span) to the loss of every centre token of
    word ``u``: a smoothing-spline prior, so that fast coordinates follow
    abrupt changes the data support but damp year-to-year sampling noise.
    Per token, so rare and frequent words are smoothed alike relative to
    their data.
    """

    epochs: int = 5
    batch_size: int = 4096
    lr: float = 0.025
    negatives: int = 5
    shared_negatives: bool = False
    window: int = 5
    sample: float = 1e-3
    seed: int = 0
    chunk_tokens: int = 500_000
    device: str = "cpu"
    workers: int = 1
    roughness_penalty: float = 0.0

    def __post_init__(self) -> None:
        positive = dict(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr, negatives=self.negatives,
                        window=self.window, chunk_tokens=self.chunk_tokens, workers=self.workers)
        bad = {k: v for k, v in positive.items() if not v > 0}
        if bad:
            raise ValueError(f"these training settings must be positive: {bad}")
        if self.sample < 0 or self.roughness_penalty < 0:
            raise ValueError(f"sample and roughness_penalty must be >= 0; got {self.sample}, {self.roughness_penalty}")


@dataclass
class TrainStats:
    """What a training run did: pairs, tokens, wall time, tokens/s and mean loss per epoch."""

    tokens: int = 0
    pairs: int = 0
    seconds: float = 0.0
    epoch_loss: list = field(default_factory=list)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")


def _train_batches(model, batches, sampler, gen, cfg, epoch, lock=None) -> tuple[float, int]:
    """Run :func:`centre_sgd_step` over ``batches`` (an iterator, shared under ``lock`` by hogwild workers)."""
    total, nb, done = 0.0, 0, 0.0
    while True:
        if lock is None:
            batch = next(batches, None)
        else:
            with lock:
                batch = next(batches, None)
        if batch is None:
            return total, nb
        lr = cfg.lr * max(1e-4, 1.0 - (epoch + done) / cfg.epochs)
        B = batch.context.shape[0]
        shape = (cfg.negatives,) if cfg.shared_negatives else (B, cfg.negatives)
        neg = sampler.sample(shape, generator=gen)
        total += centre_sgd_step(model, batch.words, batch.time, batch.pair_centre, batch.context, neg, lr,
                                 cfg.roughness_penalty)
        nb += B
        done = batch.progress


def _prefetch(batches, stop, depth: int = 16):
    """Iterate ``batches`` in a background thread (numpy and torch release the GIL), ``depth`` ahead.

    The producer gives up when the ``stop`` event is set (the consumers failed).
    """
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    end = object()

    def produce():
        try:
            for b in batches:
                while not stop.is_set():
                    try:
                        q.put(b, timeout=0.1)
                        break
                    except queue.Full:
                        pass
                if stop.is_set():
                    return
        except BaseException as e:  # handed to the consumers
            q.put(e)
        q.put(end)

    threading.Thread(target=produce, daemon=True).start()
    while (b := q.get()) is not end:
        if isinstance(b, BaseException):
            raise b
        yield b


def _train_batches_threaded(model, batches, sampler, gens, cfg, epoch) -> tuple[float, int]:
    """Hogwild: ``len(gens)`` threads (one torch thread each) share the model and a prefetched batch stream.

    Like word2vec's threads, concurrent updates of the same rows are not
    synchronised (an update may occasionally be lost), so results vary from
    run to run.
    """
    import threading

    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    lock, stop = threading.Lock(), threading.Event()
    stream = _prefetch(batches, stop)
    out: list = [None] * len(gens)

    def work(w):
        try:
            out[w] = _train_batches(model, stream, sampler, gens[w], cfg, epoch, lock)
        except BaseException as e:
            stop.set()
            out[w] = e

    try:
        threads = [threading.Thread(target=work, args=(w,)) for w in range(len(gens))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        stop.set()
        torch.set_num_threads(prev)
    for r in out:
        if isinstance(r, BaseException):
            raise r
    return sum(t for t, _ in out), sum(n for _, n in out)


def train_word2fun(
    model: Word2Fun,
    tokens: np.ndarray,
    doc_ids: np.ndarray,
    doc_times: np.ndarray,
    counts: np.ndarray,
    config: TrainConfig | None = None,
    progress: bool = False,
    on_epoch=None,
) -> TrainStats:
    """Train ``model`` by skip-gram with negative sampling on an encoded corpus.

    Minibatch SGD (:func:`centre_sgd_step`) with word2vec's learning rate,
    decayed linearly from ``lr`` to ``1e-4 lr`` with the fraction of the
    training tokens processed.  Batches come from
    :func:`~qpnlp.data.skipgram.iter_centre_batches` (subsampling, dynamic
    windows, shuffled documents and centre tokens, about ``batch_size`` pairs
    each); negatives are drawn on ``config.device``: ``negatives`` per pair
    (word2vec), or, with ``shared_negatives=True``, one sample of
    ``negatives`` words shared by all pairs of the batch.  Because the thesis
    loss takes the *mean* over a pair's negatives, both are unbiased
    estimates of the same expected negative term; sharing turns B x k dot
    products into one (N, D) x (D, k) matrix product over the N centre
    tokens.

    Parameters
    ----------
    tokens, doc_ids : numpy.ndarray, shape (n_tokens,)
    doc_times : numpy.ndarray, shape (n_docs,)
        Raw times.
    counts : numpy.ndarray, shape (V,)
        Word counts (subsampling and the unigram^0.75 negatives).
    config : TrainConfig
    progress : bool
        Show a tqdm bar over tokens.
    on_epoch : callable(epoch, stats), optional
        Called after each epoch (e.g. to checkpoint); its time is not counted.

    Returns
    -------
    TrainStats
        ``tokens_per_s`` counts corpus tokens times epochs over the training
        wall time (pair generation, negatives and updates included).
    """
    cfg = config or TrainConfig()
    if cfg.roughness_penalty > 0 and model.family not in SINUSOIDAL_FAMILIES:
        raise ValueError(f"roughness_penalty needs a sinusoidal family (II, III, IV); got {model.family!r}")
    dev = torch.device(cfg.device)
    model.to(dev)
    rng = np.random.default_rng(cfg.seed)
    tgen = torch.Generator(device=dev).manual_seed(cfg.seed)
    keep = keep_probabilities(counts, cfg.sample)
    sampler = NegativeSampler(counts, 0.75, device=dev)
    stats = TrainStats()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.epochs * int(tokens.shape[0]), unit="tok", unit_scale=True, desc=f"word2fun {model.family}")
    seconds = 0.0
    workers = max(1, int(cfg.workers))
    gens = [tgen] + [torch.Generator(device=dev).manual_seed(cfg.seed + 7919 * w) for w in range(1, workers)]
    for epoch in range(cfg.epochs):
        t0 = _time.perf_counter()
        batches = iter_centre_batches(
            tokens, doc_ids, doc_times, keep_prob=keep, window=cfg.window, batch_size=cfg.batch_size,
            rng=rng, chunk_tokens=cfg.chunk_tokens, device=dev,
        )
        if workers == 1:
            total, nb = _train_batches(model, batches, sampler, tgen, cfg, epoch)
        else:
            total, nb = _train_batches_threaded(model, batches, sampler, gens, cfg, epoch)
        seconds += _time.perf_counter() - t0
        stats.pairs += nb
        stats.tokens += int(tokens.shape[0])
        stats.epoch_loss.append(total / max(nb, 1))
        stats.seconds = seconds
        if bar is not None:
            bar.update(int(tokens.shape[0]))
            bar.set_postfix(loss=f"{stats.epoch_loss[-1]:.4f}")
        if on_epoch is not None:
            on_epoch(epoch, stats)
    if bar is not None:
        bar.close()
    return stats


@dataclass(frozen=True)
class FitResult:
    """What :func:`fit` returns.

    Attributes
    ----------
    vectors : KeyedVectors
        The trained model with its vocabulary (queries, ``save_pretrained``).
    stats : TrainStats
        The training run of the model.
    compass_stats : TrainStats or None
        The static pre-training run of the frozen compass (``compass="frozen"``).
    """

    vectors: KeyedVectors
    stats: TrainStats
    compass_stats: TrainStats | None = None


def fit(
    corpus: TimestampedCorpus,
    config: TrainConfig | None = None,
    *,
    family: str = "IV",
    dim: int = 100,
    time_scale: float | TimeScale = 60.0,
    n_slices: int = 10,
    frequency_init: str = "harmonic",
    max_periods: float | None = None,
    min_count: int = 5,
    vocabulary: Vocabulary | None = None,
    compass: str = "trainable",
    compass_epochs: int = 3,
    checkpoint: str | os.PathLike | None = None,
    metadata: Mapping[str, Any] | None = None,
    progress: bool = False,
    on_epoch: Callable[[int, TrainStats], None] | None = None,
) -> FitResult:
    """Train Word2Fun on a timestamped corpus.

    Parameters
    ----------
    corpus : TimestampedCorpus
        Documents with one time each (at least two distinct times).
    config : TrainConfig, optional
        SGD settings (default ``TrainConfig()``); ``config.seed`` also seeds
        the initialisation of the model (and of the static compass model).
    family, dim, n_slices, frequency_init, max_periods
        The model (:class:`~qpnlp.word2fun.model.Word2FunConfig`).
    time_scale : float or TimeScale, default 60.0
        ``S``, with the corpus span as :math:`[t_0, t_1]`; or a full
        :class:`~qpnlp.word2fun.functions.TimeScale` (another span).
    min_count : int, default 5
        Keep words seen at least this many times (ignored with ``vocabulary``).
    vocabulary : Vocabulary, optional
        A vocabulary without special tokens to use instead of counting the corpus.
    compass : {"trainable", "frozen"}, default "trainable"
        ``"frozen"``: first train a ``static`` model for ``compass_epochs``
        epochs (same settings, no roughness penalty), then copy its target
        vectors into the compass and freeze them, and start every time slice's
        static part :math:`B_u` from its vectors (compass-aligned word2vec).
    compass_epochs : int, default 3
    checkpoint : path, optional
        Save the vectors there (``KeyedVectors.save_pretrained``) after every epoch.
    metadata : mapping, optional
        Extra JSON metadata for the checkpoint (the corpus size and the
        training settings are always recorded).
    progress : bool
        Show tqdm bars.
    on_epoch : callable(epoch, stats), optional
        Called after each epoch (after the checkpoint).

    Returns
    -------
    FitResult
        ``vectors`` (:class:`KeyedVectors`), ``stats`` and ``compass_stats``.

    Raises
    ------
    ValueError
        For an empty corpus, a corpus of one time, a vocabulary of fewer than
        two words, a vocabulary with special tokens or an unknown ``compass``.
    """
    cfg = config or TrainConfig()
    if compass not in COMPASS_MODES:
        raise ValueError(f"compass must be one of {COMPASS_MODES}; got {compass!r}")
    if len(corpus) == 0:
        raise ValueError("the corpus is empty")
    if vocabulary is None:
        vocab = Vocabulary.build(corpus.docs, min_freq=min_count, specials=False)
    elif vocabulary.specials:
        raise ValueError("Word2Fun needs a vocabulary without special tokens (Vocabulary.build(..., specials=False))")
    else:
        vocab = vocabulary
    if len(vocab) < 2:
        raise ValueError(f"the vocabulary has {len(vocab)} words (min_count {min_count}); Word2Fun needs at least two")
    enc = corpus.encode(vocab)
    if isinstance(time_scale, TimeScale):
        ts = time_scale
    else:
        t0, t1 = corpus.span
        if t1 <= t0:
            raise ValueError(f"the corpus spans a single time ({t0}); Word2Fun needs at least two")
        ts = TimeScale(t0, t1, time_scale)
    model_config = Word2FunConfig(vocab_size=len(vocab), dim=dim, family=family, span_start=ts.start,
                                  span_end=ts.end, time_scale=ts.scale, n_slices=n_slices,
                                  frequency_init=frequency_init, max_periods=max_periods)
    model = Word2Fun(model_config, seed=cfg.seed)
    compass_stats = None
    if compass == "frozen":
        static = Word2Fun(Word2FunConfig(vocab_size=len(vocab), dim=dim, family="static", span_start=ts.start,
                                         span_end=ts.end, time_scale=ts.scale), seed=cfg.seed)
        static_cfg = dataclasses.replace(cfg, epochs=compass_epochs, roughness_penalty=0.0)
        compass_stats = train_word2fun(static, enc.tokens, enc.doc_ids, enc.times, vocab.counts, static_cfg,
                                       progress=progress)
        model.set_compass(static.compass.weight.detach(), freeze=True)
        with torch.no_grad():  # start the static part (every slice of it) from the static model as well
            model.base.weight.copy_(static.base.weight.repeat(model.base.weight.shape[0] // len(vocab), 1))
    vectors = KeyedVectors(model, vocab)
    info = {"corpus": {"documents": len(corpus), "tokens": corpus.n_tokens, "span": list(corpus.span)},
            "training": dataclasses.asdict(cfg), "compass": compass,
            "compass_epochs": compass_epochs if compass == "frozen" else None, **dict(metadata or {})}

    def end_of_epoch(epoch: int, stats: TrainStats) -> None:
        if checkpoint is not None:
            vectors.save_pretrained(checkpoint, metadata={**info, "epochs_done": epoch + 1,
                                                          "epoch_loss": list(stats.epoch_loss)})
        if on_epoch is not None:
            on_epoch(epoch, stats)

    stats = train_word2fun(model, enc.tokens, enc.doc_ids, enc.times, vocab.counts, cfg, progress=progress,
                           on_epoch=end_of_epoch)
    return FitResult(vectors, stats, compass_stats)
