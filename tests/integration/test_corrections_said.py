"""Corrections as people say them (``bench.truth_said``, the pairs ``reverie bench truth`` reports): each stored
fact, then two days later a correction, through the default save and the fold after embedding with the bundled
embedder. Nothing is ever lost; a correction that says so supersedes; the same shapes about something else
supersede nothing. The counts are those of docs/benchmarks.md ("Corrections as people say them"): a regression
guard, since the pairs no cue can read are listed in docs/concepts.md ("Limits")."""

from __future__ import annotations

from reverie.bench.truth_said import CORRECTIONS, TWINS, run_said


def test_corrections_said_supersede_and_twins_stay_apart() -> None:
    run = run_said()
    assert (run.corrections, run.twins) == (len(CORRECTIONS), len(TWINS))
    assert run.kept_whole == len(CORRECTIONS) + len(TWINS)  # nothing lost, whatever was decided
    assert run.twins_superseded == 0
    # Before the correction cues: 15 superseded, 19 ranked first.
    assert run.superseded >= 26, run
    assert run.ranked_first >= 29, run
