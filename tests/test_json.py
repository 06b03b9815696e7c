"""One walker of nested JSON-like values (qpnlp._json) behind the report's json_ready and the training state's
non_finite_value, which each walked dicts, lists and tuples and spelled key paths their own way."""

from __future__ import annotations

import math

import numpy as np
import torch

from qpnlp._json import leaves, map_leaves
from qpnlp.commands._report import json_ready
from qpnlp.training.state import non_finite_value

NESTED = {"dev": {"map": 0.5, "mrr": np.float32("nan")}, "losses": (1.0, [2.0, torch.tensor(float("inf"))]),
          7: {"deep": [{"x": float("-inf")}]}, "empty": {}, "none": []}


def test_leaves_spell_key_paths_and_keep_the_order_of_the_items():
    found = list(leaves(NESTED))
    assert [path for path, _ in found] == ["dev.map", "dev.mrr", "losses[0]", "losses[1][0]", "losses[1][1]",
                                           "7.deep[0].x"]
    assert isinstance(found[1][1], np.float32) and isinstance(found[4][1], torch.Tensor)    # leaves as they are
    assert list(leaves({"a": 1}, "entry")) == [("entry.a", 1)]
    assert list(leaves((3,), "h")) == [("h[0]", 3)]


def test_a_leaf_alone_is_its_own_path():
    assert list(leaves(2.5)) == [("", 2.5)] and list(leaves("text", "w")) == [("w", "text")]
    assert list(leaves({})) == [] and list(leaves(())) == []


def test_map_leaves_rebuilds_dicts_with_string_keys_and_tuples_as_lists_without_changing_the_value():
    value = {"a": (1, {"b": 2}), 3: [4]}
    seen = []
    mapped = map_leaves(value, lambda path, leaf: seen.append(path) or leaf * 10)
    assert mapped == {"a": [10, {"b": 20}], "3": [40]}
    assert seen == [path for path, _ in leaves(value)]                    # called in the order of leaves()
    assert value == {"a": (1, {"b": 2}), 3: [4]}
    assert map_leaves({"e": {}, "f": ()}, lambda path, leaf: leaf) == {"e": {}, "f": []}


def test_json_ready_and_non_finite_value_name_the_same_places():
    bad = []
    ready = json_ready(NESTED, "", bad)
    assert bad == ["dev.mrr", "losses[1][1]", "7.deep[0].x"]
    assert ready["dev"] == {"map": 0.5, "mrr": None} and ready["losses"] == [1.0, [2.0, None]] and ready["7"]
    where, number = non_finite_value(NESTED)
    assert where == bad[0] and math.isnan(number) and type(number) is float       # the NumPy scalar's item()
    assert non_finite_value(NESTED["losses"], "history[3]") == ("history[3][1][1]", math.inf)    # a torch scalar
    assert non_finite_value({"a": [1.0, (2, "x")]}) is None


def test_a_zero_dimensional_array_is_a_number_to_the_training_state_as_to_the_report():
    """``np.array(x)`` (0-d, not a NumPy scalar) was a number to the report but not to the training state: its NaN
    went unnamed by non_finite_value and its value made the state's JSON a TypeError (one scalar test now, _number)."""
    import json

    from qpnlp.training.state import _plain

    entry = {"dev": {"map": np.array(0.5), "mrr": np.array(float("nan"))}}
    bad = []
    json_ready(entry, "", bad)
    where, number = non_finite_value(entry)
    assert [where] == bad == ["dev.mrr"] and math.isnan(number) and type(number) is float
    assert json.loads(json.dumps({"map": np.array(0.5), "loss": torch.tensor(2.0)}, default=_plain)) == \
        {"map": 0.5, "loss": 2.0}
