"""The state of a :func:`~qpnlp.word2fun.train.fit` run between epochs: its random generators and its checkpoint.

A run draws its pairs (subsampling, windows, shuffling) from one numpy
generator per process and its negatives from one torch generator per worker.
Fresh generators are seeded by the run's ``seed``, the process ``rank`` and the
worker ``w``: :func:`data_rng` is ``default_rng(seed)`` for the first process
at epoch 0 (``default_rng([seed, rank, epoch])`` otherwise) and :func:`negative_generators`
seeds worker ``w`` of process ``rank`` with ``seed + 7919 w + 104729 rank``
(or, for a run resumed from a checkpoint without the process's states, from
``SeedSequence([seed, rank, epoch, w])``, never the first epoch's streams again).

After every epoch :func:`end_of_epoch` saves the vectors with the run's
metadata (:func:`run_info`), the epochs done and the losses in ``config.json``
and the generators' states (:func:`rng_state`, every process's in a
distributed run) in a file of their own, :data:`RNG_FILE`: they grow with the
processes and workers (6.7 KB a worker), the header must stay small.  Resuming
reads them back (:func:`saved_run`, :func:`epochs_done_and_losses`,
:func:`saved_rng`, :func:`training_generators`; a checkpoint of an earlier qpnlp
holds the states in its metadata): with the same processes, one worker and the
same ``epochs`` and ``chunk_tokens`` the run continues exactly as an
uninterrupted one would.  :func:`check_resume` first refuses a call that
would continue the run with another model, corpus, vocabulary or training
settings than it was trained with, or with fewer epochs than it already
trained.  A checkpoint that a process killed while replacing it left aside is
put back first (:func:`restore_interrupted_checkpoint`).

The settings whose None stands for the model's default (:data:`RESOLVED_DEFAULTS`) are recorded resolved
(:func:`~qpnlp.word2fun.loop.resolved_defaults`), and a resumed call that leaves them None continues with the run's own
(:func:`with_saved_defaults`): a default changed by a later qpnlp never enters a run trained with the earlier one.
A checkpoint of an earlier qpnlp that recorded them None is resumed with today's defaults (not compared), the
defaults it trained with.  A checkpoint written before a setting existed does not record it: the resumed epochs
train with the call's value, and :func:`unrecorded_settings` names those that train otherwise than the run did
(:data:`EARLIER_VALUES`).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO

import numpy as np
import torch

from qpnlp._atomic import restore_replaced_directory
from qpnlp._errors import newer_format_note
from qpnlp.data.vocab import Vocabulary
from qpnlp.word2fun import distributed as dist
from qpnlp.word2fun.config import TrainConfig
from qpnlp.word2fun.keyed_vectors import KeyedVectors
from qpnlp.word2fun.loop import TrainStats, negative_seeds

#: The :class:`~qpnlp.word2fun.config.TrainConfig` fields a resumed run may change: how long, where and in how
#: many threads or pieces it trains.  Another ``epochs`` or ``chunk_tokens`` continues the run but not as the
#: uninterrupted one would: the learning rate decays over ``epochs`` and ``chunk_tokens`` tokens are shuffled
#: together.
RESUMABLE_CHANGES = frozenset({"epochs", "workers", "parallel", "device", "chunk_tokens", "sync_every",
                               "replica_sync_every", "step_threads"})
#: The :class:`~qpnlp.word2fun.config.TrainConfig` fields whose None stands for the model's default, resolved by
#: :func:`~qpnlp.word2fun.train.fit` (:func:`~qpnlp.word2fun.loop.resolved_defaults`).
RESOLVED_DEFAULTS = ("roughness_penalty", "step_centre_lr")
#: The :class:`~qpnlp.word2fun.config.TrainConfig` fields added after runs were first checkpointed (their
#: checkpoints record the earlier fields only), each with the value that trains as the earlier qpnlp did: no per-word
#: roughness weights or learning-rate factors (powers 0; the ``frequency_reference`` and ``rare_lr_max`` added with
#: them then have no effect), the thesis loss's negative term (weight 1) and the logistic steps' centres at 0.03
#: (``STEP_CENTRE_LR`` before ``step_centre_lr``).
EARLIER_VALUES = {"roughness_power": 0.0, "rare_lr_power": 0.0, "negative_weight": 1.0, "step_centre_lr": 0.03}
#: Fields that only shape the per-word factors of :data:`EARLIER_VALUES`' powers: without effect at those powers.
SHAPING_THE_POWERS = ("frequency_reference", "rare_lr_max")
#: The checkpoint's file of every process's generator states (:func:`rng_file_text`), beside its ``config.json``.
RNG_FILE = "rng_states.json"
RNG_FORMAT = "qpnlp-word2fun-rng/1"


def saved_run(checkpoint: str | os.PathLike) -> dict | None:
    """The metadata of the training run saved at ``checkpoint`` (None when there is no saved model to resume).

    Refuses a saved model that :func:`~qpnlp.word2fun.train.fit` did not checkpoint (another model, or vectors
    without the epochs done and the corpus size).
    """
    if not (Path(checkpoint) / "config.json").is_file():
        return None
    from qpnlp.models.base import read_model_header

    header = read_model_header(checkpoint)
    saved = header["metadata"]
    if header["model"] != "word2fun" or "epochs_done" not in saved or "corpus" not in saved:
        what = "Word2Fun vectors" if header["model"] == "word2fun" else f"a {header['model']!r} model"
        raise ValueError(f"{checkpoint} holds {what} but no training run of fit() to resume (fit(checkpoint=...) "
                         f"records the epochs done); train afresh or resume from fit's checkpoint")
    return saved


def saved_run_of_every_process(checkpoint: str | os.PathLike) -> dict | None:
    """:func:`saved_run`, read by every process of a distributed run and refused in every process unless they all
    read the same (``ValueError``; processes resuming different runs, or one of them none, would train apart and
    then wait for each other).  An error reading it in one process is raised in every process."""
    every = dist.gather_together(lambda: saved_run(checkpoint), f"reading the checkpoint {checkpoint}")
    saved = every[dist.rank()]
    other = next((r for r, s in enumerate(every) if s != every[0]), None)
    if other is not None:
        def run(s):
            return "no training run" if s is None else f"a run of {s.get('epochs_done')} epochs"

        raise ValueError(f"process {other} of {len(every)} finds {run(every[other])} at {checkpoint}, process 0 "
                         f"{run(every[0])}{' (another one)' if run(every[0]) == run(every[other]) else ''}: every "
                         f"process must resume from the same checkpoint, a directory that they all see")
    return saved


def check_resume(checkpoint: str | os.PathLike, saved: Mapping[str, Any], model_now: Mapping[str, Any],
                 model_saved: Mapping[str, Any], cfg: TrainConfig, corpus: Mapping[str, Any],
                 run: Mapping[str, Any], vocabularies: tuple[Vocabulary, Vocabulary]) -> None:
    """Refuse (``ValueError``) to continue the run ``saved`` (:func:`saved_run`) with what differs from it.

    Compared: the model options of the call (``model_now``) with the saved model's (``model_saved``, the same
    keys), the training settings but :data:`RESUMABLE_CHANGES`, the corpus's documents, tokens and span, the
    run's other settings (``run``: compass, step centres and ``min_count``), and the checkpoint's vocabulary
    with the one this call builds (``vocabularies``: saved, now; :func:`vocabulary_differences`), which
    catches a changed ``min_count`` or ``vocabulary`` and a corpus of other words or counts.  A setting the
    checkpoint does not record (one written by an earlier version) is not compared; where that is
    ``min_count``, a vocabulary that differs says so (the likely cause).  A run that already
    trained more epochs than ``cfg.epochs`` is refused too (:func:`check_epochs`).
    """
    check_epochs(checkpoint, saved, cfg)
    training = {k: v for k, v in saved.get("training", {}).items()   # None: an earlier qpnlp's unresolved default
                if k not in RESUMABLE_CHANGES and not (k in RESOLVED_DEFAULTS and v is None)}
    recorded_run = {k: saved[k] for k in run if k in saved}
    vocabulary = vocabulary_differences(*vocabularies)
    if vocabulary and "min_count" in run and "min_count" not in saved:     # written before min_count was recorded
        vocabulary = [f"{vocabulary[0]} (built here with min_count {run['min_count']}; the checkpoint, of an "
                      f"earlier qpnlp, does not record the run's min_count: resume with the run's own)"]
    differences = [*_differences("the model", model_saved, model_now),
                   *_differences("the training settings", training, dataclasses.asdict(cfg)),
                   *_differences("the corpus", saved.get("corpus", {}), corpus),
                   *_differences("the run", recorded_run, run), *vocabulary]
    if differences:
        raise ValueError(f"cannot resume the Word2Fun run saved at {checkpoint}: this call differs from it in "
                         + "; ".join(differences) + f" (only {', '.join(sorted(RESUMABLE_CHANGES))} may change); "
                         "pass the run's own corpus and settings, or train afresh in another directory")


def with_saved_defaults(cfg: TrainConfig, saved: Mapping[str, Any] | None) -> TrainConfig:
    """``cfg`` with each setting of :data:`RESOLVED_DEFAULTS` it leaves None (the model's default) set to the one
    the resumed run ``saved`` recorded (resolved when that run trained), so that a default changed since does not
    enter the run; ``cfg`` itself without a saved run or where the checkpoint records None (an earlier qpnlp)."""
    recorded = {} if saved is None else saved.get("training", {})
    taken = {k: recorded[k] for k in RESOLVED_DEFAULTS if getattr(cfg, k) is None and recorded.get(k) is not None}
    return dataclasses.replace(cfg, **taken) if taken else cfg


def unrecorded_settings(checkpoint: str | os.PathLike, saved: Mapping[str, Any], cfg: TrainConfig) -> str | None:
    """The warning for resuming the run ``saved`` at ``checkpoint`` with training settings its checkpoint, of an
    earlier qpnlp, does not record, where they train otherwise than the run did; None where none does.

    The settings that :func:`check_resume` cannot compare, those of ``cfg`` (resolved, as the resumed epochs train
    with them) that the saved ``training`` lacks, :data:`RESUMABLE_CHANGES` aside; a value of None has no effect (the
    centres' rate without the logistic step).  Said when one of them differs from its :data:`EARLIER_VALUES` entry,
    or has none, naming each setting with the value used and, where known, the run's; once, as the resumed run's
    checkpoint records them.
    """
    training = saved.get("training", {})
    used = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
            if f.name not in training and f.name not in RESUMABLE_CHANGES and getattr(cfg, f.name) is not None}
    changed = [k for k in used if k not in SHAPING_THE_POWERS
               and (k not in EARLIER_VALUES or used[k] != EARLIER_VALUES[k])]
    if not changed:
        return None
    named = ", ".join(f"{k} {v!r}" + (f" (the run: {EARLIER_VALUES[k]!r})" if k in changed and k in EARLIER_VALUES
                                      else "") for k, v in used.items())
    return (f"the Word2Fun run saved at {checkpoint} does not record the settings {', '.join(used)} (an earlier "
            f"qpnlp wrote it, before they existed); the resumed epochs train with {named}: pass the run's values to "
            f"continue it as it trained")


def vocabulary_differences(saved: Vocabulary, now: Vocabulary, shown: int = 3) -> list[str]:
    """How the vocabulary built now (``now``: the corpus's words seen ``min_count`` times, or the one given)
    differs from the checkpoint's (``saved``), in at most one entry for :func:`check_resume` ([] if equal).

    Named: the sizes, the words of each side the other lacks and the words whose counts differ (both counts),
    ``shown`` of each and how many more; a vocabulary of the same words and counts but in another order or
    with other document counts is named as such.  The counts are a fingerprint of the corpus's content: a corpus of
    other words with the same documents and tokens is caught here.
    """
    if saved == now:
        return []
    changed = [f"size ({len(saved)} there, {len(now)} here)"] if len(saved) != len(now) else []
    for side, words, other in (("there", saved.words, now), ("here", now.words, saved)):
        lacking = [repr(w) for w in words if w not in other]
        if lacking:
            changed.append(f"words only {side} ({_some(lacking, shown)})")
    counts = [f"{w!r} ({saved.word_freq(w)} there, {now.word_freq(w)} here)" for w in saved.words
              if w in now and saved.word_freq(w) != now.word_freq(w)]
    if counts:
        changed.append(f"counts of {_some(counts, shown)}")
    if not changed:
        changed.append("the same words and counts, in another order or with other document counts")
    return ["the vocabulary: " + ", ".join(changed)]


def _some(items: list[str], shown: int) -> str:
    """The first ``shown`` of ``items``, joined, and how many more there are."""
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def restore_interrupted_checkpoint(checkpoint: str | os.PathLike, log: TextIO | None = None) -> None:
    """Put back the checkpoint that a process killed while replacing it left aside, before resuming from it.

    The first process alone renames it back (``qpnlp._atomic.restore_replaced_directory``; a line on
    ``log`` says so) and tells the others, which wait for it, so that every process then reads the same
    checkpoint; several such leftovers are refused in every process (``FileExistsError``, naming them), and
    so is another error of the first process (:class:`~qpnlp.word2fun.distributed.ProcessFailed` in the others).
    """
    def put_back() -> tuple[str, str] | None:
        if not dist.is_main_process():
            return None
        try:
            restored = restore_replaced_directory(checkpoint)
            return None if restored is None else ("restored", str(restored))
        except FileExistsError as error:
            return ("refused", str(error))

    outcome = dist.gather_together(put_back, f"putting back the checkpoint {checkpoint}")[0]   # once renamed
    if outcome is not None and outcome[0] == "refused":
        raise FileExistsError(outcome[1])
    if outcome is not None and log is not None:
        print(f"{checkpoint}: put back the checkpoint of the last epoch saved, from {outcome[1]}, where a "
              f"process killed while replacing it had left it", file=log)


def check_epochs(checkpoint: str | os.PathLike, saved: Mapping[str, Any], cfg: TrainConfig) -> None:
    """Refuse (``ValueError``) to resume the run ``saved`` with fewer epochs than it already trained.

    Its vectors would be returned as they are, those of a longer run than ``cfg.epochs`` asks for (the trainer
    of the classifiers refuses the same, :func:`qpnlp.training.loop.early_stopping`).
    """
    done = int(saved.get("epochs_done", 0))
    if done > cfg.epochs:
        raise ValueError(f"cannot resume the Word2Fun run saved at {checkpoint}: it already trained {done} epochs, "
                         f"more than epochs={cfg.epochs}; its vectors would not be those of a run of {cfg.epochs} "
                         f"epochs (resume with epochs >= {done}, or train afresh in another directory)")


def _differences(what: str, saved: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """``what`` and the keys of ``saved`` whose values differ in ``now`` (compared as JSON stores them)."""
    now = json.loads(json.dumps({k: now[k] for k in saved if k in now}, default=float))
    changed = [f"{k} ({saved[k]!r} there, {now[k]!r} here)" for k in sorted(now) if now[k] != saved[k]]
    return [f"{what}: " + ", ".join(changed)] if changed else []


def epochs_done_and_losses(saved: Mapping[str, Any] | None) -> tuple[int, TrainStats]:
    """The epoch to start from and the statistics to continue: those of the run ``saved``, or 0 and none."""
    stats = TrainStats()
    if saved is None:
        return 0, stats
    start = int(saved.get("epochs_done", 0))
    stats.epoch_loss = list(saved.get("epoch_loss", []))
    return start, stats


def training_generators(cfg: TrainConfig, rank: int, dev, state: Mapping[str, Any] | None,
                        start: int) -> tuple[np.random.Generator, list[torch.Generator]]:
    """The pair generator and the negatives' generators of this process from the epoch ``start``: continuing
    its saved ``state`` (:func:`saved_rng`), or fresh.

    Without a state the streams are seeded by ``start`` (a resumed run never draws those of the first epoch
    again); with another number of workers see :func:`restore_rng`.
    """
    if state is None:
        return data_rng(cfg.seed, rank, start), negative_generators(cfg.seed, rank, cfg.workers, dev, start)
    rng = data_rng(cfg.seed, rank, 0)
    gens = negative_generators(cfg.seed, rank, cfg.workers, dev)
    restore_rng(state, rng, gens)
    return rng, gens


def data_rng(seed: int, rank: int, epoch: int) -> np.random.Generator:
    """The pair generator of a process: ``default_rng(seed)`` for the first process from epoch 0, else seeded by
    (seed, rank, epoch)."""
    if rank == 0 and epoch == 0:
        return np.random.default_rng(seed)
    return np.random.default_rng([seed, rank, epoch])


def negative_generators(seed: int, rank: int, workers: int, device, epoch: int = 0) -> list[torch.Generator]:
    """The negatives' generators of a process, one per worker, seeded by (seed, rank, worker) and, after the
    first epoch (a resumed run without saved states), by the epoch too."""
    if epoch == 0:
        seeds = negative_seeds(seed, rank, workers)
    else:
        seeds = [int(np.random.SeedSequence([seed, rank, epoch, w]).generate_state(1, np.uint64)[0])
                 for w in range(workers)]
    return [torch.Generator(device=device).manual_seed(s) for s in seeds]


def rng_state(rng: np.random.Generator, gens: list) -> dict:
    """The states of the pair generator and the negatives' generators, as JSON (set by :func:`restore_rng`)."""
    return {"numpy": rng.bit_generator.state,
            "torch": [base64.b64encode(g.get_state().numpy().tobytes()).decode("ascii") for g in gens]}


def restore_rng(state: dict, rng: np.random.Generator, gens: list) -> None:
    """Set the pair generator and the negatives' generators to ``state``.

    With another number of workers than the run that saved ``state``, the
    workers both runs have continue their streams, added workers keep their
    own fresh ones and the streams of dropped workers are discarded.
    """
    rng.bit_generator.state = state["numpy"]
    for g, s in zip(gens, state["torch"]):
        g.set_state(torch.frombuffer(bytearray(base64.b64decode(s)), dtype=torch.uint8))


def rng_file_text(states: list[dict]) -> str:
    """The text of a checkpoint's :data:`RNG_FILE`: ``{"format": RNG_FORMAT, "processes": states}``, ``states``
    the :func:`rng_state` of each process in rank order (about 6.7 KB a worker: 1 MB for 8 processes x 20 workers)."""
    return json.dumps({"format": RNG_FORMAT, "processes": states}, allow_nan=False) + "\n"


def saved_rng(checkpoint: str | os.PathLike, saved: Mapping[str, Any], rank: int) -> dict | None:
    """The generator states of process ``rank`` in ``checkpoint`` (None when it holds none): in its
    :data:`RNG_FILE` or, written by an earlier qpnlp, in its metadata ``saved`` (``rng``: the first process's,
    ``rng_by_rank``: every process's).  ValueError, naming the file, for a damaged :data:`RNG_FILE`."""
    path = Path(checkpoint) / RNG_FILE
    if path.is_file():
        every = _read_rng_file(path)
    elif rank == 0:
        return saved.get("rng") or None
    else:
        every = saved.get("rng_by_rank") or []
    return every[rank] if rank < len(every) else None


def saved_model(checkpoint: str | os.PathLike, saved: Mapping[str, Any], device: str, rank: int) -> tuple:
    """``(model, vocabulary, generators' states of process rank)`` of the run ``saved`` at ``checkpoint``
    (:func:`saved_rng`), the model on ``device`` in training mode."""
    vectors = KeyedVectors.from_pretrained(checkpoint, device=device)
    return vectors.model.train(), vectors.vocabulary, saved_rng(checkpoint, saved, rank)


def _read_rng_file(path: Path) -> list[dict]:
    """The states of every process in the :data:`RNG_FILE` at ``path`` (ValueError naming it if damaged)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:                  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ValueError(f"{path}: not a readable file of generator states ({err})") from None
    found = data.get("format") if isinstance(data, dict) else None
    every = data.get("processes") if found == RNG_FORMAT else None
    if not isinstance(every, list) or not all(isinstance(s, dict) and {"numpy", "torch"} <= s.keys() for s in every):
        raise ValueError(f"{path} is not a {RNG_FORMAT} file of generator states (a list of each process's "
                         f"'numpy' and 'torch' states under 'processes'){newer_format_note(found, RNG_FORMAT)}")
    return every


def run_info(info: dict, cfg: TrainConfig, run: Mapping[str, Any], world: int,
             metadata: Mapping[str, Any] | None) -> dict:
    """The checkpoint metadata of the run: corpus size, training settings, the run's other settings (``run``:
    compass, step centres and ``min_count``; :func:`check_resume` compares them), processes and ``metadata``."""
    return {"corpus": info, "training": dataclasses.asdict(cfg), **run, "processes": world, **dict(metadata or {})}


def end_of_epoch(checkpoint, vectors: KeyedVectors, run_info: dict, rng: np.random.Generator, gens: list,
                 world: int, on_epoch: Callable[[int, TrainStats], None] | None) -> Callable[[int, TrainStats], None]:
    """The ``on_epoch`` callback of the loop: save the checkpoint (if any), then call ``on_epoch``.

    The checkpoint holds the vectors, ``run_info``, the epochs done and the losses in its ``config.json``, and the
    generators' states in its :data:`RNG_FILE` (of every process, gathered to the first, which writes the
    checkpoint while the others wait).  An error writing it, or
    of ``on_epoch`` in one process, is raised in every process (:func:`~qpnlp.word2fun.distributed.fail_together`).
    The two blocks stay apart (two collectives, not one): ``on_epoch`` runs in no process before the first has
    written the epoch's checkpoint (an ``on_epoch`` may read it), nor once the writing has failed.
    """
    def end_of_epoch(epoch: int, st: TrainStats) -> None:
        if checkpoint is not None:
            state = rng_state(rng, gens)
            every = dist.gather_objects(state) if world > 1 else [state]            # rank 0 gets all processes'
            with dist.fail_together(f"writing the checkpoint {checkpoint}"):        # the others wait for it
                if dist.is_main_process():
                    vectors.save_pretrained(checkpoint, metadata={**run_info, "epochs_done": epoch + 1,
                                                                  "epoch_loss": list(st.epoch_loss)},
                                            files={RNG_FILE: rng_file_text(every)})
        with dist.fail_together(f"in on_epoch after epoch {epoch + 1}"):  # entered by all: on_epoch may be rank 0's
            if on_epoch is not None:
                on_epoch(epoch, st)

    return end_of_epoch
