"""What a training state leaves on disk: one state per run, replaced each epoch, and nothing left aside by a resume.

A process killed between the two renames that replace a state (``qpnlp._atomic._replace_directory``) leaves
``checkpoint_dir`` missing and its previous version at ``.NAME.XXXXXXXX.old/NAME``. ``resume=True`` started such a
run afresh without a word, and the state it could have continued from stayed aside, a second copy that nothing
removed (one per candidate and fold under ``qpnlp train``).
"""

import importlib.util
from pathlib import Path
import json
import os
import tempfile

import pytest
import torch

from qpnlp.training import TrainConfig, fit
from qpnlp.training.matching import MatchingConfig, fit_matching
from qpnlp.training.state import JSON_FILE, TENSORS_FILE

_SPEC = importlib.util.spec_from_file_location("_qpnlp_tiny_runs", Path(__file__).with_name("_tiny_runs.py"))
TINY = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(TINY)        # the shared tiny data and models (tests/training/_tiny_runs.py)
_texts, _qpdn, _qa, _cnm = TINY.texts, TINY.qpdn, TINY.qa, TINY.cnm
_equal_states, _without_seconds = TINY.equal_states, TINY.without_seconds


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


@pytest.mark.parametrize("task", sorted(RUNS))
def test_the_trained_model_holds_no_gradients_of_its_last_batch(task):
    """The model ends at its best epoch without the last batch's ``.grad`` (a model-sized copy, of other
    parameters than the ones it ends with), on return and when an observer's error stops the loop."""
    make, config, run = RUNS[task]
    model = make(0)
    run(model, config(epochs=3, patience=3, batch_size=16, seed=0, progress=False))
    assert all(p.grad is None for p in model.parameters())

    def bad_observer(m):
        return {"epoch": 0}                     # a key the trainer writes: a ValueError after epoch 1's training

    model = make(0)
    with pytest.raises(ValueError):
        run(model, config(epochs=3, patience=3, batch_size=16, seed=0, progress=False), on_epoch=bad_observer)
    assert all(p.grad is None for p in model.parameters())
