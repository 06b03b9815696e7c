"""Training loops, experiment protocols and checkpoints."""

from .checkpoint import Checkpoint, convert_legacy_checkpoint, load_checkpoint, save_checkpoint
from .sparse_rmsprop import SparseRMSprop
from .trainer import FitResult, Optimisers, TrainConfig, accuracy, fit, predict, seed_everything, train_step

__all__ = ["TrainConfig", "FitResult", "Optimisers", "fit", "predict", "accuracy", "seed_everything", "train_step",
           "Checkpoint", "save_checkpoint", "load_checkpoint", "convert_legacy_checkpoint", "SparseRMSprop"]
