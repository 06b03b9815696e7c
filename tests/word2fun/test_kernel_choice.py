"""KernelChoice: the faster of the step's two kernels, with trials of the other that grow rarer while they lose."""

from qpnlp.word2fun._kernel_choice import FIRST_INTERVAL, MAX_INTERVAL, KernelChoice


def _call(choice: KernelChoice, seconds_per_pair: dict) -> tuple[int, bool]:
    which, trial = choice.pick()
    choice.record(which, seconds_per_pair[which] * 100, 100, trial)
    return which, trial


def test_it_starts_in_one_thread_tries_the_threads_early_and_keeps_the_faster():
    choice = KernelChoice()
    calls = [_call(choice, {0: 2.0, 1: 1.0}) for _ in range(8)]
    assert calls[:5] == [(0, False), (1, True), (0, False), (1, True), (1, True)]   # the first call of each is
    assert calls[5:] == [(1, False)] * 3                                            # not counted; two wins change
    assert choice.best == 1 and choice.cost[0] == 2.0 and choice.cost[1] == 1.0


def test_a_faster_single_thread_takes_over_and_losing_trials_grow_rarer():
    choice = KernelChoice()
    calls = [_call(choice, {0: 1.0, 1: 8.0}) for _ in range(2000)]
    assert choice.best == 0
    trials = [i for i, (which, trial) in enumerate(calls) if trial and which == 1]
    gaps = [b - a for a, b in zip(trials, trials[1:])]
    assert gaps[1:] == sorted(gaps[1:]) and gaps[-1] == MAX_INTERVAL + 1
    assert len(trials) <= 8                         # a loaded machine pays for few slow trials
    assert all(which == 0 for which, trial in calls if not trial)


def test_one_lucky_trial_does_not_change_the_kernel():
    choice = KernelChoice()
    for _ in range(20):
        _call(choice, {0: 1.0, 1: 4.0})
    assert choice.best == 0 and choice.interval == 32
    choice.since_trial = choice.interval
    assert _call(choice, {0: 1.0, 1: 0.5}) == (1, True)            # a lucky batch of the threads ...
    assert _call(choice, {0: 1.0, 1: 4.0}) == (1, True)            # ... tried again at once, and slow again
    assert choice.best == 0 and choice.interval == 128


def test_the_chosen_kernel_slowing_down_switches_at_once_and_trials_start_again():
    choice = KernelChoice()
    for _ in range(50):
        _call(choice, {0: 2.0, 1: 1.0})
    assert choice.best == 1 and choice.interval > FIRST_INTERVAL
    for _ in range(10):                             # busy processes start: the threads become 8x slower
        _call(choice, {0: 2.0, 1: 8.0})
    assert choice.best == 0 and choice.interval <= 4 * FIRST_INTERVAL
    for _ in range(300):                            # and stop again: a trial finds the threads faster
        _call(choice, {0: 2.0, 1: 1.0})
    assert choice.best == 1
