"""Dev scores that are NaN or infinite in the one epoch loop, and training states that hold them.

``early_stopping`` compared ``score > best``: a NaN epoch was passed over without a word (a run whose every dev
score was NaN ended "successfully" at best epoch 0 with the placeholder score -1.0 and the initial parameters), an
infinite one won over every later epoch, and with ``checkpoint_dir`` either failed after the epoch in the JSON
writer ("Out of range float values are not JSON compliant"), the model left at that epoch's parameters. A state
edited to hold a NaN best score was resumed, and no later epoch could beat it.
"""

import json
import math

import numpy as np
import pytest
import torch

from qpnlp.training import Optimisers, TrainConfig, TrainingDiverged, early_stopping
from qpnlp.training.state import JSON_FILE

NAN, INF = float("nan"), float("inf")


def _run(scores, checkpoint_dir=None, resume=False, epochs=None, on_epoch=None, catch=TrainingDiverged):
    """``early_stopping`` of a 1-parameter model whose weight is -1 before training and the epoch after each
    epoch, with these dev scores in turn; the model is returned with the result or the error (of type ``catch``)."""
    model = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.constant_(model.weight, -1.0)
    config = TrainConfig(epochs=epochs or len(scores), patience=10, progress=False)
    scores = iter(scores)

    def train_epoch(epoch):
        with torch.no_grad():
            model.weight.fill_(float(epoch))
        return 0.5

    def evaluate():
        score = next(scores)
        return score, dict(dev=score)

    try:
        return model, early_stopping(model, config, Optimisers(model, config), train_epoch=train_epoch,
                                     evaluate=evaluate, checkpoint_dir=checkpoint_dir, resume=resume,
                                     on_epoch=on_epoch)
    except catch as err:
        return model, err


@pytest.mark.parametrize("scores, epoch, best", [([NAN, NAN, NAN], 1, 0), ([NAN, 0.3, 0.2], 1, 0),
                                                 ([0.3, NAN, 0.5], 2, 1), ([0.1, INF, 0.2], 2, 1),
                                                 ([-2.0, -1.0, -INF], 3, 2)])
def test_a_non_finite_dev_score_stops_the_loop_naming_its_epoch(scores, epoch, best):
    model, err = _run(scores)
    assert isinstance(err, TrainingDiverged), err         # was a result: best epoch 0 and score -1.0 for all NaN
    assert err.epoch == epoch and f"diverged in epoch {epoch}: the dev score is {scores[epoch - 1]}" in str(err)
    assert [e["epoch"] for e in err.history] == list(range(1, epoch))
    assert model.weight.item() == (best if best else -1.0)      # the best epoch's parameters, else the initial ones


def test_the_training_state_keeps_the_last_finite_epoch(tmp_path):
    _, err = _run([0.2, 0.4, NAN], checkpoint_dir=tmp_path)
    assert isinstance(err, TrainingDiverged) and err.epoch == 3   # was ValueError from the JSON writer
    state = json.loads((tmp_path / JSON_FILE).read_text(), parse_constant=pytest.fail)
    assert state["progress"]["epoch"] == 2 and state["progress"]["best_score"] == 0.4


def test_finite_scores_of_any_sign_are_ranked_as_before():
    model, result = _run([-5.0, -3.0, -4.0])
    assert (result.best_epoch, result.best_score, model.weight.item()) == (2, -3.0, 2.0)


def test_a_state_holding_a_nan_best_score_is_refused_on_resume(tmp_path):
    _run([0.2, 0.4], checkpoint_dir=tmp_path)
    path = tmp_path / JSON_FILE
    state = json.loads(path.read_text())
    state["progress"]["best_score"] = NAN                 # Python's json writes and reads NaN by default
    path.write_text(json.dumps(state))
    with pytest.raises(ValueError, match=r"not a readable training state \(NaN is not a JSON number"):
        _run([0.1, 0.1, 0.1], checkpoint_dir=tmp_path, resume=True, epochs=4)
    assert math.isnan(json.loads(path.read_text())["progress"]["best_score"])     # left as it was


@pytest.mark.parametrize("bad", [NAN, np.float32(INF), torch.tensor(-INF)])
def test_a_non_finite_observation_is_refused_before_the_state_is_written(tmp_path, bad):
    """An observer's NaN made the JSON writer fail after the epoch ("Out of range float values are not JSON
    compliant", no key, no epoch), the model left at that epoch's parameters."""
    observations = iter([{"test": {"map": 0.5}}, {"test": {"map": 0.6}}, {"test": {"map": 0.7, "mrr": bad}}])
    model, err = _run([0.2, 0.4, 0.3], checkpoint_dir=tmp_path, on_epoch=lambda m: next(observations),
                      catch=ValueError)
    assert isinstance(err, ValueError) and not isinstance(err, TrainingDiverged), err
    assert f"on_epoch returned {float(bad)} for 'test.mrr' in epoch 3" in str(err) and "strict JSON" in str(err)
    assert model.weight.item() == 2.0                          # the best epoch's parameters
    state = json.loads((tmp_path / JSON_FILE).read_text(), parse_constant=pytest.fail)
    assert state["progress"]["epoch"] == 2 and state["progress"]["history"][-1]["test"] == {"map": 0.6}


def test_a_non_finite_observation_without_a_state_joins_the_history():
    _, result = _run([0.2, 0.4], on_epoch=lambda m: {"x": NAN})
    assert [math.isnan(e["x"]) for e in result.history] == [True, True]
