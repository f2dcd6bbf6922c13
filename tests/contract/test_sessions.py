"""SessionRepository: sessions, turns, retention flags, the archive cap, fresh starts and the purge of deleted
sessions, on every backend."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reverie.errors import Conflict, NotFound
from reverie.storage.base import Store
from reverie.types import SessionRecord, TurnCounts, TurnRecord

from .support import T0, UNICODE_TEXTS, at


def session(session_id: str = "s1", agent_id: str = "agent-a", **fields: object) -> SessionRecord:
    values: dict[str, object] = {"created_at": T0, "last_active_at": T0, "started_at": T0, **fields}
    return SessionRecord(agent_id=agent_id, session_id=session_id, **values)  # type: ignore[arg-type]


def turn(index: int, session_id: str = "s1", agent_id: str = "agent-a", **fields: object) -> TurnRecord:
    values: dict[str, object] = {"role": "user", "content": f"turn {index}", "at": at(minutes=index), **fields}
    return TurnRecord(agent_id=agent_id, session_id=session_id, index=index, **values)  # type: ignore[arg-type]


def fill(store: Store, n: int, session_id: str = "s1", agent_id: str = "agent-a") -> None:
    for i in range(1, n + 1):
        store.sessions.append_turn(turn(i, session_id, agent_id))


def indexes(turns: list[TurnRecord]) -> list[int]:
    return [t.index for t in turns]


# -- sessions -----------------------------------------------------------------------------------------
def test_a_session_reads_back_field_for_field(store: Store) -> None:
    made = session(name="research 🧪", metadata={"topic": "café", "n": [1, 2]}, summary="so far", compacted_through=3)
    store.sessions.create(made)
    assert store.sessions.get("agent-a", "s1") == made
    assert store.sessions.get("agent-a", "nope") is None


def test_create_refuses_an_existing_id_even_deleted(store: Store) -> None:
    store.sessions.create(session())
    with pytest.raises(Conflict):
        store.sessions.create(session(name="again"))
    store.sessions.mark_deleted("agent-a", "s1", at(hours=1))
    with pytest.raises(Conflict):
        store.sessions.create(session())
    assert store.sessions.get("agent-a", "s1") == session(deleted_at=at(hours=1))


def test_sessions_are_per_agent(store: Store) -> None:
    store.sessions.create(session(agent_id="agent-a"))
    store.sessions.create(session(agent_id="agent-b", name="b's"))
    fill(store, 3, agent_id="agent-a")
    assert store.sessions.get("agent-b", "s1") == session(agent_id="agent-b", name="b's")
    assert store.sessions.turns("agent-b", "s1") == []
    assert store.sessions.turn_counts("agent-b", "s1") == TurnCounts()
    assert store.sessions.discard_turns("agent-b", "s1") == 0
    assert len(store.sessions.turns("agent-a", "s1")) == 3
    assert [s.session_id for s in store.sessions.list("agent-c")] == []


def test_list_is_most_recently_active_first_and_hides_deleted(store: Store) -> None:
    store.sessions.create(session("old", last_active_at=at(hours=1)))
    store.sessions.create(session("new", last_active_at=at(hours=3)))
    store.sessions.create(session("mid", last_active_at=at(hours=2)))
    assert [s.session_id for s in store.sessions.list("agent-a")] == ["new", "mid", "old"]
    assert store.sessions.mark_deleted("agent-a", "mid", at(hours=4))
    assert not store.sessions.mark_deleted("agent-a", "mid", at(hours=5))  # already deleted: unchanged
    assert not store.sessions.mark_deleted("agent-a", "nope", at(hours=5))
    assert [s.session_id for s in store.sessions.list("agent-a")] == ["new", "old"]
    listed = store.sessions.list("agent-a", include_deleted=True)
    assert [(s.session_id, s.deleted_at) for s in listed] == [("new", None), ("mid", at(hours=4)), ("old", None)]


def test_update_replaces_every_field_and_refuses_unknown(store: Store) -> None:
    store.sessions.create(session())
    changed = session(
        last_active_at=at(hours=2),
        started_at=at(hours=1),
        name="n",
        summary="s",
        compacted_through=7,
        metadata={"a": 1},
    )
    store.sessions.update(changed)
    assert store.sessions.get("agent-a", "s1") == changed
    with pytest.raises(NotFound):
        store.sessions.update(session("nope"))
    assert store.sessions.get("agent-a", "nope") is None


def test_purge_deleted_removes_sessions_deleted_long_enough_with_their_turns(store: Store) -> None:
    for sid in ("gone", "recent", "live"):
        store.sessions.create(session(sid))
        fill(store, 2, sid)
    store.sessions.mark_deleted("agent-a", "gone", at(days=1))
    store.sessions.mark_deleted("agent-a", "recent", at(days=10))
    assert store.sessions.purge_deleted(at(days=5)) == 1
    assert store.sessions.get("agent-a", "gone") is None
    assert store.sessions.turns("agent-a", "gone") == []
    assert store.sessions.turn_counts("agent-a", "recent").retained == 2
    assert store.sessions.purge_deleted(at(days=5)) == 0
    store.sessions.create(session("gone"))  # the id is free again
    assert store.sessions.turns("agent-a", "gone") == []


# -- turns --------------------------------------------------------------------------------------------
def test_turns_read_back_in_index_order_with_every_field(store: Store) -> None:
    store.sessions.create(session())
    calls = [{"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}]
    made = [
        turn(1, content=UNICODE_TEXTS[0]),
        turn(2, role="assistant", content="", tool_calls=calls),
        turn(3, role="tool", content="result", tool_call_id="call_1", name="search"),
        *(turn(4 + i, content=text) for i, text in enumerate(UNICODE_TEXTS[1:])),
    ]
    for t in reversed(made):
        store.sessions.append_turn(t)
    assert store.sessions.turns("agent-a", "s1") == made


def test_append_refuses_a_taken_index_and_an_unknown_session(store: Store) -> None:
    store.sessions.create(session())
    store.sessions.append_turn(turn(1))
    with pytest.raises(Conflict):
        store.sessions.append_turn(turn(1, content="again"))
    with pytest.raises(NotFound):
        store.sessions.append_turn(turn(1, session_id="nope"))
    with pytest.raises(NotFound):
        store.sessions.append_turn(turn(1, agent_id="agent-b"))
    assert store.sessions.turns("agent-a", "s1") == [turn(1)]


def test_archive_flags_older_turns_and_filters_read_them(store: Store) -> None:
    store.sessions.create(session())
    fill(store, 6)
    assert store.sessions.archive_turns_before("agent-a", "s1", 4) == 3
    assert store.sessions.archive_turns_before("agent-a", "s1", 4) == 0
    assert indexes(store.sessions.turns("agent-a", "s1", archived=True)) == [1, 2, 3]
    assert indexes(store.sessions.turns("agent-a", "s1", archived=False)) == [4, 5, 6]
    assert [t.archived for t in store.sessions.turns("agent-a", "s1")] == [True] * 3 + [False] * 3
    assert store.sessions.turn_counts("agent-a", "s1") == TurnCounts(
        retained=3, archived=3, first_index=1, last_index=6
    )


def test_after_and_last_narrow_the_read(store: Store) -> None:
    store.sessions.create(session())
    fill(store, 10)
    store.sessions.archive_turns_before("agent-a", "s1", 6)
    assert indexes(store.sessions.turns("agent-a", "s1", after=7)) == [8, 9, 10]
    assert indexes(store.sessions.turns("agent-a", "s1", last=4)) == [7, 8, 9, 10]
    assert indexes(store.sessions.turns("agent-a", "s1", archived=True, last=2)) == [4, 5]
    assert indexes(store.sessions.turns("agent-a", "s1", after=2, last=20)) == list(range(3, 11))
    assert store.sessions.turns("agent-a", "s1", last=0) == []


def test_drop_archived_beyond_keeps_the_newest_archived(store: Store) -> None:
    store.sessions.create(session())
    fill(store, 10)
    store.sessions.archive_turns_before("agent-a", "s1", 8)  # 1..7 archived
    assert store.sessions.drop_archived_beyond("agent-a", "s1", 3) == 4
    assert indexes(store.sessions.turns("agent-a", "s1")) == [5, 6, 7, 8, 9, 10]
    assert store.sessions.drop_archived_beyond("agent-a", "s1", 3) == 0
    assert store.sessions.turn_counts("agent-a", "s1") == TurnCounts(
        retained=3, archived=3, first_index=5, last_index=10
    )
    assert store.sessions.drop_archived_beyond("agent-a", "s1", 0) == 3
    assert indexes(store.sessions.turns("agent-a", "s1")) == [8, 9, 10]


def test_discard_turns_empties_the_session_but_keeps_it(store: Store) -> None:
    store.sessions.create(session())
    fill(store, 5)
    store.sessions.archive_turns_before("agent-a", "s1", 3)
    assert store.sessions.discard_turns("agent-a", "s1") == 5
    assert store.sessions.turns("agent-a", "s1") == []
    assert store.sessions.turn_counts("agent-a", "s1") == TurnCounts()
    assert store.sessions.get("agent-a", "s1") == session()
    store.sessions.append_turn(turn(1, content="a fresh start"))  # indexes start over
    assert [t.content for t in store.sessions.turns("agent-a", "s1")] == ["a fresh start"]


def test_a_failed_transaction_leaves_sessions_and_turns_as_they_were(store: Store) -> None:
    store.sessions.create(session())
    fill(store, 3)
    with pytest.raises(Conflict), store.transaction():
        store.sessions.archive_turns_before("agent-a", "s1", 3)
        store.sessions.update(replace(session(), summary="half"))
        store.sessions.append_turn(turn(3))  # taken: the whole unit is undone
    assert store.sessions.get("agent-a", "s1") == session()
    assert [t.archived for t in store.sessions.turns("agent-a", "s1")] == [False] * 3
