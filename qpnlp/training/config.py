"""The training settings of the classifier and matching trainers (:class:`TrainConfig`) and their checks.

Every rule is checked when a config is built, so a bad value fails before any
data is read: :class:`ConfigError` (a ``ValueError``) names the field and the
value.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from qpnlp import _checks
from qpnlp._checks import is_integer as _is_integer
from qpnlp._errors import preview
from qpnlp._device import resolve_device

from .compiled import check_compile_mode
from .length_chunks import DEFAULT_OVERHEAD

__all__ = ["TrainConfig", "ConfigError", "check_seed", "check_integers", "check_reals", "OPTIMIZERS", "SEEDS",
           "MAX_RATE", "MAX_LR"]

#: The optimisers of the embedding tables (``optimizer=``).
OPTIMIZERS = ("adam", "rmsprop")
#: Seeds are in [0, SEEDS): what ``np.random.seed`` (and so :func:`~qpnlp.training.trainer.seed_everything`) accepts; the rule of every
#: qpnlp trainer, Word2Fun's included (``qpnlp._checks``).
SEEDS = _checks.SEEDS
#: The largest learning rate, weight decay or margin: the largest float32 (about 3.4e38). A larger one overflows
#: when it meets float32 parameters (torch: "value cannot be converted to type float without overflow").
MAX_RATE = _checks.FLOAT32_MAX
#: The largest learning rate: :data:`MAX_RATE` / 10, as Adam's first step multiplies the rate by its bias
#: correction 1 / (1 - beta1) = 10.
MAX_LR = MAX_RATE / 10


class ConfigError(ValueError):
    """A setting that a training config or a model config refuses (a usage error on the command line)."""


def check_seed(seed) -> int:
    """``seed`` if it is an integer in [0, 2**32) (:func:`~qpnlp.training.trainer.seed_everything` takes it), else
    :class:`ConfigError`.

    Parameters
    ----------
    seed : int
        The seed; a bool, a float or an integer outside [0, 2**32) is refused.
    """
    try:
        return _checks.check_seed(seed)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def check_integers(config, names: Sequence[str], *, optional: Sequence[str] = ()) -> None:
    """Raise :class:`ConfigError` naming the first field of ``names`` that is not an integer (a bool is not;
    None is allowed for the ``optional`` ones), e.g. ``batch_size=1.5`` from a selection grid.

    Parameters
    ----------
    config : object
        The config (a dataclass) whose fields are read.
    names : sequence of str
        The fields that must be integers.
    optional : sequence of str, default ()
        Those of ``names`` that may also be None.
    """
    for name in names:
        value = getattr(config, name)
        if not (_is_integer(value) or (value is None and name in optional)):
            raise ConfigError(f"{name} must be an integer{' (or None)' if name in optional else ''}; "
                              f"got {type(value).__name__} {value!r}")


def check_reals(config, names: Sequence[str], *, optional: Sequence[str] = ()) -> None:
    """Raise :class:`ConfigError` naming the first field of ``names`` that is not a real number (a bool is not;
    None is allowed for the ``optional`` ones), e.g. ``lr="0.1"`` from a hand-written config.

    Parameters
    ----------
    config : object
        The config (a dataclass) whose fields are read.
    names : sequence of str
        The fields that must be real numbers (a string reading as NaN or an infinity is named as such).
    optional : sequence of str, default ()
        Those of ``names`` that may also be None.
    """
    for name in names:
        value = getattr(config, name)
        if isinstance(value, str) and _non_finite_text(value):      # "nan" from a selection grid
            raise ConfigError(f"{name} must be a finite number; got {value!r}")
        if not ((isinstance(value, numbers.Real) and not isinstance(value, bool)) or
                (value is None and name in optional)):
            raise ConfigError(f"{name} must be a number{' (or None)' if name in optional else ''}; "
                              f"got {type(value).__name__} {value!r}")


def _finite(value: numbers.Real) -> bool:
    """Whether a number is finite; an integer always is (``math.isfinite(10**400)`` raises OverflowError: the
    bound checks then refuse it by name)."""
    return isinstance(value, numbers.Integral) or math.isfinite(value)


def _shown(value: numbers.Real) -> str:
    """``value`` as ``:g`` writes it, or its repr cut short (``qpnlp._errors.preview``) for an integer beyond
    the floats (``10**400``, which ``:g`` cannot write)."""
    try:
        return f"{value:g}"
    except OverflowError:
        return preview(value)


def _non_finite_text(text: str) -> bool:
    """Whether ``text`` reads as NaN or an infinity (``"nan"``, ``"-inf"``, ``"Infinity"``)."""
    try:
        return not math.isfinite(float(text))
    except ValueError:
        return False


@dataclass
class TrainConfig:
    """Optimisation settings.

    The field defaults are the trainer's, for any model; a registered model's
    own (its reproduction's, what ``qpnlp train MODEL`` uses with no flags)
    are :func:`qpnlp.training.defaults.default_train_config`. Unlike
    ``--embedding-lr``, which defaults to ``--lr``, ``embedding_lr`` here is
    a field of its own.

    ``lr`` applies to dense parameters (Adam with ``weight_decay``),
    ``embedding_lr`` to sparse embedding tables (SparseAdam, which only
    touches the rows of the batch); ``phase_lr``, if set, replaces
    ``embedding_lr`` for the phase tables (embeddings registered as
    ``phase``, e.g. in :class:`~qpnlp.nn.ComplexWordEmbedding`), whose
    entries are angles rather than amplitudes. ``optimizer="rmsprop"`` uses RMSprop
    instead (the thesis' QPDN optimiser, Table 5.4), with
    :class:`~qpnlp.training.sparse_rmsprop.SparseRMSprop` on the tables and
    Keras' constants (rho 0.9, eps 1e-7). Early stopping keeps the parameters of the
    epoch with the best dev accuracy and stops after ``patience`` epochs
    without improvement. ``length_chunks`` cuts each batch into chunks of rows
    of similar length, each padded only to its own longest row
    (:mod:`qpnlp.training.length_chunks`; the value is the cost of one more
    chunk in padded positions): the same outputs and gradients to rounding,
    for less padding; ``None`` passes every batch whole. Evaluation batches
    are chunked; training batches only for models that ask for it (dropout then
    draws its masks chunk by chunk: the same distribution, another random stream).
    ``compile`` runs the training steps' forward through ``torch.compile`` in
    that mode (``"default"``, ``"reduce-overhead"``, ...; ``None``: eager), for
    the models it speeds up (CNM; :mod:`qpnlp.training.compiled`).
    ``pad_to_multiple_of`` rounds the padded length of the training batches
    (and of their chunks) up to a multiple of it, so that they come in a few
    lengths; ``None`` is 8 under a mode with CUDA graphs (``"reduce-overhead"``,
    ``"max-autotune"``) on a GPU (they record one graph per length) and no
    rounding otherwise
    (:func:`~qpnlp.training.compiled.training_pad_multiple`).
    ``progress=True`` draws a tqdm bar over each epoch's batches on stderr;
    the default, False, keeps the Python API silent, as
    :func:`qpnlp.word2fun.fit` (``qpnlp train`` draws bars on a terminal).

    Parameters
    ----------
    epochs : int, default 30
        The most epochs trained (>= 1).
    batch_size : int, default 32
        Training texts per optimiser step (>= 1).
    lr : float, default 1e-2
        Learning rate of the dense parameters (positive, finite).
    embedding_lr : float, default 1e-2
        Learning rate of the sparse embedding tables (positive, finite).
    phase_lr : float or None, default None
        Learning rate of the phase tables; None: ``embedding_lr``. Refused for a model without phase tables.
    weight_decay : float, default 0.0
        Adam's (or RMSprop's) weight decay of the dense parameters (>= 0); the tables take none.
    patience : int, default 5
        Stop after this many epochs without a better dev score (>= 1).
    seed : int, default 0
        An integer in [0, 2**32). :func:`~qpnlp.training.fit` seeds each epoch's batch order with it
        (:func:`~qpnlp.training.matching.fit_matching` its batches and triplets) and nothing else: dropout draws
        from torch's global generator, which the caller seeds (:func:`~qpnlp.training.seed_everything` before
        each call, as the model's own ``generator`` seeds its initialisation). The runs that build their model
        (:func:`~qpnlp.training.classification.run_split`, :func:`~qpnlp.training.matching.run_matching`,
        ``qpnlp train``) also seed the global generators with it, for the run only
        (:func:`~qpnlp.training.trainer.seeded`): initialisation, dropout and batch order all follow it.
    device : str, default "cpu"
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``; the name is checked here, the machine when training starts.
    max_len : int or None, default None
        Truncate texts to this many tokens (>= 1); None: no truncation.
    progress : bool, default False
        Draw a tqdm bar over each epoch's batches on stderr (a bool: ``"no"`` or 1 is a ConfigError, not True).
    optimizer : str, default "adam"
        ``"adam"`` or ``"rmsprop"``.
    length_chunks : int or None, default DEFAULT_OVERHEAD
        The cost of one more chunk of a batch, in padded positions (>= 0); None: batches are not chunked.
    compile : str or None, default None
        A torch.compile mode of :data:`~qpnlp.training.compiled.COMPILE_MODES`; None: eager.
    pad_to_multiple_of : int or None, default None
        Round the training batches' padded length up to a multiple of it (>= 1); None: 8 under a CUDA-graph mode on
        a GPU, else no rounding.
    """

    epochs: int = 30
    batch_size: int = 32
    lr: float = 1e-2
    embedding_lr: float = 1e-2
    phase_lr: float | None = None
    weight_decay: float = 0.0
    patience: int = 5
    seed: int = 0
    device: str = "cpu"
    max_len: int | None = None
    progress: bool = False
    optimizer: str = "adam"
    length_chunks: int | None = DEFAULT_OVERHEAD
    compile: str | None = None
    pad_to_multiple_of: int | None = None

    def __post_init__(self) -> None:
        check_integers(self, ("epochs", "batch_size", "patience", "max_len", "length_chunks", "pad_to_multiple_of"),
                       optional=("max_len", "length_chunks", "pad_to_multiple_of"))
        check_reals(self, ("lr", "embedding_lr", "phase_lr", "weight_decay"), optional=("phase_lr",))
        check_seed(self.seed)
        try:
            _checks.check_flag("progress", self.progress)     # "no" or 1 was read as True
        except TypeError as error:
            raise ConfigError(str(error)) from None
        try:
            check_compile_mode(self.compile)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"optimizer must be one of {OPTIMIZERS}; got {self.optimizer!r}")
        if self.epochs < 1 or self.batch_size < 1 or self.patience < 1:
            raise ConfigError(f"epochs, batch_size and patience must be >= 1; got {self.epochs}, "
                              f"{self.batch_size}, {self.patience}")
        rates = [self.lr, self.embedding_lr] + ([] if self.phase_lr is None else [self.phase_lr])
        if not all(_finite(r) and r > 0 for r in rates):
            raise ConfigError(f"learning rates must be positive and finite; got {self.lr}, {self.embedding_lr}, "
                              f"{self.phase_lr}")
        if not (_finite(self.weight_decay) and self.weight_decay >= 0):
            raise ConfigError(f"weight_decay must be >= 0 and finite; got {self.weight_decay}")
        self._check_overflow()
        if self.max_len is not None and self.max_len < 1:
            raise ConfigError(f"max_len must be >= 1 (or None); got {self.max_len}")
        if self.pad_to_multiple_of is not None and self.pad_to_multiple_of < 1:
            raise ConfigError(f"pad_to_multiple_of must be >= 1 (or None); got {self.pad_to_multiple_of}")
        if self.length_chunks is not None and self.length_chunks < 0:
            raise ConfigError(f"length_chunks must be >= 0 (or None); got {self.length_chunks}")
        try:
            resolve_device(self.device, available=False)     # the name; fit() checks this machine has it
        except ValueError as error:
            raise ConfigError(str(error)) from None

    def _check_overflow(self, limits: dict[str, float] | None = None, where: str = "the optimiser step") -> None:
        """:class:`ConfigError` for a setting that overflows float32 ``where`` it is used, which torch reports
        without the setting's name (or not at all: an infinite loss). ``limits`` maps field names to their
        largest value; default the rates of the optimiser step (:data:`MAX_LR`, :data:`MAX_RATE`)."""
        if limits is None:
            limits = dict(lr=MAX_LR, embedding_lr=MAX_LR, phase_lr=MAX_LR, weight_decay=MAX_RATE)
        for name, limit in limits.items():
            value = getattr(self, name)
            if value is not None and value > limit:
                raise ConfigError(f"{name} must be at most {limit:.4g}, else {where} overflows float32; "
                                  f"got {_shown(value)}")

    def to_dict(self) -> dict:
        return asdict(self)
