"""Checkpoints that restore model, vocabulary and configuration without executing code.

One file written by ``torch.save`` holding only tensors, strings, numbers,
lists and dicts, and read back with ``torch.load(weights_only=True)`` (no
arbitrary unpickling).
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

from qpnlp.models import QPDN, QPDNConfig, RealBagOfWords
from qpnlp.models.cnm import CNM, CNMConfig

FORMAT = "qpnlp-checkpoint-1"


def build_model(kind: str, config: dict) -> nn.Module:
    """A freshly initialised model of ``kind`` from its JSON config (parameters to be loaded)."""
    if kind == "qpdn":
        cfg = QPDNConfig.from_dict(config)
        idf = torch.ones(cfg.num_words) if cfg.weighting == "idf" else None
        return QPDN(cfg, idf=idf)
    if kind == "real_bow":
        cfg = dict(config)
        idf = torch.ones(cfg["num_words"]) if cfg.get("weighting") == "idf" else None
        return RealBagOfWords(**cfg, idf=idf)
    if kind == "cnm":
        return CNM(CNMConfig.from_dict(config))
    raise ValueError(f"unknown model kind {kind!r}; known: qpdn, real_bow, cnm")


def save_checkpoint(path: str | os.PathLike, *, kind: str, config: dict, model: nn.Module, vocab: dict,
                    label_names: list[str], meta: dict | None = None) -> Path:
    """Write model parameters, config, vocabulary and label names to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = dict(format=FORMAT, kind=kind, config=config, vocab=vocab, label_names=list(label_names),
                   meta=meta or {}, state_dict={k: v.detach().cpu() for k, v in model.state_dict().items()})
    torch.save(payload, path)
    return path


def load_checkpoint(path: str | os.PathLike, *, device="cpu") -> tuple[nn.Module, dict]:
    """Rebuild the model from a checkpoint; returns ``(model, payload)`` (payload without the state dict)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    payload = torch.load(path, map_location=device, weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not a qpnlp checkpoint (expected format {FORMAT!r})")
    model = build_model(payload["kind"], payload["config"])
    model.load_state_dict(payload.pop("state_dict"))
    return model.to(device).eval(), payload
