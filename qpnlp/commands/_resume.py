"""``--resume`` continues the saved run: an option not given on the command line takes the saved run's value.

The project changes its defaults when a benchmark finds better settings, so a
resumed run rebuilt from today's defaults would differ from the run it
continues (and be refused). Instead every option the command line does not
give (:func:`given_options`: parsed a second time with every default
suppressed, so an alias, an abbreviation, ``--opt=value`` and a
``--flag/--no-flag`` all count) takes the value the saved run recorded
(:func:`continue_saved`); an option given with another value than the saved
run's is refused, naming the option and both values, unless it is one that
may change on resume (``--epochs``, ``--patience``, ``--device``, ...). The
training commands also record their resolved settings (model options,
training settings and selection grid, defaults filled in), and continue with
those (:func:`continued_settings`), so a default that a later qpnlp changes
never enters a run trained with an earlier one.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ._errors import UsageError

__all__ = ["given_options", "continue_saved", "taken_from_saved_run", "continued_settings", "said_continued",
           "resume_training_run", "resumed_training_settings", "saved_defaults"]

#: Namespace attribute holding :func:`given_options` (set by ``qpnlp.cli`` under ``--resume``).
GIVEN = "given_options"
#: Namespace attributes that are no option of the run (``qpnlp.cli`` and the commands add them).
_NOT_OPTIONS = frozenset({"func", "kind", "prog", "verb", "model", "debug", "command_line", "plugins", "exit_stack",
                          GIVEN, "explicit_options"})
#: The options of ``qpnlp train MODEL`` that are each invocation's own: neither taken from the saved run nor compared.
TRAINING_OWN = frozenset({"resume", "checkpoint_dir", "save", "no_training_state", "report", "threads", "no_progress"})
#: The options of ``qpnlp train MODEL`` that a resumed run may give another value (where the data are, how many
#: splits to run; the training settings of ``qpnlp.training.state.RESUMABLE_CHANGES``).
TRAINING_CHANGEABLE = frozenset({"data", "max_splits"})


def given_options(parser: argparse.ArgumentParser, argv: Sequence[str], args: argparse.Namespace) -> dict[str, str]:
    """``{dest: flag}`` of the options of the command ``args`` ran that ``argv`` gives (``flag``: the option's
    visible name, ``--vectors`` for its alias ``--glove``).

    ``argv``, which gave ``args``, is parsed again with every default of the
    command's options suppressed: only what the command line sets is in the
    namespace, whatever the spelling (an abbreviation, ``--opt=value``,
    ``--no-flag``, an alias of the same destination) and whatever the value
    (a default given explicitly counts).
    """
    command = _chosen_parser(parser, args)
    options = [a for a in command._actions if a.option_strings and a.dest != "help"]
    saved, defaults = [(a, a.default) for a in options], command._defaults
    try:                                  # the parser's own defaults (set_defaults(lr=None)) would count as given
        command._defaults = {k: v for k, v in defaults.items() if k not in {a.dest for a in options}}
        for action in options:
            action.default = argparse.SUPPRESS
        given = vars(parser.parse_known_args(list(argv))[0])
    finally:
        command._defaults = defaults
        for action, default in saved:
            action.default = default
    names = {a.dest: a.option_strings[0] for a in reversed(options)}          # the first flag of a destination,
    names.update({a.dest: a.option_strings[0] for a in reversed(options) if a.help != argparse.SUPPRESS})  # shown
    return {dest: names[dest] for dest in names if dest in given}


def _chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub-)parser of the command that ``args`` runs (``qpnlp train qpdn``'s)."""
    while True:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers or getattr(args, subparsers[0].dest, None) not in subparsers[0].choices:
            return parser
        parser = subparsers[0].choices[getattr(args, subparsers[0].dest)]


def _as_stored(value: Any) -> Any:
    """``value`` as JSON stores it (tuples as lists), for comparing with a saved value."""
    return json.loads(json.dumps(value, default=str))


def _shown(value: Any) -> str:
    """``value`` as a message names it: a string as it is, anything else as JSON (``true``, ``[1, 2]``)."""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def continue_saved(args: argparse.Namespace, saved: Mapping[str, Any], *, changeable: Collection[str] = (),
                   own: Collection[str] = (), compared_later: Collection[str] = (),
                   resolved_later: Collection[str] = (), defaults: Mapping[str, Any] | None = None,
                   where: str) -> dict[str, Any]:
    """Give every option of ``args`` that the command line does not give (:data:`GIVEN`) the saved run's value
    (``saved``: destination -> value, as JSON); refuse (:class:`UsageError`, each one named with both values)
    an option given with another value, unless it is ``changeable``.

    ``own``: the options of this invocation alone (its outputs, its threads): neither taken nor compared.
    ``compared_later``: options whose given value is compared with the run's resolved settings instead
    (:func:`continued_settings`; the saved command line holds a default unresolved). A saved None (a default
    resolved later, or an option the run did not have) is taken but never refused, unless ``defaults`` says what it
    stood for in the run (``--folds`` unset: 10 folds): a given value other than that is refused, named with the
    default. ``where`` names the saved run
    in the message. Returns ``{dest: value}`` of the options taken whose value differs from this command line's
    (not those of ``resolved_later`` left None here: a default the command resolves, whose saved value is the
    resolved one). Without :data:`GIVEN` (``args`` not parsed by ``qpnlp.cli``) nothing is taken: every option
    counts as given.
    """
    given = getattr(args, GIVEN, None)
    if given is None:
        return {}
    taken, conflicts = {}, []
    for dest, value in saved.items():
        if dest in _NOT_OPTIONS or dest in own or not hasattr(args, dest):
            continue
        now = _as_stored(getattr(args, dest))
        if dest not in given:
            if now != value and not (now is None and dest in resolved_later):
                taken[dest] = value
            setattr(args, dest, value)
        elif dest in changeable or dest in compared_later:
            continue
        elif now != value and value is not None:
            conflicts.append(f"{given[dest]} {_shown(now)} here, {_shown(value)} in the saved run")
        elif value is None and dest in (defaults or {}) and now != _as_stored(defaults[dest]):
            conflicts.append(f"{given[dest]} {_shown(now)} here, the default ({_shown(defaults[dest])}) in the "
                             f"saved run")
    _refuse(conflicts, where)
    return taken


def taken_from_saved_run(args: argparse.Namespace, dest: str) -> bool:
    """Whether ``args.<dest>`` holds the saved run's value: ``--resume`` took it (:func:`continue_saved`), the
    command line not giving it.

    For the options that the commands refuse where the others leave them without effect: an earlier qpnlp
    recorded its defaults whatever the other options (``--folds 10`` of a fixed split, ``--dim 50`` beside
    pretrained vectors, ``--margin 0.1`` with the pointwise loss) and trained without them, so a resumed run
    continues without refusing them (an option this command line does not give).
    """
    given = getattr(args, GIVEN, None)
    return given is not None and dest not in given and getattr(args, dest, None) is not None


def _refuse(conflicts: Sequence[str], where: str) -> None:
    """:class:`UsageError` naming each of the ``conflicts`` (option, both values) with the run saved ``where``."""
    if conflicts:
        raise UsageError(f"--resume: this command line differs from the run saved in {where}: "
                         + "; ".join(conflicts) + " (leave these options out to continue with the run's values, or "
                         "train afresh without --resume)")


def continued_settings(args: argparse.Namespace, saved: Mapping[str, Any], now: Mapping[str, Any], *,
                       changeable: Collection[str], where: str) -> dict:
    """The resolved settings a resumed run continues with: the saved run's (``saved``, as recorded: ``model``
    options, ``train`` settings, selection ``grid``), with the ``changeable`` training settings this command line
    gives taken from ``now`` (this invocation's, resolved the same way), and ``progress`` always this invocation's.

    A model option (``--NAME``, destination ``config__NAME``) or training setting given with a value other than the
    run's, a ``--select``/``--no-select`` that gives another grid, or a given option that is an axis of the run's
    grid (the run selects it on dev) is refused (:class:`UsageError`, named with both values). A setting the saved
    run does not record (added to qpnlp since) is this invocation's; one it records that this qpnlp lacks (removed
    since) is left out, for the training state's identity check to name (it was passed on to ``TrainConfig``: a
    TypeError "unexpected keyword argument").
    """
    given = getattr(args, GIVEN, None) or {}
    conflicts = []
    saved = {**saved, **{part: {k: v for k, v in saved[part].items() if k in now[part]} for part in ("model", "train")}}
    train = {**now["train"], **saved["train"], "progress": now["train"].get("progress")}
    for name, value in now["train"].items():
        if name not in given or name not in saved["train"]:
            continue
        if name in changeable:
            train[name] = value
        elif _as_stored(value) != saved["train"][name]:
            conflicts.append(f"{given[name]} {_shown(value)} here, {_shown(saved['train'][name])} in the saved run")
    model = {**now["model"], **saved["model"]}
    for name, value in now["model"].items():
        dest = f"config__{name}"
        if dest in given and name in saved["model"] and _as_stored(value) != saved["model"][name]:
            conflicts.append(f"{given[dest]} {_shown(value)} here, {_shown(saved['model'][name])} in the saved run")
    _refuse(conflicts + _grid_conflicts(given, saved.get("grid"), now.get("grid")), where)
    return dict(model=model, train=train, grid=saved.get("grid"))


def _grid_conflicts(given: Mapping[str, str], grid: list | None, now: list | None) -> list[str]:
    """What the command line (``given``) asks of the selection grid against the saved run's ``grid``: another grid
    (``--select``, ``--no-select``: ``now``), or a fixed value of one of its axes (a given option the run selects
    on dev)."""
    def shown(found) -> str:
        return f"the grid {_shown(found)}" if found else "no grid"

    if "select" in given:
        flag = given["select"] if now else "--no-select"
        return [] if _as_stored(now) == grid else [f"{flag}: {shown(now)} here, {shown(grid)} in the saved run"]
    axes = sorted({axis for candidate in grid or [] for axis in candidate})
    return [f"{given[dest]}: the saved run selects {axis} on dev ({shown(grid)})"
            for axis in axes for dest in (axis, f"config__{axis}") if dest in given]


def said_continued(taken: Mapping[str, Any], saved: Mapping[str, Any] | None = None,
                   now: Mapping[str, Any] | None = None) -> str | None:
    """The status line of a resumed run that continues what this command line does not give: the options taken
    (``taken``, :func:`continue_saved`) and the resolved settings (``saved`` against ``now``, as
    :func:`continued_settings` takes them) whose value this command line alone would not give, each named by its
    option (``--lr 0.002``). None when there is none."""
    named: dict[str, str] = {}
    for dest, value in taken.items():
        flag = _flag(dest)
        named[flag] = ("--no-select" if not value else f"--select {' '.join(value)}") if dest == "select" else \
            f"{flag} {_shown(value)}"
    for part in ("model", "train"):
        for name, value in (saved or {}).get(part, {}).items():
            if name != "progress" and _as_stored((now or {}).get(part, {}).get(name)) != _as_stored(value):
                named[_flag(name)] = f"{_flag(name)} {_shown(value)}"
    if saved and _as_stored(now.get("grid")) != _as_stored(saved.get("grid")):
        named["--select"] = f"the selection grid {_shown(saved.get('grid'))}"
    if not named:
        return None
    return "--resume: continuing with the saved run's " + ", ".join(named.values()) + " (not given here)"


def _flag(dest: str) -> str:
    """The option of a destination or setting: ``config__max_periods`` and ``max_periods`` -> ``--max-periods``."""
    return "--" + dest.removeprefix("config__").replace("_", "-")


def resume_training_run(args: argparse.Namespace) -> dict | None:
    """Under ``--resume``, give ``qpnlp train MODEL``'s options that the command line does not give the values of
    the run that wrote the training state (:func:`continue_saved` on its recorded command line, the options it was
    given counting as given here too: ``explicit_options``); returns that run's record
    (``qpnlp.commands._outputs.saved_run_file``) with ``taken`` (the options taken), None without one.

    The record of an earlier qpnlp holds no resolved settings (``settings``): the training settings taken from its
    command line count as given too, so that the run continues them rather than today's defaults for the model
    and data set (``--margin 0.1`` recorded by a qpnlp whose default it was, not WikiQA's 0.02 of today).
    """
    from qpnlp.training.defaults import train_config_class
    from qpnlp.training.state import RESUMABLE_CHANGES

    from ._config_options import explicit_options
    from ._outputs import saved_run_file, state_directory

    saved = saved_run_file(args)
    if saved is None:
        return None
    arguments = saved["arguments"]
    resolved = {f.name for f in dataclasses.fields(train_config_class(args.kind))} | {"select"} | \
        {dest for dest in vars(args) if dest.startswith("config__")}
    taken = continue_saved(args, arguments, changeable=TRAINING_CHANGEABLE | RESUMABLE_CHANGES, own=TRAINING_OWN,
                           compared_later=resolved, resolved_later=("vectors_scale", "dim"),
                           defaults=saved_defaults(args, arguments), where=str(state_directory(args)))
    if getattr(args, GIVEN, None) is not None:
        settings = {f.name for f in dataclasses.fields(train_config_class(args.kind))} - {"progress"}
        earlier = [*(arguments.get("explicit_options") or []),
                   *([] if "settings" in saved else [dest for dest in taken if dest in settings])]
        args.explicit_options = explicit_options(args) + [name for name in dict.fromkeys(earlier)
                                                          if name not in explicit_options(args)]
    return {**saved, "taken": taken}


def saved_defaults(args: argparse.Namespace, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """What the options that ``qpnlp train MODEL`` resolves only once it reads the data or the vectors stood for in
    the saved run (its command line, ``arguments``) where it left them unset: ``--folds`` the protocol's
    :data:`~qpnlp.data.protocols.DEFAULT_FOLDS`, ``--vectors-backoff`` off, ``--pretrained-fallback`` the vectors'
    own (:func:`~qpnlp.data.vectors.recommended_fallback`; 0 with ``--no-pretrained``), ``--max-questions`` all
    and ``--train-split`` the data set's default (:func:`~qpnlp.data.qa.default_train_split`, in this run's data
    root). :func:`continue_saved` refuses another value given on the resuming command line, named with the
    default (it passed, and the run failed once the data and vectors were loaded, on a training state whose
    vocabulary or data differed, without naming the option)."""
    from qpnlp.data.protocols import DEFAULT_FOLDS
    from qpnlp.data.qa import default_train_split
    from qpnlp.data.vectors import recommended_fallback

    vectors = None if arguments.get("no_pretrained") else arguments.get("vectors")
    found = dict(folds=DEFAULT_FOLDS, vectors_backoff="off", max_questions="all",
                 pretrained_fallback=0 if vectors is None else recommended_fallback(vectors))
    given = getattr(args, GIVEN, None) or {}
    if "train_split" in given and arguments.get("dataset"):
        try:
            root = args.data if "data" in given else arguments.get("data")
            found["train_split"] = default_train_split(arguments["dataset"], root)
        except (OSError, ValueError):         # no data root: the run's loading says so
            pass
    return found


def resumed_training_settings(args: argparse.Namespace, saved: dict | None, config, options: dict,
                              grid: list | None) -> tuple[Any, dict, list | None, str | None]:
    """``(config, options, grid, line)`` of ``qpnlp train MODEL``: the saved run's resolved settings
    (:func:`continued_settings`) where ``saved`` (:func:`resume_training_run`) records them, else those given;
    ``line``: the status line naming what the resumed run continues (:func:`said_continued`), None if nothing."""
    from qpnlp.training.defaults import train_config_class
    from qpnlp.training.state import RESUMABLE_CHANGES

    from ._outputs import state_directory

    if saved is None:
        return config, options, grid, None
    now = dict(model=options, train=config.to_dict(), grid=grid)
    if "settings" not in saved or getattr(args, GIVEN, None) is None:    # a run file of an earlier qpnlp
        return config, options, grid, said_continued(saved["taken"])
    settings = continued_settings(args, saved["settings"], now, changeable=RESUMABLE_CHANGES,
                                  where=str(state_directory(args)))
    config = train_config_class(args.kind)(**settings["train"])
    return config, settings["model"], settings["grid"], said_continued(saved["taken"], settings, now)
