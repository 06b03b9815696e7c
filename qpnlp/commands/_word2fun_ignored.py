"""``qpnlp train word2fun``: the options that the others leave without effect, said when the command line gives them.

Some options of the command matter only beside others: the library documents them as ignored there (and its
checkpoint records them as None), and the command does not refuse them (a design decision: a script may pass one
set of options to every family). Given on the command line (:data:`GIVEN`, an option at its default counts, an
option left at its default does not), each is said once on stderr as the command's warnings are (``--slices 5 has
no effect with --family IV: ...``), and kept in the report's ``warnings`` (:func:`ignored_options`):

- ``--slices`` but with the ``sliced`` family (its time slices);
- ``--frequency-init`` and ``--max-periods`` but with families III and IV (their per-word frequencies), and
  ``--max-periods`` with ``--frequency-init fixed`` (it caps the harmonic ladder);
- ``--step-centres`` without the logistic step (``--no-logistic``, or a family that has none by default);
- ``--compass-epochs`` without ``--compass frozen`` (the epochs of the compass's pre-training);
- ``--roughness-power`` without a roughness penalty (a family other than II-IV, ``--roughness-penalty 0``);
- ``--rare-lr-max`` with ``--rare-lr-power 0``, and ``--frequency-reference`` where neither per-word weight
  depends on it (:func:`qpnlp.word2fun.config.word_weights`);
- ``--sync-every`` in a run of one process, ``--parallel`` with one worker, ``--replica-sync-every`` without
  ``--parallel replicas`` and ``--workers`` > 1;
- ``--npz-words`` without ``--export-npz``, ``--topk`` without ``--words``.
"""

from __future__ import annotations

import argparse

from qpnlp import _env

from ._config_options import explicit_options, recorded

__all__ = ["GIVEN", "ignored_options"]

#: The action of the options that :func:`ignored_options` checks: notes in the namespace that the command line gave
#: them (:func:`qpnlp.commands._config_options.explicit_options`).
GIVEN = recorded(argparse._StoreAction)


def ignored_options(args: argparse.Namespace) -> list[str]:
    """Why each option that ``args`` gives on the command line has no effect beside the others, one line each, in
    the order of the module docstring (none for an option left at its default)."""
    given = set(explicit_options(args))
    return [f"--{name.replace('_', '-')} {_shown(getattr(args, name))} has no effect {why}"
            for name, why in _reasons(args).items() if why is not None and name in given]


def _shown(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _reasons(args: argparse.Namespace) -> dict[str, str | None]:
    """``{option destination: why it has no effect}``, None where it has one."""
    from qpnlp.word2fun import SINUSOIDAL_FAMILIES

    family = args.family
    frequencies = None if family in ("III", "IV") else (f"with --family {family}: only families III and IV have "
                                                        f"per-word frequencies")
    logistic = family in SINUSOIDAL_FAMILIES if args.logistic is None else bool(args.logistic)
    penalty = args.roughness_penalty
    no_penalty = (f"with --family {family}, which has no roughness penalty" if family not in SINUSOIDAL_FAMILIES
                  else "with --roughness-penalty 0" if penalty is not None and penalty == 0 else None)
    weights = (no_penalty is not None or args.roughness_power == 0) and args.rare_lr_power == 0
    one_process = args.processes <= 1 and _env.count("WORLD_SIZE", 1) <= 1
    replicas = args.parallel == "replicas" and args.workers > 1
    return {
        "slices": None if family == "sliced" else (f"with --family {family}: only the 'sliced' family has time "
                                                   f"slices"),
        "frequency_init": frequencies,
        "max_periods": frequencies or (None if args.frequency_init == "harmonic" else
                                       f"with --frequency-init {args.frequency_init}: it caps the harmonic ladder "
                                       f"of frequencies (--frequency-init harmonic)"),
        "step_centres": None if logistic else ("without the logistic step (" + (
            "--no-logistic" if args.logistic is False else f"--family {family} has none unless --logistic") + ")"),
        "compass_epochs": None if args.compass == "frozen" else (f"with --compass {args.compass}: it counts the "
                                                                 f"epochs of the pre-training of --compass frozen"),
        "roughness_power": no_penalty,
        "rare_lr_max": None if args.rare_lr_power != 0 else "with --rare-lr-power 0: every word's learning rate "
                                                            "factor is 1",
        "frequency_reference": "with no per-word weight (no roughness penalty or --roughness-power 0, and "
                               "--rare-lr-power 0)" if weights else None,
        "sync_every": "in a run of one process (it counts the batches between two synchronisations of --processes "
                      "or torchrun's processes)" if one_process else None,
        "parallel": "with --workers 1 (it says how several workers share the training)" if args.workers <= 1
                    else None,
        "replica_sync_every": None if replicas else "without --parallel replicas and --workers > 1",
        "npz_words": None if args.export_npz else "without --export-npz",
        "topk": None if args.words.strip() else "without --words",
    }
