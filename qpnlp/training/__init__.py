"""Training loops, experiment protocols, checkpoints and resumable training state."""

from qpnlp._errors import TrainingDiverged

from .checkpoint import Checkpoint, convert_legacy_checkpoint, load_checkpoint, save_checkpoint
from .length_chunks import chunked, plan_chunks
from .config import ConfigError, TrainConfig
from .loop import TrainingInterrupted, early_stopping
from .optimisers import Optimisers, check_optimizer, dense_gradients, sparse_tables
from .sparse_rmsprop import SparseRMSprop
from .trainer import FitResult, accuracy, fit, predict, seed_everything, train_step

__all__ = ["TrainConfig", "FitResult", "Optimisers", "fit", "predict", "accuracy", "seed_everything", "train_step",
           "early_stopping", "ConfigError", "TrainingDiverged", "TrainingInterrupted", "sparse_tables",
           "dense_gradients", "check_optimizer",
           "Checkpoint", "save_checkpoint", "load_checkpoint", "convert_legacy_checkpoint", "SparseRMSprop",
           "chunked", "plan_chunks"]
