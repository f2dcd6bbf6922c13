"""The store the console's browser tests look at: the demo's sample plus what every page needs to show —
an edited entry (versions), a corrected belief (a supersession chain), a pinned and an archived entry, a
session with turns, working memory with a TTL, graph entities from the rules extractor, and a dream run whose
scripted model merged two entries. Built once per test module through the engine's own services."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import reverie
from reverie.demo import load_sample

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> Maya\'s <b>bold</b> note'
_ENTRY = re.compile(r"^\[\d+\] id=([0-9a-f]{12})[^\n]*\n\s+(.*?)$", re.M)
FASTAPI = "Lantern's API runs on FastAPI."
POSTGRES = "Lantern stores its data in PostgreSQL."


@dataclass
class Built:
    """The ids the tests look for."""

    edited: str  # an entry with three versions
    corrected: str  # the earlier belief, superseded by ``correction``
    correction: str
    pinned: str
    archived: str
    hostile: str  # content with markup in it: must render as text
    session: str


def scripted_dream(body: dict[str, Any]) -> str:
    """The dream's stand-in model: merges the two short Lantern stack entries when the consolidation prompt
    (``TASK: memory consolidation``, entries as ``[n] id=<id> …`` with the text on the next line) shows both;
    every other answer changes nothing."""
    prompt = str(body["messages"][-1]["content"])
    nothing = json.dumps({"toDelete": [], "toSave": []})
    if not prompt.startswith("TASK: memory consolidation"):
        return nothing
    shown = {text.strip(): entry_id for entry_id, text in _ENTRY.findall(prompt)}
    if FASTAPI not in shown or POSTGRES not in shown:
        return nothing
    save = {"content": f"{FASTAPI} {POSTGRES}", "category": "project-context/lantern",
            "sourceIds": [shown[FASTAPI], shown[POSTGRES]]}  # fmt: skip
    return json.dumps({"toDelete": [], "toSave": [save]})


def build(rv: reverie.Reverie) -> Built:
    """Fill agent ``demo`` (and a little of agent ``other``) through the public services."""
    scope = reverie.Scope(agent_id="demo")
    ids: dict[str, str] = {}
    for fact in load_sample():
        saved = rv.memory.save(
            fact.content,
            category=fact.category,
            tags=fact.tags,
            source=fact.source,
            importance=fact.importance,
            scope=scope,
        )
        ids[fact.content] = saved.id
    edited = ids[next(c for c in ids if "Lisbon" in c)]
    rv.memory.edit(edited, content="Maya moved to Porto in October; still Europe/Lisbon hours.", scope=scope)
    rv.memory.edit(edited, content="Maya lives in Porto; Europe/Lisbon hours, meetings before 16:00.", scope=scope)
    corrected = rv.memory.save("Priya's editor is Neovim.", category="people/priya", scope=scope).id
    correction = rv.memory.save("Priya's editor is not Neovim.", category="people/priya", scope=scope).id
    pinned = rv.memory.save(
        "Never deploy Lantern on Fridays.", category="project-context/lantern", pinned=True, scope=scope
    ).id
    archived = rv.memory.save("Old wiki lives at wiki.example.internal.", category="reference", scope=scope).id
    rv.memory.archive(archived, scope=scope)
    hostile = rv.memory.save(HOSTILE, category="notes", scope=scope).id
    rv.memory.save(FASTAPI, category="project-context/lantern", scope=scope, dedup=False)
    rv.memory.save(POSTGRES, category="project-context/lantern", scope=scope, dedup=False)
    rv.memory.save("Ravi prefers tea to coffee.", category="people/ravi", scope=reverie.Scope(agent_id="other"))
    session = "standup-1"
    rv.conversation.create(session, agent_id="demo")
    for role, text in (
        ("user", "Maya asked to move the Lantern review to Thursday."),
        ("assistant", "Noted: the Lantern review moves to Thursday."),
        ("user", "Also remind me that Priya is off on Wednesday afternoons."),
    ):
        rv.conversation.add_turn(session, role, text, agent_id="demo")
    notes = rv.working.for_namespace(f"session/{session}", agent_id="demo")
    notes.save("draft-agenda", "1. Lantern review moved to Thursday\n2. Priya off Wednesday afternoons", ttl_minutes=30)
    rv.embed_pending()
    rv.extract_pending()
    return Built(edited, corrected, correction, pinned, archived, hostile, session)
