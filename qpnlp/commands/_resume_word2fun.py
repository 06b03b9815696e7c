"""``qpnlp train word2fun --resume``: the settings the command line does not give are those of the run saved in
``--out`` (``qpnlp.commands._resume``).

The checkpoint records the run's model config, its training settings
(resolved: the roughness penalty of its family), its ``min_count``, compass
and step centres (``qpnlp.word2fun._run_state.run_info``); each is the value
of one option of the command (:func:`saved_options`).
"""

from __future__ import annotations

import argparse

from ._resume import continue_saved, said_continued

__all__ = ["continue_saved_run", "saved_options"]

#: The options of ``qpnlp train word2fun`` that are fields of :class:`qpnlp.word2fun.TrainConfig` of one name.
TRAINING_OPTIONS = ("epochs", "batch_size", "lr", "window", "sample", "negatives", "negative_weight",
                    "shared_negatives", "roughness_penalty", "roughness_power", "rare_lr_power", "rare_lr_max",
                    "frequency_reference", "chunk_tokens", "workers", "sync_every", "device", "seed")
#: Option -> field of the saved model's config (:class:`qpnlp.word2fun.model.Word2FunConfig`).
MODEL_OPTIONS = {"family": "family", "dim": "dim", "time_scale": "time_scale", "slices": "n_slices",
                 "frequency_init": "frequency_init", "max_periods": "max_periods", "logistic": "logistic"}
#: The options of the run's other settings, under their own names in the checkpoint's metadata.
RUN_OPTIONS = ("min_count", "compass", "compass_epochs", "step_centres")


def saved_options(checkpoint) -> dict | None:
    """``{option destination: value}`` of the run saved at ``checkpoint`` (None where it holds no run of
    :func:`~qpnlp.word2fun.fit` to resume: ``fit`` then says why). A setting the run recorded as None (one without
    effect: the step centres without the logistic step, the compass's epochs unless it is frozen; or one an
    earlier qpnlp left unresolved) is left to the command line; ``--max-periods`` 0 is the config's None."""
    from qpnlp.models.base import read_model_header
    from qpnlp.word2fun._run_state import saved_run

    try:
        saved = saved_run(checkpoint)
        model = read_model_header(checkpoint)["config"] if saved is not None else None
    except (OSError, ValueError):
        return None
    if saved is None:
        return None
    training = saved.get("training", {})
    found = {name: training.get(name) for name in TRAINING_OPTIONS}
    found.update({option: model.get(field) for option, field in MODEL_OPTIONS.items()})
    found.update({name: saved.get(name) for name in RUN_OPTIONS})
    if "max_periods" in model:
        found["max_periods"] = model["max_periods"] or 0.0
    return {name: value for name, value in found.items() if value is not None}


def continue_saved_run(args: argparse.Namespace) -> str | None:
    """Under ``--resume`` with a run saved in ``--out``: every setting the command line does not give takes the
    saved run's value, one given with another value is refused (``UsageError``) unless the run may change it
    (``qpnlp.word2fun._run_state.RESUMABLE_CHANGES``). Returns the status line naming the values taken that differ
    from this command line's (None if none)."""
    from qpnlp.word2fun._run_state import RESUMABLE_CHANGES

    saved = saved_options(args.out) if args.resume and args.out else None
    if saved is None:
        return None
    return said_continued(continue_saved(args, saved, changeable=RESUMABLE_CHANGES, where=f"--out {args.out}"))
