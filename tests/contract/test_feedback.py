"""FeedbackRepository: signals read back whole, filters (since, kinds, sessions), newest first, agent
isolation, duplicate ids refused, NUL refused on every backend, and the purge."""

from __future__ import annotations

import pytest

from reverie.errors import Conflict, ValidationError
from reverie.storage.base import Store
from reverie.types import Feedback

from .support import T0, UNICODE_TEXTS, at


def signal(
    n: int, kind: str = "correction", *, session: str = "s1", agent: str = "default", **fields: object
) -> Feedback:
    return Feedback(f"f{n:05d}", agent, session, kind, fields.pop("created_at", T0), **fields)  # type: ignore[arg-type]


def ids(found: list[Feedback]) -> list[str]:
    return [f.feedback_id for f in found]


def test_add_then_get_reads_every_field_back(store: Store) -> None:
    full = signal(
        1,
        "session_summary",
        rating="fair",
        comment=UNICODE_TEXTS[4],
        entry_ids=("00000000000a", "00000000000b"),
        skill_names=("mcp/email",),
        created_at=at(hours=1),
    )
    bare = signal(2, "stale")
    store.feedback.add(full)
    store.feedback.add(bare)
    assert store.feedback.get("default", full.feedback_id) == full
    assert store.feedback.get("default", bare.feedback_id) == bare
    assert store.feedback.get("other", full.feedback_id) is None
    assert store.feedback.get("default", "nope") is None


def test_a_duplicate_id_is_a_conflict(store: Store) -> None:
    store.feedback.add(signal(1))
    with pytest.raises(Conflict):
        store.feedback.add(signal(1, "wrong", agent="other"))
    assert store.count_rows("feedback") == 1


def test_a_nul_character_is_refused_and_writes_nothing(store: Store) -> None:
    for bad in (signal(1, comment="a\x00b"), signal(2, session="s\x00"), signal(3, entry_ids=("a\x00",))):
        with pytest.raises(ValidationError):
            store.feedback.add(bad)
    assert store.count_rows("feedback") == 0


def test_list_filters_and_orders_newest_first(store: Store) -> None:
    store.feedback.add(signal(1, "correction", created_at=T0))
    store.feedback.add(signal(2, "session_summary", rating="poor", session="s2", created_at=at(days=1)))
    store.feedback.add(signal(3, "wrong", session="s2", created_at=at(days=2)))
    store.feedback.add(signal(4, "stale", created_at=at(days=2)))  # same time as 3: insertion order breaks it
    store.feedback.add(signal(5, "correction", agent="other", created_at=at(days=3)))
    assert ids(store.feedback.list("default")) == ["f00004", "f00003", "f00002", "f00001"]
    assert ids(store.feedback.list("default", since=at(days=1))) == ["f00004", "f00003", "f00002"]
    assert ids(store.feedback.list("default", kinds=["correction", "session_summary"])) == ["f00002", "f00001"]
    assert ids(store.feedback.list("default", session_ids=["s2"])) == ["f00003", "f00002"]
    assert ids(store.feedback.list("default", kinds=["wrong"], session_ids=["s1"])) == []
    assert ids(store.feedback.list("default", kinds=[])) == []
    assert ids(store.feedback.list("default", limit=1)) == ["f00004"]
    assert ids(store.feedback.list("other")) == ["f00005"]


def test_purge_removes_signals_older_than_the_cutoff(store: Store) -> None:
    store.feedback.add(signal(1, created_at=T0))
    store.feedback.add(signal(2, agent="other", created_at=at(days=1)))
    store.feedback.add(signal(3, created_at=at(days=3)))
    assert store.feedback.purge_before(at(days=2)) == 2
    assert ids(store.feedback.list("default")) == ["f00003"] and store.feedback.list("other") == []
