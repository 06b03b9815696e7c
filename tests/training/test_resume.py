"""Resumable training, divergence and Ctrl-C in the one epoch loop (fit, fit_matching), and dense optimisers.

An interrupted run that resumes from its last per-epoch training state ends
with the same parameters, history and best epoch, bit for bit, as a run that
was never interrupted: the state holds the parameters, the best parameters so
far, every optimiser's state (dense and sparse) and the RNG states (dropout
draws from torch's global generator).
"""

import importlib.util
from pathlib import Path
import json

import pytest
import torch

from qpnlp.data import EncodedTexts
from qpnlp.models import QPDN, OrderClassifier, OrderClassifierConfig, QPDNConfig
from qpnlp.training import Optimisers, TrainConfig, fit
from qpnlp.training.matching import MatchingConfig, fit_matching
from qpnlp.training.state import JSON_FILE, TENSORS_FILE
from qpnlp.training import TrainingDiverged, TrainingInterrupted
from qpnlp.training import check_optimizer, dense_gradients, sparse_tables, train_step

_SPEC = importlib.util.spec_from_file_location("_qpnlp_tiny_runs", Path(__file__).with_name("_tiny_runs.py"))
TINY = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(TINY)        # the shared tiny data and models (tests/training/_tiny_runs.py)
_texts, _qpdn, _qa, _cnm = TINY.texts, TINY.qpdn, TINY.qa, TINY.cnm
_equal_states, _without_seconds = TINY.equal_states, TINY.without_seconds


def _order_transformer(seed):
    """A complex-order Transformer with dropout: its training batches are cut into chunks (``length_chunks=0``)."""
    return OrderClassifier(OrderClassifierConfig(num_words=20, num_classes=2, network="transformer",
                                                 embedding="complex_order", dim=4, heads=2, ffn_hidden=6,
                                                 dropout=0.2), generator=torch.Generator().manual_seed(seed))


def _stop_at(epoch):
    """An epoch observer that presses Ctrl-C during epoch ``epoch`` (after its dev score, before it is saved)."""
    seen = []

    def observer(model):
        seen.append(1)
        if len(seen) == epoch:
            raise KeyboardInterrupt
        return {}
    return observer


TASKS = {
    "classification": (lambda seed: _qpdn(seed), lambda **kw: TrainConfig(**kw),
                       lambda m, cfg, **kw: fit(m, _texts(), _texts(seed=1), cfg, **kw)),
    "chunked classification": (lambda seed: _order_transformer(seed), lambda **kw: TrainConfig(**{"length_chunks": 0, **kw}),
                               lambda m, cfg, **kw: fit(m, _texts(), _texts(seed=1), cfg, **kw)),
    "matching": (lambda seed: _cnm(seed), lambda **kw: MatchingConfig(**kw),
                 lambda m, cfg, **kw: fit_matching(m, _qa(), _qa(seed=1), cfg, **kw)),
}


@pytest.mark.parametrize("optimizer", ["adam", "rmsprop"])
@pytest.mark.parametrize("task", sorted(TASKS))
@pytest.mark.parametrize("how", ["ctrl-c in epoch 3", "max-epochs stop after 2"])
def test_resumed_training_equals_an_uninterrupted_run_bit_for_bit(tmp_path, task, optimizer, how):
    build, make_config, train = TASKS[task]
    config = make_config(epochs=5, patience=5, batch_size=8, lr=0.05, embedding_lr=0.05, seed=3, optimizer=optimizer,
                         progress=False)
    torch.manual_seed(0)
    reference = build(5)
    expected = train(reference, config)

    torch.manual_seed(0)
    first = build(5)
    if how.startswith("ctrl-c"):
        with pytest.raises(TrainingInterrupted) as stopped:
            train(first, config, on_epoch=_stop_at(3), checkpoint_dir=tmp_path / "state")
        assert stopped.value.epoch == 2 and isinstance(stopped.value, KeyboardInterrupt)
        assert stopped.value.model is first and len(stopped.value.history) == 2
    else:
        train(first, make_config(**{**config.to_dict(), "epochs": 2}), checkpoint_dir=tmp_path / "state")
    assert json.loads((tmp_path / "state" / JSON_FILE).read_text())["progress"]["epoch"] == 2
    assert (tmp_path / "state" / TENSORS_FILE).is_file()

    torch.manual_seed(12345)                   # another global RNG state and another initialisation: both restored
    resumed_model = build(99)
    logged = []
    resumed = train(resumed_model, config, checkpoint_dir=tmp_path / "state", resume=True, log=logged.append)
    assert _equal_states(resumed_model, reference)
    assert resumed.best_epoch == expected.best_epoch
    assert _without_seconds(resumed.history) == _without_seconds(expected.history)
    assert [h["epoch"] for h in logged] == [1, 2, 3, 4, 5] and [h.get("restored") for h in logged[:3]] == \
        [True, True, None]


def _ctrl_c_while_writing_the_state_of(epoch, monkeypatch):
    """Ctrl-C while the training state of epoch ``epoch`` is written: its tensors file is in the temporary directory
    of the atomic write, which is not yet in place."""
    from qpnlp.training import state

    calls, write = [], state.save_tensors

    def write_then_ctrl_c(*args, **kwargs):
        write(*args, **kwargs)
        calls.append(1)
        if len(calls) == epoch:
            raise KeyboardInterrupt
    monkeypatch.setattr(state, "save_tensors", write_then_ctrl_c)


@pytest.mark.parametrize("task", ["classification", "matching"])
def test_ctrl_c_while_the_state_is_written_reports_the_epoch_on_disk_and_resume_redoes_the_next(
        tmp_path, monkeypatch, task):
    """Ctrl-C while the state of epoch 3 was written said epoch 3 was finished (``TrainingInterrupted.epoch``, the
    commands' "interrupted in epoch 4") while the state on disk was epoch 2's, which ``resume`` continues from."""
    build, make_config, train = TASKS[task]
    config = make_config(epochs=4, patience=4, batch_size=8, lr=0.05, embedding_lr=0.05, seed=3, progress=False)
    torch.manual_seed(0)
    reference = build(5)
    expected = train(reference, config)
    torch.manual_seed(0)
    with monkeypatch.context() as patch:
        _ctrl_c_while_writing_the_state_of(3, patch)
        with pytest.raises(TrainingInterrupted) as stopped:
            train(build(5), config, checkpoint_dir=tmp_path / "state")
    assert stopped.value.epoch == 2 and stopped.value.checkpoint_dir == tmp_path / "state"
    assert json.loads((tmp_path / "state" / JSON_FILE).read_text())["progress"]["epoch"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]          # the temporary directory removed
    resumed_model, logged = build(99), []
    resumed = train(resumed_model, config, checkpoint_dir=tmp_path / "state", resume=True, log=logged.append)
    assert [(h["epoch"], h.get("restored")) for h in logged] == [(1, True), (2, True), (3, None), (4, None)]
    assert _equal_states(resumed_model, reference)
    assert _without_seconds(resumed.history) == _without_seconds(expected.history)


@pytest.mark.parametrize("optimizer", ["adam", "rmsprop"])
def test_a_double_precision_model_resumes_bit_for_bit(tmp_path, optimizer):
    """complex128 parameters and optimiser moments (safetensors has no complex128) survive the training state."""
    def build():
        return QPDN(QPDNConfig(num_words=20, num_classes=2, dim=4, num_measurements=3, dropout=0.3, complex128=True),
                    generator=torch.Generator().manual_seed(5))

    config = TrainConfig(epochs=3, patience=3, batch_size=8, lr=0.05, embedding_lr=0.05, seed=3, optimizer=optimizer,
                         progress=False)
    assert build().measurement.weight.dtype == torch.complex128
    torch.manual_seed(0)
    reference = build()
    expected = fit(reference, _texts(), _texts(seed=1), config)
    torch.manual_seed(0)
    fit(build(), _texts(), _texts(seed=1), TrainConfig(**{**config.to_dict(), "epochs": 2}), checkpoint_dir=tmp_path)
    torch.manual_seed(1)
    resumed_model = build()
    resumed = fit(resumed_model, _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path, resume=True)
    assert _equal_states(resumed_model, reference) and resumed_model.measurement.weight.dtype == torch.complex128
    assert _without_seconds(resumed.history) == _without_seconds(expected.history)


def test_the_rng_state_matters_so_the_test_above_has_teeth(tmp_path):
    """Without restoring the RNG, dropout draws differently and the parameters differ."""
    config = TrainConfig(epochs=2, patience=2, batch_size=8, lr=0.05, embedding_lr=0.05, seed=3, progress=False)
    runs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = _qpdn(5)
        fit(model, _texts(), _texts(seed=1), config)
        runs.append(model)
    assert not _equal_states(*runs)


def test_an_early_stopped_run_keeps_a_small_final_state_and_resumes_to_its_result(tmp_path):
    config = TrainConfig(epochs=30, patience=1, batch_size=8, lr=0.5, embedding_lr=0.5, progress=False)
    torch.manual_seed(0)
    first = _qpdn(1)
    done = fit(first, _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path)
    assert len(done.history) < 30                                  # stopped by patience
    header = json.loads((tmp_path / JSON_FILE).read_text())
    assert header["progress"]["final"] and "optimiser_scalars" not in header
    from safetensors.torch import load_file
    assert {k.split(".")[0] for k in load_file(str(tmp_path / TENSORS_FILE))} == {"best"}
    again = _qpdn(2)
    resumed = fit(again, _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path, resume=True)
    assert _equal_states(first, again) and resumed.best_epoch == done.best_epoch
    assert _without_seconds(resumed.history) == _without_seconds(done.history)
    with pytest.raises(ValueError, match="stopped early .* cannot continue with patience 5"):
        fit(_qpdn(2), _texts(), _texts(seed=1), TrainConfig(**{**config.to_dict(), "patience": 5}),
            checkpoint_dir=tmp_path, resume=True)


def test_ctrl_c_while_the_final_state_of_an_early_stop_is_written_is_a_training_interruption(tmp_path, monkeypatch):
    """After an early stop the loop writes the best-only state outside the handling of Ctrl-C: there, Ctrl-C ended
    the training with a bare KeyboardInterrupt (the commands then neither saved the best model nor finished the
    report as interrupted). It is a TrainingInterrupted now, the model at its best epoch, the last epoch's state on
    disk, which ``resume`` finishes."""
    from qpnlp.training import loop

    config = TrainConfig(epochs=30, patience=1, batch_size=8, lr=0.5, embedding_lr=0.5, progress=False)
    torch.manual_seed(0)
    reference = _qpdn(1)
    done = fit(reference, _texts(), _texts(seed=1), config)
    save = loop.save_training_state

    def ctrl_c_at_the_final_save(*args, **kwargs):
        if kwargs.get("final"):
            raise KeyboardInterrupt
        return save(*args, **kwargs)

    torch.manual_seed(0)
    model = _qpdn(1)
    with monkeypatch.context() as patch:
        patch.setattr(loop, "save_training_state", ctrl_c_at_the_final_save)
        with pytest.raises((TrainingInterrupted, KeyboardInterrupt)) as stopped:
            fit(model, _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path)
    assert type(stopped.value) is TrainingInterrupted
    assert (stopped.value.epoch, stopped.value.best_epoch) == (len(done.history), done.best_epoch) < (30, 30)
    assert _equal_states(model, reference)                                   # the best epoch's parameters
    assert not json.loads((tmp_path / JSON_FILE).read_text())["progress"].get("final")
    resumed = fit(_qpdn(2), _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path, resume=True)
    assert resumed.best_epoch == done.best_epoch
    assert json.loads((tmp_path / JSON_FILE).read_text())["progress"]["final"]


def test_resume_refuses_another_run(tmp_path):
    config = TrainConfig(epochs=1, batch_size=8, progress=False)
    fit(_qpdn(1), _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path)
    with pytest.raises(ValueError, match=r"lr \(0.01 -> 0.5\)"):
        fit(_qpdn(1), _texts(), _texts(seed=1), TrainConfig(epochs=2, batch_size=8, lr=0.5, progress=False),
            checkpoint_dir=tmp_path, resume=True)
    # a state of an earlier qpnlp whose loader reads the same files otherwise (WikiQA's filter) says so
    with pytest.raises(ValueError, match=r"the training or dev data \(as read: other files, or the same files read "
                                         r"otherwise, e\.g\. a data set's filter"):
        fit(_qpdn(1), _texts(seed=7), _texts(seed=1), config, checkpoint_dir=tmp_path, resume=True)
    with pytest.raises(ValueError, match="the model"):
        fit(QPDN(QPDNConfig(num_words=20, num_classes=2, dim=6, num_measurements=5)), _texts(), _texts(seed=1),
            config, checkpoint_dir=tmp_path, resume=True)
    (tmp_path / TENSORS_FILE).write_bytes(b"garbage")
    with pytest.raises(ValueError, match="not a readable training state"):
        fit(_qpdn(1), _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path, resume=True)


def _order(dropout=0.2, **options):
    config = OrderClassifierConfig(num_words=20, num_classes=2, network="transformer", embedding="complex_order",
                                   dim=4, heads=2, ffn_hidden=6, dropout=dropout, **options)
    return OrderClassifier(config, generator=torch.Generator().manual_seed(0))


def test_a_resume_with_another_model_config_names_each_field_and_both_values(tmp_path):
    # the message printed both configs whole, the saved one cut at 300 characters: a changed default of a late
    # field (here max_len, past the cut) was not shown at all, and an early one had to be found by eye
    fit(_order(), _texts(), _texts(seed=1), TrainConfig(epochs=1), checkpoint_dir=tmp_path)
    with pytest.raises(ValueError, match=r"in the model config dropout \(0.2 -> 0.5\), max_len \(512 -> 64\) \(only"):
        fit(_order(0.5, max_len=64), _texts(), _texts(seed=1), TrainConfig(epochs=2), checkpoint_dir=tmp_path,
            resume=True)


def test_a_state_of_an_earlier_version_stands_for_the_defaults_of_the_fields_it_lacks(tmp_path):
    # a field added since (a model option, a training setting) was compared with None: every earlier state was
    # refused, where a saved model loads with the field's default
    fit(_order(), _texts(), _texts(seed=1), TrainConfig(epochs=1), checkpoint_dir=tmp_path)
    header = json.loads((tmp_path / JSON_FILE).read_text())
    del header["identity"]["model_config"]["embedding_options"], header["identity"]["settings"]["length_chunks"]
    (tmp_path / JSON_FILE).write_text(json.dumps(header))
    with pytest.raises(ValueError, match=r"the training settings length_chunks \(256 -> 0\) \(only"):
        fit(_order(), _texts(), _texts(seed=1), TrainConfig(epochs=2, length_chunks=0), checkpoint_dir=tmp_path,
            resume=True)
    assert fit(_order(), _texts(), _texts(seed=1), TrainConfig(epochs=2), checkpoint_dir=tmp_path,
               resume=True).best_epoch >= 1


def test_the_state_is_never_pickled(tmp_path):
    fit(_qpdn(1), _texts(), _texts(seed=1), TrainConfig(epochs=1, batch_size=8, progress=False),
        checkpoint_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [JSON_FILE, TENSORS_FILE]
    json.loads((tmp_path / JSON_FILE).read_text())           # plain, strict JSON
    assert (tmp_path / TENSORS_FILE).read_bytes()[:1] != b"\x80"    # not a pickle protocol header


# --------------------------------------------------------------------------- divergence and Ctrl-C
@pytest.mark.parametrize("task", sorted(TASKS))
def test_divergence_stops_with_the_epoch_named_and_the_best_parameters_kept(task):
    build, make_config, train = TASKS[task]
    model = build(0)
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(TrainingDiverged, match="training diverged in epoch 1") as diverged:
        train(model, make_config(epochs=3, batch_size=8, lr=1e30, embedding_lr=1e30, progress=False))
    assert diverged.value.epoch == 1 and diverged.value.history == []
    assert all(torch.equal(initial[k], v) for k, v in model.state_dict().items())   # no epoch was better: initial


def test_a_nan_loss_names_the_batch():
    model = _qpdn(0)
    with torch.no_grad():
        model.classifier.weight.fill_(float("nan"))
    with pytest.raises(TrainingDiverged, match=r"epoch 1, batch 1: the loss is nan"):
        fit(model, _texts(), _texts(seed=1), TrainConfig(epochs=2, batch_size=8, progress=False))


def test_empty_training_or_dev_set_is_refused():
    empty = EncodedTexts([], [])
    with pytest.raises(ValueError, match="training set is empty"):
        fit(_qpdn(0), empty, _texts(), TrainConfig(progress=False))
    with pytest.raises(ValueError, match="dev set is empty"):
        fit(_qpdn(0), _texts(), empty, TrainConfig(progress=False))


# --------------------------------------------------------------------------- dense optimisers, sparse tables
def test_plain_adam_on_sparse_tables_gets_a_clear_error_and_a_working_default():
    model = _qpdn(0)
    assert {"embedding.amplitude.weight", "embedding.phase.weight"} <= set(sparse_tables(model))
    adam = torch.optim.Adam(model.parameters(), lr=0.01)
    with pytest.raises(TypeError, match=r"torch.optim.Adam cannot update the sparse embedding tables .*"
                                        r"dense_gradients\(model\)"):
        check_optimizer(model, adam)
    check_optimizer(model, torch.optim.SparseAdam([model.embedding.amplitude.weight]))   # sparse-capable: fine
    dense_gradients(model)
    assert sparse_tables(model) == []
    check_optimizer(model, adam)
    ids = torch.tensor([[3, 4, 0]])
    before = model.embedding.amplitude.weight.detach().clone()
    loss = torch.nn.functional.cross_entropy(model(ids, ids != 0), torch.tensor([1]))
    loss.backward()
    adam.step()                                               # plain Adam trains the model now
    assert not torch.equal(before, model.embedding.amplitude.weight)
    opts = Optimisers(model, TrainConfig())                   # and the trainer still works (all dense)
    assert [type(o).__name__ for o in opts.optimisers] == ["Adam"]
    train_step(model, opts, ids, ids != 0, torch.tensor([1]))


@pytest.mark.parametrize("kind", ["Adam", "AdamW", "RMSprop"])
def test_plain_optimizer_step_on_sparse_gradients_raises_qpnlps_error_without_any_check(kind):
    """No check_optimizer call: the first step itself names the tables' sparse gradients and the two ways out."""
    model = _qpdn(0)
    optimizer = getattr(torch.optim, kind)(model.parameters(), lr=0.01)
    ids = torch.tensor([[3, 4, 0]])
    torch.nn.functional.cross_entropy(model(ids, ids != 0), torch.tensor([1])).backward()
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(TypeError, match=rf"torch.optim.{kind} cannot update parameters with sparse gradients .*"
                                        r"Optimisers.*dense_gradients\(model\)"):
        optimizer.step()
    assert all(torch.equal(b, p) for b, p in zip(before, model.parameters()))   # nothing half-updated
    torch.optim.SGD(model.parameters(), lr=0.01).step()                         # sparse-capable: untouched


def test_the_module_notes_name_every_setting_a_resumed_run_may_change():
    # the notes said epochs, patience, device and progress; compile and pad_to_multiple_of may change too
    from qpnlp.training import state

    notes = state.__doc__.split("may change")[0].rsplit("(", 1)[-1]
    assert sorted(n for n in state.RESUMABLE_CHANGES if f"``{n}``" not in notes) == []


def test_a_nan_loss_before_any_step_does_not_blame_the_learning_rates():
    model = _qpdn(0)
    with torch.no_grad():
        model.classifier.weight.fill_(float("nan"))
    with pytest.raises(TrainingDiverged, match="before any optimiser step") as diverged:
        fit(model, _texts(), _texts(seed=1), TrainConfig(epochs=2, batch_size=8, progress=False))
    assert "smaller learning rates" not in str(diverged.value)


def test_resume_refuses_a_longer_run_and_a_missing_directory(tmp_path):
    # a state of 2 epochs resumed with epochs=1 returned the 2-epoch run's result; resume=True without a
    # checkpoint_dir trained afresh without a word
    config = TrainConfig(epochs=2, batch_size=8, progress=False)
    fit(_qpdn(1), _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path)
    with pytest.raises(ValueError, match="already trained 2 epochs, more than epochs=1"):
        fit(_qpdn(1), _texts(), _texts(seed=1), TrainConfig(epochs=1, batch_size=8, progress=False),
            checkpoint_dir=tmp_path, resume=True)
    with pytest.raises(ValueError, match="resume=True needs checkpoint_dir"):
        fit(_qpdn(1), _texts(), _texts(seed=1), config, resume=True)


def test_resume_refuses_other_trainable_parameters(tmp_path):
    # freezing a parameter shifted the optimisers' states by one position: each parameter got another's moments
    config = TrainConfig(epochs=1, batch_size=8, progress=False)
    fit(_qpdn(1), _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path)
    model = _qpdn(1)
    model.classifier.weight.requires_grad_(False)
    with pytest.raises(ValueError, match=r"the trainable parameters \(only there: \['classifier.weight'\]"):
        fit(model, _texts(), _texts(seed=1), TrainConfig(epochs=2, batch_size=8, progress=False),
            checkpoint_dir=tmp_path, resume=True)


def test_an_optimiser_state_of_other_shapes_is_refused_on_load(tmp_path):
    # torch's Adam loads moments of any shape; the step then failed inside torch or broadcast them
    from qpnlp.training.state import load_training_state, save_training_state

    model = torch.nn.Linear(3, 2)
    adam = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    adam.step()
    save_training_state(tmp_path, model=model, best_state=None, optimisers=[adam], progress=dict(epoch=1),
                        identity=dict(model="m", model_config=None, settings={}, data="d"))
    swapped = torch.optim.Adam([model.bias, model.weight])              # the states in another order
    with pytest.raises(ValueError, match=r"does not fit.*'exp_avg' of parameter 0 has shape \(2, 3\)"):
        load_training_state(tmp_path, model=model, optimisers=[swapped],
                            identity=dict(model="m", model_config=None, settings={}, data="d"))


def test_a_training_state_whose_json_could_not_be_read_back_is_refused_before_writing(tmp_path):
    # a state.json past MAX_CONFIG_BYTES counts as a user's file: the next epoch's save refused the directory
    from qpnlp._atomic import MAX_CONFIG_BYTES
    from qpnlp.training.state import save_training_state

    model = torch.nn.Linear(3, 2)
    save = dict(model=model, best_state=None, optimisers=[], identity=dict(model="m", model_config=None,
                                                                            settings={}, data="d"))
    save_training_state(tmp_path / "s", **save, progress=dict(epoch=1))
    with pytest.raises(ValueError, match=rf"state.json would be \d+ bytes, more than the {MAX_CONFIG_BYTES} bytes"):
        save_training_state(tmp_path / "s", **save, progress=dict(epoch=2, history=["x" * MAX_CONFIG_BYTES]))
    assert json.loads((tmp_path / "s" / JSON_FILE).read_text())["progress"] == dict(epoch=1)      # kept


def test_saving_the_same_training_state_twice_writes_the_same_files(tmp_path):
    # safetensors writes its metadata map in a random order; a double-precision model's state lists its
    # complex128 tensors there, so two saves of one state differed in their bytes
    import hashlib

    from qpnlp.training.state import save_training_state

    model = torch.nn.Module()
    model.weight = torch.nn.Parameter(torch.randn(2, 3, dtype=torch.complex128))
    adam = torch.optim.Adam(model.parameters())
    model.weight.abs().sum().backward()
    adam.step()
    for name in ("a", "b", "c"):
        save_training_state(tmp_path / name, model=model, best_state=None, optimisers=[adam],
                            progress=dict(epoch=1), identity=dict(model="m", model_config=None, settings={}, data="d"))
    digests = {tuple(hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted((tmp_path / name).iterdir()))
               for name in ("a", "b", "c")}
    assert len(digests) == 1


def test_a_directory_without_a_training_state_is_neither_replaced_nor_started_afresh(tmp_path):
    # fit(checkpoint_dir=) deleted the files of a user's directory at the end of epoch 1; a state whose
    # state.json was lost was started afresh on resume, its state.safetensors overwritten without a word
    config = TrainConfig(epochs=1, batch_size=8, progress=False)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=r"mine exists, is not empty and holds no state.json"):
        fit(_qpdn(1), _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path / "mine")
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]
    fit(_qpdn(1), _texts(), _texts(seed=1), config, checkpoint_dir=tmp_path / "state")
    (tmp_path / "state" / JSON_FILE).unlink()
    with pytest.raises(FileExistsError, match=r"state exists, is not empty and holds no state.json"):
        fit(_qpdn(1), _texts(), _texts(seed=1), TrainConfig(epochs=2, batch_size=8, progress=False),
            checkpoint_dir=tmp_path / "state", resume=True)
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == [TENSORS_FILE]
