"""What a training state leaves on disk: one state per run, replaced each epoch, and nothing left aside by a resume.

A process killed between the two renames that replace a state (``qpnlp._atomic._replace_directory``) leaves
``checkpoint_dir`` missing and its previous version at ``.NAME.XXXXXXXX.old/NAME``. ``resume=True`` started such a
run afresh without a word, and the state it could have continued from stayed aside, a second copy that nothing
removed (one per candidate and fold under ``qpnlp train``).
"""

import json
import os
import tempfile

import numpy as np
import pytest
import torch

from qpnlp.data import EncodedTexts
from qpnlp.models import CNM, QPDN, CNMConfig, QPDNConfig
from qpnlp.training import TrainConfig, fit
from qpnlp.training.matching import EncodedQA, MatchingConfig, fit_matching
from qpnlp.training.state import JSON_FILE, TENSORS_FILE


def _texts(n=120, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    return EncodedTexts([list(rng.integers(2 + 8 * y, 10 + 8 * y, rng.integers(2, 7))) for y in labels], labels)


def _qpdn(seed):
    return QPDN(QPDNConfig(num_words=20, num_classes=2, dim=6, num_measurements=4, dropout=0.3,
                           weighting="trainable"), generator=torch.Generator().manual_seed(seed))


def _qa(seed=0, questions=8):
    rng = np.random.default_rng(seed)
    qs, cands, qidx, labels, groups = [], [], [], [], []
    for q in range(questions):
        qs.append(list(rng.integers(2, 20, 3)))
        start = len(cands)
        for j in range(3):
            cands.append(list(rng.integers(2, 20, rng.integers(2, 5))))
            qidx.append(q)
            labels.append(int(j == 0))
        groups.append(np.arange(start, len(cands)))
    return EncodedQA(qs, cands, np.array(qidx), np.array(labels), tuple(groups))


def _cnm(seed):
    return CNM(CNMConfig(num_words=20, dim=6, num_measurements=6, dropout=0.2),
               generator=torch.Generator().manual_seed(seed))


def _equal_states(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def _without_seconds(history):
    return [{k: v for k, v in h.items() if k != "seconds"} for h in history]

RUNS = {
    "classification": (_qpdn, TrainConfig, lambda m, cfg, **kw: fit(m, _texts(), _texts(seed=1), cfg, **kw)),
    "matching": (_cnm, MatchingConfig, lambda m, cfg, **kw: fit_matching(m, _qa(), _qa(seed=1), cfg, **kw)),
}


def _left_aside(state):
    """Move ``state`` where a process killed between the two renames of its replacement leaves it."""
    aside = tempfile.mkdtemp(prefix=f".{state.name}.", suffix=".old", dir=state.parent)
    os.rename(state, os.path.join(aside, state.name))


@pytest.mark.parametrize("task", sorted(RUNS))
def test_resume_puts_back_a_state_left_aside_by_a_killed_save_and_continues_it_bit_for_bit(tmp_path, task):
    build, make_config, train = RUNS[task]
    config = make_config(epochs=3, patience=3, batch_size=8, lr=0.05, embedding_lr=0.05, seed=3, progress=False)
    torch.manual_seed(0)
    reference = build(5)
    expected = train(reference, config)
    torch.manual_seed(0)
    train(build(5), make_config(**{**config.to_dict(), "epochs": 2}), checkpoint_dir=tmp_path / "state")
    _left_aside(tmp_path / "state")

    resumed_model, logged = build(99), []
    with pytest.warns(RuntimeWarning, match=r"state: put back the training state .*\.state\.\w+\.old"):
        resumed = train(resumed_model, config, checkpoint_dir=tmp_path / "state", resume=True, log=logged.append)
    assert [(h["epoch"], h.get("restored")) for h in logged] == [(1, True), (2, True), (3, None)]
    assert _equal_states(resumed_model, reference)
    assert _without_seconds(resumed.history) == _without_seconds(expected.history)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]                 # no copy left aside
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == [JSON_FILE, TENSORS_FILE]
    assert json.loads((tmp_path / "state" / JSON_FILE).read_text())["progress"]["epoch"] == 3


def test_a_state_left_aside_twice_is_refused_on_resume_naming_both(tmp_path):
    config = TrainConfig(epochs=1, batch_size=8, progress=False)
    for _ in range(2):
        fit(_qpdn(1), _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path / "state")
        _left_aside(tmp_path / "state")
    with pytest.raises(FileExistsError, match=r"2 earlier versions of it were left aside"):
        fit(_qpdn(1), _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path / "state", resume=True)
    assert not (tmp_path / "state").exists()                               # neither version touched


def test_a_run_that_does_not_resume_leaves_a_state_aside_alone(tmp_path):
    """Without ``resume`` a state left aside is neither put back nor deleted (the run starts afresh anyway)."""
    config = TrainConfig(epochs=1, batch_size=8, progress=False)
    fit(_qpdn(1), _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path / "state")
    _left_aside(tmp_path / "state")
    fit(_qpdn(1), _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path / "state")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[1] == "state" and names[0].startswith(".state.") and names[0].endswith(".old")


def test_a_state_keeps_one_directory_replaced_each_epoch_not_one_per_epoch(tmp_path):
    """Every epoch replaces the state: the files after five epochs are those after one, of the same size (the
    parameters, the best ones where they differ, the moments; a dense model has no untrained rows to leave out)."""
    sizes = {}
    for epochs in (1, 5):
        directory = tmp_path / f"e{epochs}"
        fit(_qpdn(1), _texts(), _texts(seed=1), TrainConfig(epochs=epochs, patience=epochs, batch_size=8,
                                                            progress=False), checkpoint_dir=directory)
        sizes[epochs] = {p.name: p.stat().st_size for p in directory.iterdir()}
        assert sorted(sizes[epochs]) == [JSON_FILE, TENSORS_FILE]
    assert sizes[5][TENSORS_FILE] <= 1.5 * sizes[1][TENSORS_FILE]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e1", "e5"]           # no temporary left beside them
