r"""CNM matching patterns: which windows and words of a question-answer pair drive the score.

CNM (:class:`~qpnlp.models.cnm.CNM`) represents a sentence by the
max-pooled Born probabilities of its local mixtures and scores a pair by a
cosine:

.. math::
    x_{l,k} = \max_t P^{(l)}_{t,k}, \qquad
    P^{(l)}_{t,k} = \sum_{j<l} p^{(l)}_{t,j}\, |\langle v_k|w_{t+j}\rangle|^2, \qquad
    \operatorname{score} = \sum_{l,k} c_{l,k}, \quad
    c_{l,k} = \frac{x^q_{l,k}\, x^a_{l,k}}{\|x^q\|\,\|x^a\|} \ge 0 .

So the score is a sum of non-negative contributions :math:`c_{l,k}`, one
per (window size l, measurement k). Each comes from one window of the
question (:math:`t^q = \arg\max_t P^{(l)}_{t,k}`) and one of the answer: the
*matching pattern* of that feature. Inside a window, word :math:`t+j` holds
the share :math:`p_{t,j} |\langle v_k|w_{t+j}\rangle|^2 / x_{l,k}` of the
pooled probability (its mixture weight times how likely measurement k
finds it). Spreading every :math:`c_{l,k}` over the words of its two windows
by these shares gives a word attribution that adds up to the score on each
side (question and answer separately).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import pandas as pd
import torch

from qpnlp._modes import eval_mode
from qpnlp.models.cnm import CNM
from qpnlp.nn import window_weights

__all__ = ["MatchingPatterns", "matching_patterns"]

_COLOUR = "255, 140, 0"     # orange highlight, alpha = attribution / largest attribution


@dataclass(frozen=True, eq=False)        # == is identity: the generated one compared tables and raised
class MatchingPatterns:
    """Result of :func:`matching_patterns`.

    Attributes
    ----------
    score : float
        The model's score of the pair (cosine of the pooled probabilities).
    question, answer : tuple of str
        The tokens as shown.
    features : pandas.DataFrame
        One row per (window size, measurement), by decreasing contribution:
        ``window, measurement, contribution, question_probability,
        answer_probability, question_start, answer_start, question_window,
        answer_window, question_words, answer_words``. The ``*_words`` cells
        list ``(token, mixture weight p, |<v_k|w>|^2)`` for the words of the
        window that achieves the max pooling.
    words : pandas.DataFrame
        One row per token: ``side`` (``"question"``/``"answer"``),
        ``position, token, attribution``; attributions sum to ``score`` per side.
    """

    score: float
    question: tuple
    answer: tuple
    features: pd.DataFrame
    words: pd.DataFrame

    def attributions(self, side: str) -> list[float]:
        """Word attributions of ``"question"`` or ``"answer"`` in token order."""
        if side not in ("question", "answer"):
            raise ValueError(f"side must be 'question' or 'answer'; got {side!r}")
        return self.words.loc[self.words["side"] == side, "attribution"].tolist()

    def _largest(self) -> float:
        largest = float(self.words["attribution"].max()) if len(self.words) else 0.0
        return largest if largest > 0 else 1.0

    def to_html(self, top: int = 5) -> str:
        """Highlighted question and answer (opacity = attribution) and the ``top`` patterns, as HTML."""
        largest = self._largest()

        def sentence(side: str, tokens) -> str:
            spans = []
            for token, value in zip(tokens, self.attributions(side)):
                alpha = max(0.0, value) / largest
                spans.append(f'<span style="background-color: rgba({_COLOUR}, {alpha:.3f}); padding: 0 2px" '
                             f'title="attribution {value:.4f}">{html.escape(token)}</span>')
            return " ".join(spans)

        rows = []
        for r in self.features.head(top).itertuples():
            rows.append(f"<tr><td>{r.window}</td><td>{r.measurement}</td><td>{r.contribution:.4f}</td>"
                        f"<td>{html.escape(r.question_window)}</td><td>{r.question_probability:.3f}</td>"
                        f"<td>{html.escape(r.answer_window)}</td><td>{r.answer_probability:.3f}</td></tr>")
        return (f'<div class="qpnlp-matching"><p><b>score</b> {self.score:.4f}</p>'
                f"<p><b>Q:</b> {sentence('question', self.question)}</p>"
                f"<p><b>A:</b> {sentence('answer', self.answer)}</p>"
                "<table><thead><tr><th>l</th><th>k</th><th>contribution</th><th>question window</th>"
                "<th>x<sup>q</sup></th><th>answer window</th><th>x<sup>a</sup></th></tr></thead>"
                f"<tbody>{''.join(rows)}</tbody></table></div>")

    def _repr_html_(self) -> str:
        return self.to_html()

    def to_text(self, top: int = 5, threshold: float = 0.1) -> str:
        """Plain-text rendering: words with attribution >= ``threshold`` x the largest in ``[word attribution]``."""
        largest = self._largest()

        def sentence(side: str, tokens) -> str:
            return " ".join(f"[{t} {v:.3f}]" if v >= threshold * largest else t
                            for t, v in zip(tokens, self.attributions(side)))

        lines = [f"score {self.score:.4f}", f"Q: {sentence('question', self.question)}",
                 f"A: {sentence('answer', self.answer)}", f"top {top} patterns (window l, measurement k):"]
        for r in self.features.head(top).itertuples():
            lines.append(f"  l={r.window} k={r.measurement:<3} +{r.contribution:.4f}  Q \"{r.question_window}\" "
                         f"({r.question_probability:.3f})  <->  A \"{r.answer_window}\" ({r.answer_probability:.3f})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def _encode(text, vocab, name: str) -> tuple[torch.Tensor, list[str]]:
    """Ids ``(L,)`` and display tokens of one side: a list of str tokens (encoded with ``vocab``) or a 1-D LongTensor.

    A list of ids (ints) is refused with a ``TypeError``: encoded as tokens, every id would become ``<unk>``.
    """
    if isinstance(text, str):
        raise TypeError(f"{name} must be a list of tokens or a 1-D LongTensor of ids, not a string; tokenize first")
    if isinstance(text, torch.Tensor):
        if text.dtype != torch.long or text.dim() != 1:
            raise ValueError(f"{name} ids must be a 1-D LongTensor; got {text.dtype} {tuple(text.shape)}")
        ids = text
        tokens = vocab.decode(ids.tolist()) if vocab is not None else [str(i) for i in ids.tolist()]
    else:
        tokens = list(text)
        bad = next((i for i, t in enumerate(tokens) if not isinstance(t, str)), None)
        if bad is not None:
            raise TypeError(f"{name} token {bad} is {type(tokens[bad]).__name__} {tokens[bad]!r}, not a str; pass "
                            f"tokens as a list of str, or ids as a 1-D LongTensor (torch.tensor(ids))")
        if vocab is None:
            raise ValueError(f"pass vocab= to encode the {name} tokens")
        ids = torch.tensor(vocab.encode(tokens) if tokens else [], dtype=torch.long)
    if ids.numel() == 0:
        raise ValueError(f"the {name} is empty")
    if bool((ids == 0).any()):
        raise ValueError(f"the {name} contains the padding id 0 at position {int((ids == 0).nonzero()[0])}")
    return ids, [str(t) for t in tokens]


def _side(model: CNM, ids: torch.Tensor) -> dict:
    """Per-word probabilities ``(L, k)``, window weights, pooled ``(W, k)`` and argmax positions of one text."""
    device = next(model.parameters()).device
    ids = ids.to(device).unsqueeze(0)
    mask = torch.ones_like(ids, dtype=torch.bool)
    states, scores = model.states(ids, mask)
    word_probs = model.word_probabilities(states).to(scores.dtype)[0]                  # (L, k)
    probs = model.probabilities(ids, mask)[0]                                           # (W, L, k)
    pooled, where = probs.max(dim=1)                                                    # (W, k)
    padding = model.config.window_padding
    weights = [window_weights(scores, mask, l, padding)[0] for l in model.config.windows]  # (T_l, l) each
    return dict(word_probs=word_probs.cpu(), pooled=pooled.cpu(), where=where.cpu(),
                weights=[w.cpu() for w in weights], padding=padding)


def _window(side: dict, tokens: list[str], w: int, l: int, k: int):
    """Start, members ``[(position, token, p, prob)]`` of the pooled window of feature (w, k).

    Window t holds words t+j (``window_padding="end"``) or t-l+1+j (``"both"``), j < l.
    """
    t = int(side["where"][w, k])
    first = t - (l - 1) if side["padding"] == "both" else t
    members = []
    for j in range(l):
        position = first + j
        if not 0 <= position < len(tokens):
            continue
        p = float(side["weights"][w][t, j])
        members.append((position, tokens[position], p, float(side["word_probs"][position, k])))
    return max(first, 0), members


@torch.no_grad()
def matching_patterns(model: CNM, question, answer, vocab=None) -> MatchingPatterns:
    r"""The windows and words of a question-answer pair that drive a CNM score.

    Parameters
    ----------
    model : CNM
        With ``head="measurement"``, ``mixture="local"`` and ``pooling="max"``
        (what the thesis trains). Evaluated in eval mode (no dropout); the
        train/eval mode of each of its submodules is restored afterwards.
    question, answer : list of str or torch.LongTensor
        Tokens (encoded with ``vocab``) or 1-D ids without padding. Ids are
        accepted only as a LongTensor: a list of ints is a ``TypeError``
        (as tokens every id would be the unknown word).
    vocab : qpnlp.data.Vocabulary, optional
        Needed for tokens; used to show ids as words.

    Returns
    -------
    MatchingPatterns
        Contributions per (window size, measurement), their windows, word
        attributions; ``.to_html()`` and ``.to_text()`` render them.

    Examples
    --------
    >>> from qpnlp.models.cnm import CNM, CNMConfig
    >>> model = CNM(CNMConfig(num_words=10, dim=4, num_measurements=3, windows=[1, 2]))
    >>> patterns = matching_patterns(model, torch.tensor([2, 3, 4]), torch.tensor([5, 3]))
    >>> len(patterns.features), abs(sum(patterns.attributions("answer")) - patterns.score) < 1e-6
    (6, True)
    """
    if not isinstance(model, CNM):
        raise TypeError(f"matching patterns are defined for CNM; got {type(model).__name__}")
    c = model.config
    if c.head != "measurement" or c.mixture != "local" or c.pooling != "max":
        raise ValueError("matching patterns need head='measurement', mixture='local' and pooling='max'; got "
                         f"head={c.head!r}, mixture={c.mixture!r}, pooling={c.pooling!r}")
    q_ids, q_tokens = _encode(question, vocab, "question")
    a_ids, a_tokens = _encode(answer, vocab, "answer")
    with eval_mode(model):
        q, a = _side(model, q_ids), _side(model, a_ids)
    eps = 1e-8                                              # as torch.nn.functional.cosine_similarity
    denominator = max(float(q["pooled"].norm()), eps) * max(float(a["pooled"].norm()), eps)
    contribution = q["pooled"] * a["pooled"] / denominator                                  # (W, k)
    attribution = {"question": [0.0] * len(q_tokens), "answer": [0.0] * len(a_tokens)}
    rows = []
    for w, l in enumerate(c.windows):
        for k in range(contribution.shape[1]):
            share = float(contribution[w, k])
            row = dict(window=l, measurement=k, contribution=share)
            for name, side, tokens in (("question", q, q_tokens), ("answer", a, a_tokens)):
                start, members = _window(side, tokens, w, l, k)
                pooled = float(side["pooled"][w, k])
                for position, _, p, prob in members:
                    if pooled > 0:
                        attribution[name][position] += share * p * prob / pooled
                row.update({f"{name}_probability": pooled, f"{name}_start": start,
                            f"{name}_window": " ".join(m[1] for m in members if m[2] > 0),
                            f"{name}_words": [(m[1], m[2], m[3]) for m in members if m[2] > 0]})
            rows.append(row)
    features = pd.DataFrame(rows).sort_values("contribution", ascending=False, kind="stable").reset_index(drop=True)
    words = pd.DataFrame([(side, i, token, attribution[side][i])
                          for side, tokens in (("question", q_tokens), ("answer", a_tokens))
                          for i, token in enumerate(tokens)], columns=["side", "position", "token", "attribution"])
    return MatchingPatterns(float(contribution.sum()), tuple(q_tokens), tuple(a_tokens), features, words)
