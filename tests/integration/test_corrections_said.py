"""Corrections as people say them (``tests/_correction_pairs.py``): each stored fact, then two days later a
correction, through the default save and the fold after embedding with the bundled embedder. Nothing is ever
lost; a correction that says so supersedes; the same shapes about something else supersede nothing. The counts
are those of docs/benchmarks.md ("Corrections as people say them"): a regression guard, since the pairs a cue
cannot read are listed in docs/concepts.md ("Limits")."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import reverie
from _correction_pairs import CORRECTIONS, TWINS
from reverie.clock import FakeClock


def _said(rv: reverie.Reverie, clock: FakeClock, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each pair in its own agent: the first text saved and embedded, two days later the second. The ids."""
    ids: list[tuple[str, str]] = []
    for first, _ in pairs:
        ids.append((rv.memory.save(first, scope=reverie.Scope(agent_id=f"p{len(ids)}")).id, ""))
    rv.embed_pending()
    clock.advance(timedelta(days=2))
    for index, (_, second) in enumerate(pairs):
        ids[index] = (ids[index][0], rv.memory.save(second, scope=reverie.Scope(agent_id=f"p{index}")).id)
    rv.embed_pending()
    return ids


def test_corrections_said_supersede_and_twins_stay_apart(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(tmp_path, clock=clock, embedding={"background": False}) as rv:
        said = _said(rv, clock, [(a, b) for a, b, _ in CORRECTIONS])
        superseded = 0
        ranked_first = 0
        for index, ((old_id, new_id), (first, second, question)) in enumerate(zip(said, CORRECTIONS, strict=True)):
            scope = reverie.Scope(agent_id=f"p{index}")
            old, new = rv.memory.get(old_id, scope=scope), rv.memory.get(new_id, scope=scope)
            assert old.content.startswith(first) and second in new.content  # nothing lost, whatever happened
            superseded += old.superseded_by == new.id
            hits = [h.entry.id for h in rv.memory.search(question, limit=5, scope=scope)]
            ranked_first += bool(hits) and hits[0] == new.id
        # Before the correction cues: 15 superseded, 19 ranked first.
        assert superseded >= 26, superseded
        assert ranked_first >= 29, ranked_first
    with reverie.open(tmp_path / "twins", clock=clock, embedding={"background": False}) as rv:
        for index, (old_id, new_id) in enumerate(_said(rv, clock, TWINS)):
            scope = reverie.Scope(agent_id=f"p{index}")
            assert rv.memory.get(old_id, scope=scope).current and rv.memory.get(new_id, scope=scope).current
