"""Cutting one embedding call into model runs: by length, under a budget of padded tokens. Pure logic.

A run's cost is its padded size (texts × its longest text, in tokens): every text of a run is padded to the
run's longest. Sorting a call's texts by length keeps the padding small; a budget of padded tokens per run,
rather than a fixed count of texts, keeps each run's activations the same size whatever the texts' length:
with MiniLM's budget (384) 250-character chat turns (~60 tokens each) run 6 at a time and 15-word facts
(~18 tokens) 21 at a time, where a fixed 32 long texts a run embedded them ~15% slower per text (presumably
as such a run's feed-forward activations, ~12 MiB, outgrow a core's 2 MiB cache; docs/benchmarks.md,
"Embedding long texts").

Invariants (tested): every index of ``lengths`` is in exactly one run; a run holds at most ``max_texts``
texts and at most ``max_tokens`` padded tokens, except a run of one text longer than the budget; runs are
in ascending order of length, and texts of equal length keep their order (a stable sort), so the plan is a
pure function of the lengths.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.intp]


def plan_runs(lengths: Sequence[int] | npt.NDArray[np.integer], *, max_texts: int, max_tokens: int) -> list[Rows]:
    """The rows of each run, shortest texts first: sorted by length, cut when one more text would take the run
    past ``max_texts`` texts or past ``max_tokens`` padded tokens (its count × its longest)."""
    if max_texts < 1 or max_tokens < 1:
        raise ValueError("max_texts and max_tokens must be at least 1")
    sizes = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(sizes, kind="stable")
    runs: list[Rows] = []
    start = 0
    for end in range(1, len(order) + 1):
        if end == len(order):
            runs.append(order[start:end])
            break
        count = end + 1 - start  # the run with the next text added; that text is its longest (ascending order)
        if count > max_texts or count * int(sizes[order[end]]) > max_tokens:
            runs.append(order[start:end])
            start = end
    return runs
