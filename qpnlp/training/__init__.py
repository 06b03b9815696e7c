"""Training loops, experiment protocols, checkpoints and resumable training state."""

from .checkpoint import Checkpoint, convert_legacy_checkpoint, load_checkpoint, save_checkpoint
from .length_chunks import chunked, plan_chunks
from .sparse_rmsprop import SparseRMSprop
from .trainer import (ConfigError, FitResult, Optimisers, TrainConfig, TrainingDiverged, TrainingInterrupted, accuracy,
                      check_optimizer, dense_gradients, early_stopping, fit, predict, seed_everything, sparse_tables,
                      train_step)

__all__ = ["TrainConfig", "FitResult", "Optimisers", "fit", "predict", "accuracy", "seed_everything", "train_step",
           "early_stopping", "ConfigError", "TrainingDiverged", "TrainingInterrupted", "sparse_tables",
           "dense_gradients", "check_optimizer",
           "Checkpoint", "save_checkpoint", "load_checkpoint", "convert_legacy_checkpoint", "SparseRMSprop",
           "chunked", "plan_chunks"]
