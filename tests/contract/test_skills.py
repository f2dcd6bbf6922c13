"""SkillRepository: put with growing versions and a version row per write, compare-and-set on the live skill,
archive and revive, bookkeeping that moves no version (vectors, last use), listing by prefix in code-point order
with a cursor, agent isolation, the purge of archived skills, and the usage log's queries (counts, co-usage,
sessions) on both backends."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime

import numpy as np
import pytest

from reverie.errors import Conflict, ValidationError
from reverie.storage.base import Store
from reverie.types import CoUsage, Skill, SkillUsage

from .support import T0, UNICODE_TEXTS, at

VEC = np.linspace(-1, 1, 8, dtype=np.float32).tobytes()


def skill(
    name: str, content: str = "Open the inbox, then summarise.", *, agent: str = "default", **fields: object
) -> Skill:
    values: dict[str, object] = {"summary": f"how to {name}", "created_at": T0, "updated_at": T0}
    values.update(fields)
    return Skill(agent_id=agent, name=name, content=content, **values)  # type: ignore[arg-type]


def names(skills: list[Skill]) -> list[str]:
    return [s.name for s in skills]


# -- put, get and versions ---------------------------------------------------------------------------------
def test_put_then_get_reads_every_field_back(store: Store) -> None:
    given = skill(
        "mcp/email",
        UNICODE_TEXTS[4],
        see_also=("mcp/calendar", "summarize-emails"),
        last_used_at=at(hours=2),
        metadata={"source": "dream", "merged_from": ["a", "b"], "nested": {"ü": [1, 2.5, None, True]}},
        vector=VEC,
        vector_model="hash-8",
    )
    stored = store.skills.put(given, change="created", at=T0)
    assert stored == replace(given, version=1)
    assert store.skills.get("default", "mcp/email") == stored
    assert store.skills.get("default", "mcp/calendar") is None
    assert store.skills.get("other", "mcp/email") is None


def test_every_write_bumps_the_version_and_records_the_state(store: Store) -> None:
    store.skills.put(skill("email"), change="created", at=T0)
    second = store.skills.put(
        skill("email", "Step one. Step two.", see_also=("calendar",), updated_at=at(hours=1)),
        change="edited",
        at=at(hours=1),
    )
    assert second.version == 2
    archived = store.skills.put(replace(second, archived_at=at(hours=2)), change="archived", at=at(hours=2))
    assert archived.version == 3 and archived.archived
    history = store.skills.history("default", "email")
    assert [(v.version, v.change, v.archived) for v in history] == [
        (1, "created", False),
        (2, "edited", False),
        (3, "archived", True),
    ]
    assert history[1].content == "Step one. Step two." and history[1].see_also == ("calendar",)
    assert history[1].recorded_at == at(hours=1)
    assert store.skills.version("default", "email", 1) == history[0]
    assert store.skills.version("default", "email", 9) is None
    assert store.skills.history("other", "email") == []


def test_unicode_text_comes_back_byte_for_byte(store: Store) -> None:
    for n, text in enumerate(UNICODE_TEXTS):
        store.skills.put(skill(f"u{n}", text, summary=text), change="created", at=T0)
        got = store.skills.get("default", f"u{n}")
        assert got is not None and got.content == text and got.summary == text


def test_a_nul_character_is_refused_on_every_backend_and_writes_nothing(store: Store) -> None:
    for bad in (skill("x", "a\x00b"), skill("x", summary="a\x00"), skill("x", metadata={"k": "\x00"})):
        with pytest.raises(ValidationError):
            store.skills.put(bad, change="created", at=T0)
    assert store.skills.count("default", include_archived=True) == 0


# -- compare-and-set ---------------------------------------------------------------------------------------
def test_compare_and_set_on_the_live_skill(store: Store) -> None:
    with pytest.raises(Conflict, match="does not exist"):
        store.skills.put(skill("email"), change="created", at=T0, expected_version=1)
    assert store.skills.put(skill("email"), change="created", at=T0, expected_version=0).version == 1
    with pytest.raises(Conflict, match="at version 1"):
        store.skills.put(skill("email"), change="created", at=T0, expected_version=0)
    with pytest.raises(Conflict, match="at version 1"):
        store.skills.put(skill("email", "x"), change="edited", at=T0, expected_version=2)
    assert store.skills.put(skill("email", "x"), change="edited", at=T0, expected_version=1).version == 2
    assert len(store.skills.history("default", "email")) == 2  # refusals wrote no version row


def test_an_archived_skill_is_not_live_for_compare_and_set(store: Store) -> None:
    first = store.skills.put(skill("email"), change="created", at=T0)
    store.skills.put(replace(first, archived_at=T0), change="archived", at=T0)
    with pytest.raises(Conflict, match="does not exist"):
        store.skills.put(skill("email"), change="edited", at=T0, expected_version=2)
    revived = store.skills.put(skill("email", "again"), change="created", at=at(days=1), expected_version=0)
    assert revived.version == 3 and not revived.archived  # the version goes on through a revival


def test_concurrent_compare_and_set_lets_exactly_one_writer_win(store: Store) -> None:
    store.skills.put(skill("email"), change="created", at=T0)
    wins: list[int] = []
    losses: list[Exception] = []
    barrier = threading.Barrier(4)

    def writer(n: int) -> None:
        barrier.wait()
        try:
            store.skills.put(skill("email", f"writer {n}"), change="edited", at=T0, expected_version=1)
            wins.append(n)
        except Conflict as exc:
            losses.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and len(losses) == 3
    got = store.skills.get("default", "email")
    assert got is not None and got.version == 2 and got.content == f"writer {wins[0]}"
    assert len(store.skills.history("default", "email")) == 2


def test_concurrent_first_writes_of_one_name_serialise(store: Store) -> None:
    barrier = threading.Barrier(4)
    errors: list[Exception] = []

    def writer(n: int) -> None:
        barrier.wait()
        try:
            store.skills.put(skill("email", f"writer {n}"), change="created", at=T0)
        except Exception as exc:  # noqa: BLE001 - any error is the failure under test
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [v.version for v in store.skills.history("default", "email")] == [1, 2, 3, 4]


# -- bookkeeping -------------------------------------------------------------------------------------------
def test_a_vector_is_kept_only_for_the_version_it_was_made_from(store: Store) -> None:
    store.skills.put(skill("email"), change="created", at=T0)
    assert store.skills.set_vector("default", "email", version=1, vector=VEC, model="hash-8")
    got = store.skills.get("default", "email")
    assert got is not None and (got.vector, got.vector_model, got.version) == (VEC, "hash-8", 1)
    store.skills.put(replace(got, content="new text", vector=None, vector_model=None), change="edited", at=T0)
    assert not store.skills.set_vector("default", "email", version=1, vector=VEC, model="hash-8")
    assert not store.skills.set_vector("other", "email", version=2, vector=VEC, model="hash-8")
    after = store.skills.get("default", "email")
    assert after is not None and after.vector is None and len(store.skills.history("default", "email")) == 2


def test_touch_moves_last_used_forward_only_for_live_skills(store: Store) -> None:
    store.skills.put(skill("a"), change="created", at=T0)
    store.skills.put(skill("b", archived_at=T0), change="archived", at=T0)
    store.skills.put(skill("c", agent="other"), change="created", at=T0)
    assert store.skills.touch("default", ["a", "b", "c", "missing"], at=at(hours=2)) == 1
    assert store.skills.touch("default", ["a"], at=at(hours=1)) == 0  # never backwards
    a, b = store.skills.get("default", "a"), store.skills.get("default", "b")
    c = store.skills.get("other", "c")
    assert a is not None and a.last_used_at == at(hours=2) and a.version == 1
    assert b is not None and b.last_used_at is None
    assert c is not None and c.last_used_at is None
    assert store.skills.touch("default", [], at=T0) == 0


# -- listing -----------------------------------------------------------------------------------------------
def test_list_by_prefix_in_code_point_order_with_a_cursor(store: Store) -> None:
    for name in ("mcp/email", "mcp/calendar", "mcp", "mcp-guide", "mcpx/a", "research/web", "a_b", "a%b"):
        store.skills.put(skill(name), change="created", at=T0)
    store.skills.put(skill("mcp/old", archived_at=T0), change="archived", at=T0)
    store.skills.put(skill("mcp/theirs", agent="other"), change="created", at=T0)
    assert names(store.skills.list("default")) == [
        "a%b", "a_b", "mcp", "mcp-guide", "mcp/calendar", "mcp/email", "mcpx/a", "research/web",
    ]  # fmt: skip
    assert names(store.skills.list("default", "mcp/")) == ["mcp/calendar", "mcp/email"]
    assert names(store.skills.list("default", "mcp/", include_archived=True)) == [
        "mcp/calendar",
        "mcp/email",
        "mcp/old",
    ]
    assert names(store.skills.list("default", "a_")) == ["a_b"]  # "_" and "%" are plain characters
    assert names(store.skills.list("default", "mcp", limit=2)) == ["mcp", "mcp-guide"]
    assert names(store.skills.list("default", "mcp", limit=2, after="mcp-guide")) == ["mcp/calendar", "mcp/email"]
    assert store.skills.count("default") == 8 and store.skills.count("default", include_archived=True) == 9
    assert store.skills.count("nobody") == 0


def test_purge_removes_only_skills_archived_long_enough_with_their_versions(store: Store) -> None:
    for agent in ("default", "other"):
        first = store.skills.put(skill("old", agent=agent), change="created", at=T0)
        store.skills.put(replace(first, archived_at=T0), change="archived", at=T0)
    recent = store.skills.put(skill("recent"), change="created", at=T0)
    store.skills.put(replace(recent, archived_at=at(days=10)), change="archived", at=at(days=10))
    store.skills.put(skill("live"), change="created", at=T0)
    assert store.skills.purge_archived(at(days=5)) == 2
    assert store.skills.get("default", "old") is None and store.skills.get("other", "old") is None
    assert store.skills.history("default", "old") == []
    assert store.count_rows("skill_versions") == 3  # recent's two, live's one
    assert store.skills.put(skill("old"), change="created", at=at(days=6)).version == 1  # a fresh skill


# -- the usage log -----------------------------------------------------------------------------------------
def use(store: Store, session: str, *skill_names: str, when: datetime = T0, agent: str = "default") -> None:
    store.skills.add_usage([SkillUsage(agent, session, name, when) for name in skill_names])


def test_usage_rows_filter_and_order_newest_first(store: Store) -> None:
    use(store, "s1", "a", "b", when=T0)
    use(store, "s2", "a", when=at(hours=1))
    use(store, "s3", "c", when=at(hours=2))
    use(store, "s1", "a", agent="other")
    rows = store.skills.usage("default")
    assert [(u.session_id, u.name) for u in rows] == [("s3", "c"), ("s2", "a"), ("s1", "b"), ("s1", "a")]
    assert rows[0] == SkillUsage("default", "s3", "c", at(hours=2))
    assert [u.session_id for u in store.skills.usage("default", name="a")] == ["s2", "s1"]
    assert [u.name for u in store.skills.usage("default", session_ids=["s1"])] == ["b", "a"]
    assert [u.name for u in store.skills.usage("default", since=at(hours=1))] == ["c", "a"]
    assert len(store.skills.usage("default", limit=2)) == 2
    assert store.skills.usage("default", session_ids=[]) == []


def test_usage_counts_count_uses_of_live_skills_in_the_window(store: Store) -> None:
    for name in ("a", "b"):
        store.skills.put(skill(name), change="created", at=T0)
    store.skills.put(skill("gone", archived_at=T0), change="archived", at=T0)
    use(store, "s1", "a", "a", "b", "gone", when=at(days=1))
    use(store, "s0", "a", when=T0)  # before the window
    use(store, "s1", "a", agent="other", when=at(days=1))
    assert store.skills.usage_counts("default", at(hours=1)) == {"a": 2, "b": 1}
    assert store.skills.usage_counts("default", T0) == {"a": 3, "b": 1}
    assert store.skills.usage_counts("nobody", T0) == {}


def test_co_usage_counts_sessions_per_pair_of_live_skills(store: Store) -> None:
    for name in ("a", "b", "c", "d"):
        store.skills.put(skill(name), change="created", at=T0)
    store.skills.put(skill("gone", archived_at=T0), change="archived", at=T0)
    use(store, "s1", "a", "b", "b", "c", "gone", when=at(days=1))
    use(store, "s2", "b", "a", when=at(days=1))
    use(store, "s3", "c", "d", when=at(days=1))
    use(store, "s4", "a", "b", when=T0)  # before the window
    use(store, "s1", "c", "d", agent="other", when=at(days=1))
    pairs = store.skills.co_usage("default", at(hours=1), 10)
    assert pairs == [CoUsage("a", "b", 2), CoUsage("a", "c", 1), CoUsage("b", "c", 1), CoUsage("c", "d", 1)]
    assert store.skills.co_usage("default", at(hours=1), 2) == pairs[:2]
    assert store.skills.co_usage("default", T0, 1) == [CoUsage("a", "b", 3)]


def test_purge_usage_removes_rows_older_than_the_cutoff(store: Store) -> None:
    use(store, "s1", "a", when=T0)
    use(store, "s2", "a", when=at(days=2), agent="other")
    use(store, "s3", "a", when=at(days=5))
    assert store.skills.purge_usage(at(days=3)) == 2
    assert [u.session_id for u in store.skills.usage("default")] == ["s3"]
    assert store.skills.usage("other") == []
