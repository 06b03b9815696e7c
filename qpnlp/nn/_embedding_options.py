"""The one check of the options of :func:`qpnlp.nn.position.make_embedding`, by name, type and value.

A model config (``OrderClassifierConfig.embedding_options``) and ``make_embedding`` call
:func:`check_embedding_options`, so that a bad option fails when the config is made (or read back from a
checkpoint), naming it, instead of building a model that silently does something else: a string
``"no"`` is truthy (trainable phases or sparse tables switched on), an infinite ``frequency_scale`` gives
NaN logits, a string ``"2"`` met ``>`` deep inside the layer.
"""

from __future__ import annotations

from collections.abc import Mapping

from qpnlp._checks import check_flag

from ._checks import check_real

__all__ = ["COMPLEX_ORDER_OPTIONS", "FREQUENCY_INITS", "SHARING_SCHEMES", "check_embedding_options",
           "check_frequency_scale"]

#: Sharing schemes of the frequencies and amplitudes (paper Table 4; :mod:`qpnlp.nn.position`).
SHARING_SCHEMES = ("none", "word", "dimension")
#: Initialisations of the frequencies (:mod:`qpnlp.nn.position`).
FREQUENCY_INITS = ("normal", "uniform", "sinusoidal", "zero")

#: The options of ``make_embedding("complex_order", ...)``; every kind takes ``sparse`` too.
COMPLEX_ORDER_OPTIONS = ("frequency_sharing", "amplitude_sharing", "initial_phase", "frequency_init",
                         "frequency_scale")


def check_frequency_scale(name: str, value: object) -> float:
    r"""``value`` as a float if it is a finite number :math:`s > 0` (TypeError for a non-number, ValueError else).

    :math:`s` scales the initial frequencies (:math:`\omega \sim \mathcal{N}(0, s^2)` or :math:`U(-s, s)`): an
    infinite one gives NaN embeddings at every position, NaN gives NaN everywhere. The number check is
    ``qpnlp.nn._checks.check_real``'s, without its reading of a one-element tensor (an option is kept in the
    model config, written as JSON).
    """
    scale = check_real(name, value, "a positive finite number", tensors=False)
    if not scale > 0:
        raise ValueError(f"{name} must be a positive finite number; got {value!r}")
    return scale


def _check_choice(name: str, value: object, allowed: tuple) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}")


def check_embedding_options(kind: str, options: Mapping, *, prefix: str | None = None) -> None:
    """Check the ``**options`` of :func:`~qpnlp.nn.position.make_embedding` for ``kind`` (raises, returns None).

    ``sparse`` (every kind) and ``initial_phase`` must be bools; ``frequency_scale`` a finite number > 0;
    ``frequency_sharing``, ``amplitude_sharing`` and ``frequency_init`` one of their names (``complex_order``
    needs a frequency scheme: ``None`` is ``kind="complex_vanilla"``). Options of another kind or unknown
    names raise TypeError (as an unknown keyword would). ``prefix`` names the mapping in the messages:
    ``prefix="embedding_options"`` gives ``embedding_options['frequency_scale']``.

    >>> check_embedding_options("complex_order", {"initial_phase": "no"}, prefix="embedding_options")
    Traceback (most recent call last):
    ...
    TypeError: embedding_options['initial_phase'] must be True or False; got str 'no'
    """
    label = (lambda key: f"{prefix}[{key!r}]") if prefix else str
    _check_names(kind, options, prefix or "options")
    for key in ("sparse", "initial_phase"):
        if key in options:
            check_flag(label(key), options[key])
    if "frequency_scale" in options:
        check_frequency_scale(label("frequency_scale"), options["frequency_scale"])
    for key, allowed in (("frequency_init", FREQUENCY_INITS), ("amplitude_sharing", SHARING_SCHEMES)):
        if key in options:
            _check_choice(label(key), options[key], allowed)
    if "frequency_sharing" in options:
        if options["frequency_sharing"] is None:
            raise ValueError(f"{label('frequency_sharing')}: complex_order needs a frequency_sharing scheme; "
                             f"use kind='complex_vanilla' for none")
        _check_choice(label("frequency_sharing"), options["frequency_sharing"], SHARING_SCHEMES)


def _check_names(kind: str, options: Mapping, name: str) -> None:
    """A mapping of option names (strings) that ``kind`` takes; TypeError naming ``name`` otherwise."""
    if not isinstance(options, Mapping):
        raise TypeError(f"{name} must be a dict of options; got {type(options).__name__}")
    bad_keys = [key for key in options if not isinstance(key, str)]
    if bad_keys:
        raise TypeError(f"{name} must have string keys (option names); got {bad_keys[0]!r}")
    extra = set(options) - {"sparse"} - (set(COMPLEX_ORDER_OPTIONS) if kind == "complex_order" else set())
    if extra:
        where = "apply to complex_order only" if kind != "complex_order" else "are unknown options"
        raise TypeError(f"{name}: {sorted(extra)} {where} for kind {kind!r}; complex_order takes "
                        f"{sorted(COMPLEX_ORDER_OPTIONS)}, every kind 'sparse'")
