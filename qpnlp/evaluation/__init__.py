"""Evaluation metrics: ranking metrics (MAP, MRR, P@1), the BM25 baseline and drift evaluation
(:mod:`~qpnlp.evaluation.drift`)."""

from qpnlp.evaluation.bm25 import bm25_scores, evaluate_bm25
from qpnlp.evaluation.ranking import (
    RankingResult,
    average_precision,
    precision_at_1,
    rank_order,
    ranking_metrics,
    reciprocal_rank,
)

__all__ = [
    "RankingResult",
    "average_precision",
    "bm25_scores",
    "evaluate_bm25",
    "precision_at_1",
    "rank_order",
    "ranking_metrics",
    "reciprocal_rank",
]
