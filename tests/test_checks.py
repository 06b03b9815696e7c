"""qpnlp._checks: the checks that every trainer and model shares."""

import dataclasses

import pytest

from qpnlp._checks import check_flag, checked_copy


@dataclasses.dataclass
class _Counted:
    """A config whose check counts its runs."""
    epochs: int = 1
    words: list = dataclasses.field(default_factory=list)
    runs = 0                                      # a class attribute, not a field

    def __post_init__(self) -> None:
        type(self).runs += 1
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1; got {self.epochs}")


def test_checked_copy_runs_the_check_once_and_copies_deeply():
    config = _Counted(words=["a"])
    _Counted.runs = 0
    copied = checked_copy(config)
    assert _Counted.runs == 1                       # the copy's construction only, not once more by hand
    assert copied == config and copied is not config and copied.words is not config.words
    config.epochs = 0                               # set after it was made: not checked until copied
    with pytest.raises(ValueError, match="epochs must be >= 1; got 0"):
        checked_copy(config)
    assert _Counted.runs == 2


def test_check_flag_takes_bools_only():
    assert check_flag("sparse", True) is True and check_flag("sparse", False) is False
    for bad in ("no", 1, 0.0, None):
        with pytest.raises(TypeError, match=f"sparse must be True or False; got {type(bad).__name__}"):
            check_flag("sparse", bad)
