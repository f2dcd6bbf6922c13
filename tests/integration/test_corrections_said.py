"""Corrections as people say them (``bench.truth_said``, the pairs ``reverie bench truth`` reports): each stored
fact, then two days later a correction, through the default save and the fold after embedding with the bundled
embedder. Nothing is ever lost; a correction that says so supersedes; the same shapes about something else
supersede nothing. The counts are those of docs/benchmarks.md ("Corrections as people say them"): a regression
guard, since the pairs no cue can read are listed in docs/concepts.md ("Limits")."""

from __future__ import annotations

from reverie.bench.truth_said import CORRECTIONS, TWINS, UNMARKED, run_said


def test_corrections_said_supersede_and_twins_stay_apart() -> None:
    run = run_said()
    assert (run.corrections, run.twins) == (len(CORRECTIONS), len(TWINS))
    assert run.kept_whole == len(CORRECTIONS) + len(TWINS) + len(UNMARKED)  # nothing lost, whatever was decided
    assert run.twins_superseded == 0
    # Of the first 34: 15 superseded and 19 ranked first before the correction cues, 26 and 29 after. Of all 61:
    # 31 and 37 before the replacement reading and newer-first ranking, 36 and 52 after; 46 and 52 once the
    # save reads a stated change in any category or with fewer words in common (core.correction), 48 once a
    # replaced amount counts as a value whatever the tense. Of all 81 (20 corrections and 12 twins written after
    # the replaced-slot reading, core.slot): 56 and 60 before it, 72 and 74 after. Of all 136 (30 corrections and
    # 15 twins the fillers, addresses and counted amounts were built on, then 25 and 12 scored once): 103 and
    # 107 before them, 110 and 117 after (the last 25: 15 and 17 both times); 120 ranked first once newer-first
    # read values replaced with no word of change, which put the later text first for all 20 UNMARKED pairs
    # (12 before).
    assert run.superseded >= 110, run
    assert run.ranked_first >= 120, run
    assert run.unmarked_first == len(UNMARKED), run
