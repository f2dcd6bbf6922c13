"""Keyset pages of a skill's versions on both backends: ``SkillRepository.history_page`` by version number,
and ``SkillStore.history_page`` walking the history by cursor. A walk with edits between its pages sees every
version exactly once, oldest first, new ones at its end; another skill's or agent's versions never appear; a
cursor is refused by another skill's history."""

from __future__ import annotations

import pytest

from reverie.clock import FakeClock
from reverie.errors import NotFound, ValidationError
from reverie.skills.service import SkillStore
from reverie.storage.base import Store

from .support import T0


def test_the_repository_pages_versions_by_number(store: Store) -> None:
    skills = SkillStore(store, FakeClock(T0))
    for n in range(5):
        skills.save("default", "mcp/email", "how to email", f"step {n}")
        skills.save("other", "mcp/email", "how to email", f"other {n}")
    skills.save("default", "mcp/email2", "another", "x")
    first = store.skills.history_page("default", "mcp/email", None, 2)
    assert [v.version for v in first] == [1, 2]
    rest = store.skills.history_page("default", "mcp/email", 2, 10)
    assert [v.version for v in rest] == [3, 4, 5] and all(v.name == "mcp/email" for v in rest)
    assert rest == store.skills.history("default", "mcp/email")[2:]
    assert store.skills.history_page("default", "missing", None, 10) == []


def test_the_service_walks_a_history_with_edits_between_pages(store: Store) -> None:
    skills = SkillStore(store, FakeClock(T0))
    for n in range(7):
        skills.save("default", "mcp/email", "how to email", f"step {n}")
    skills.save("default", "mcp/other", "other", "x")
    seen: list[int] = []
    cursor: str | None = None
    edits = 0
    while True:
        page = skills.history_page("default", "mcp/email", cursor=cursor, limit=3)
        assert len(page.items) <= 3
        seen.extend(v.version for v in page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        edits += 1
        skills.save("default", "mcp/email", "how to email", f"edit {edits}")
    assert seen == list(range(1, 8 + edits))
    assert seen == [v.version for v in skills.history("default", "mcp/email")]
    first = skills.history_page("default", "mcp/email", limit=2)
    assert first.next_cursor is not None
    with pytest.raises(ValidationError) as refused:
        skills.history_page("default", "mcp/other", cursor=first.next_cursor)
    assert refused.value.field == "cursor"
    with pytest.raises(NotFound):
        skills.history_page("default", "missing")
    with pytest.raises(ValidationError):
        skills.history_page("default", "mcp/email", limit=0)
