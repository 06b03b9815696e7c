"""A checkpoint keeps its generator states in a file of their own: a large distributed run's checkpoint stays
readable, and a checkpoint of an earlier qpnlp, with the states in its config.json, still resumes."""

import json
import re

import pytest
import torch

from qpnlp._atomic import MAX_CONFIG_BYTES, written_by_qpnlp
from qpnlp.data import TimestampedCorpus
from qpnlp.models.base import CONFIG_FILE, read_model_header
from qpnlp.word2fun import KeyedVectors, TrainConfig, _run_state, distributed, fit
from qpnlp.word2fun.loop import TrainStats

DOCS = [(1900 + i % 10, ["war", "peace", "treaty", "army"][i % 3:] + ["trade"]) for i in range(60)]
MODEL = dict(dim=4, min_count=1)
PROCESSES, WORKERS = 8, 20
RUN = {"corpus": {"documents": 60}, "processes": PROCESSES}       # run_info: what saved_run needs


def _state(rank: int) -> dict:
    """The generator states of process ``rank`` of a run of seed 3 with :data:`WORKERS` workers, one draw in."""
    rng, gens = _run_state.data_rng(3, rank, 0), _run_state.negative_generators(3, rank, WORKERS, "cpu")
    rng.random()
    for g in gens:
        torch.rand(1, generator=g)
    return _run_state.rng_state(rng, gens)


@pytest.fixture
def vectors():
    return fit(TimestampedCorpus.from_pairs(DOCS), TrainConfig(epochs=1, sample=0), **MODEL).vectors


def test_the_checkpoint_of_8_processes_of_20_workers_is_read_back_and_replaced(tmp_path, monkeypatch, vectors):
    """Their 9 x 20 states of 6.7 KB made a config.json of 1.2 MB, over MAX_CONFIG_BYTES: from_pretrained refused
    it and the next epoch's save raised FileExistsError (not written by qpnlp), stopping the run."""
    states = [_state(r) for r in range(PROCESSES)]
    monkeypatch.setattr(distributed, "gather_objects", lambda mine: states)     # rank 0 of 8, no processes started
    ck = tmp_path / "ck"
    end = _run_state.end_of_epoch(ck, vectors, RUN, None, [], PROCESSES, None)
    monkeypatch.setattr(_run_state, "rng_state", lambda rng, gens: states[0])
    end(0, TrainStats(epoch_loss=[1.0]))
    assert (ck / CONFIG_FILE).stat().st_size < 16 * 1024              # 1.2 MB before, over MAX_CONFIG_BYTES
    assert (ck / _run_state.RNG_FILE).stat().st_size > MAX_CONFIG_BYTES     # the states, in their own file
    assert written_by_qpnlp(ck / CONFIG_FILE)
    saved = _run_state.saved_run(ck)
    assert saved["epochs_done"] == 1 and "rng" not in saved and "rng_by_rank" not in saved
    assert KeyedVectors.from_pretrained(ck).vocabulary == vectors.vocabulary
    assert [_run_state.saved_rng(ck, saved, r) for r in range(PROCESSES + 1)] == [*states, None]
    end(1, TrainStats(epoch_loss=[1.0, 0.5]))                                       # the next epoch replaces it
    assert _run_state.saved_run(ck)["epochs_done"] == 2


def test_each_process_of_a_large_run_resumes_its_own_generators(tmp_path, monkeypatch, vectors):
    states, rng_state = [_state(r) for r in range(PROCESSES)], _run_state.rng_state
    monkeypatch.setattr(distributed, "gather_objects", lambda mine: states)
    monkeypatch.setattr(_run_state, "rng_state", lambda rng, gens: states[0])
    ck = tmp_path / "ck"
    _run_state.end_of_epoch(ck, vectors, RUN, None, [], PROCESSES, None)(0, TrainStats(epoch_loss=[1.0]))
    cfg, saved = TrainConfig(seed=3, workers=WORKERS), _run_state.saved_run(ck)
    for rank in (0, 5, PROCESSES - 1):
        rng, gens = _run_state.training_generators(cfg, rank, "cpu", _run_state.saved_rng(ck, saved, rank), 1)
        assert rng_state(rng, gens) == states[rank]                  # the streams go on, not those of epoch 0


def _as_written_by_the_previous_version(checkpoint) -> None:
    """Move the states of ``checkpoint`` (one process) into its config.json's metadata, as qpnlp wrote them before
    they had a file of their own (``rng``; ``rng_by_rank`` too in a distributed run)."""
    path = checkpoint / _run_state.RNG_FILE
    every = json.loads(path.read_text())["processes"]
    path.unlink()
    header = json.loads((checkpoint / CONFIG_FILE).read_text())
    header["metadata"]["rng"] = every[0]
    (checkpoint / CONFIG_FILE).write_text(json.dumps(header))


def test_a_checkpoint_of_the_previous_version_resumes_exactly(tmp_path):
    corpus, config = TimestampedCorpus.from_pairs(DOCS), TrainConfig(epochs=2, seed=4, batch_size=64, sample=0)
    whole = fit(corpus, config, **MODEL).vectors

    def interrupt(epoch, stats):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fit(corpus, config, **MODEL, checkpoint=tmp_path / "ck", on_epoch=interrupt)
    _as_written_by_the_previous_version(tmp_path / "ck")
    resumed = fit(corpus, config, **MODEL, checkpoint=tmp_path / "ck", resume=True)
    assert resumed.epochs_done == 2
    words, years = ["war", "peace", "trade"], [1900.0, 1905.0, 1909.0]
    assert torch.equal(resumed.vectors.grid(words, years), whole.grid(words, years))     # its generators went on
    assert "rng" not in read_model_header(tmp_path / "ck")["metadata"]                  # rewritten in the new form
    assert (tmp_path / "ck" / _run_state.RNG_FILE).is_file()


def test_the_states_of_every_process_are_read_from_an_earlier_distributed_checkpoint(tmp_path):
    states = [_state(r) for r in range(3)]
    saved = {"rng": states[0], "rng_by_rank": states}
    assert [_run_state.saved_rng(tmp_path, saved, r) for r in range(4)] == [*states, None]
    assert _run_state.saved_rng(tmp_path, {"epochs_done": 1}, 1) is None        # none saved: fresh streams


@pytest.mark.parametrize("text, named", [("{", ": not a readable file of generator states"),
                                         ('{"format": "other"}', " is not a qpnlp-word2fun-rng/1 file"),
                                         ('{"format": "qpnlp-word2fun-rng/1", "processes": [{"numpy": {}}]}',
                                          " is not a qpnlp-word2fun-rng/1 file")])
def test_a_damaged_file_of_states_is_refused_naming_it(tmp_path, text, named):
    (tmp_path / _run_state.RNG_FILE).write_text(text)
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / _run_state.RNG_FILE}{named}")):
        _run_state.saved_rng(tmp_path, {}, 0)
