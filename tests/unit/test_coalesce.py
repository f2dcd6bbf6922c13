"""``runtime.coalesce.Coalescer``: concurrent calls answered by one batch call each, every caller its own result."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from reverie.runtime.coalesce import Coalescer

WAIT = 10.0  # a safety bound on waits that an event ends; never reached when the code is right


def _until(condition: Callable[[], bool]) -> None:
    """Wait (bounded) until ``condition`` holds: the callers queue on their own threads."""
    done = threading.Event()
    for _ in range(int(WAIT / 0.005)):
        if condition():
            return
        done.wait(0.005)
    raise AssertionError("the condition never held")


class GatedDoubler:
    """A batch function that doubles its items; its first batch waits until ``release`` is set."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, items: list[int]) -> list[int]:
        self.batches.append(list(items))
        if len(self.batches) == 1:
            self.entered.set()
            assert self.release.wait(WAIT)
        return [2 * i for i in items]


def _call_all(coalescer: Coalescer[int, int], items: range, results: dict[int, int]) -> list[threading.Thread]:
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, coalescer(i))) for i in items]
    for thread in threads:
        thread.start()
    return threads


def test_a_lone_call_runs_at_once_as_a_batch_of_one() -> None:
    calls: list[list[str]] = []
    coalescer: Coalescer[str, str] = Coalescer(lambda items: calls.append(items) or [s.upper() for s in items])
    assert coalescer("a") == "A"
    assert coalescer("b") == "B"
    assert calls == [["a"], ["b"]]
    assert (coalescer.batches, coalescer.calls) == (2, 2)


def test_calls_arriving_during_a_batch_go_together_in_the_next() -> None:
    run = GatedDoubler()
    coalescer: Coalescer[int, int] = Coalescer(run)
    results: dict[int, int] = {}
    first = _call_all(coalescer, range(1), results)
    assert run.entered.wait(WAIT)
    rest = _call_all(coalescer, range(1, 8), results)
    _until(lambda: coalescer.waiting == 7)
    run.release.set()
    for thread in first + rest:
        thread.join(WAIT)
    assert results == {i: 2 * i for i in range(8)}
    assert run.batches[0] == [0]
    assert sorted(run.batches[1]) == list(range(1, 8))
    assert coalescer.batches == 2


def test_batches_are_cut_at_max_batch() -> None:
    run = GatedDoubler()
    coalescer: Coalescer[int, int] = Coalescer(run, max_batch=3)
    results: dict[int, int] = {}
    first = _call_all(coalescer, range(1), results)
    assert run.entered.wait(WAIT)
    rest = _call_all(coalescer, range(1, 8), results)
    _until(lambda: coalescer.waiting == 7)
    run.release.set()
    for thread in first + rest:
        thread.join(WAIT)
    assert results == {i: 2 * i for i in range(8)}
    assert [len(b) for b in run.batches] == [1, 3, 3, 1]


def test_a_failing_batch_raises_in_each_of_its_callers_and_the_next_batch_runs() -> None:
    gate = GatedDoubler()

    def run(items: list[int]) -> list[int]:
        answer = gate(items)
        if len(gate.batches) == 2:
            raise ValueError("the model failed")
        return answer

    coalescer: Coalescer[int, int] = Coalescer(run)
    outcomes: dict[int, object] = {}

    def call(i: int) -> None:
        try:
            outcomes[i] = coalescer(i)
        except ValueError as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=call, args=(0,))]
    threads[0].start()
    assert gate.entered.wait(WAIT)
    threads += [threading.Thread(target=call, args=(i,)) for i in (1, 2)]
    for thread in threads[1:]:
        thread.start()
    _until(lambda: coalescer.waiting == 2)
    gate.release.set()
    for thread in threads:
        thread.join(WAIT)
    assert outcomes[0] == 0
    assert all(isinstance(outcomes[i], ValueError) for i in (1, 2))
    assert coalescer(5) == 10  # not stuck: the next call runs its own batch


def test_a_wrong_number_of_results_is_an_error_not_a_mix_up() -> None:
    coalescer: Coalescer[int, int] = Coalescer(lambda items: [])
    with pytest.raises(RuntimeError, match="answered with 0 results"):
        coalescer(1)
