"""ActivityLogRepository and InjectedRepository: the conversation, execution and tool-call logs as append-only
tables (order, filters, all-or-nothing appends, deletes, retention that never drops a concurrent append) and
the context builder's delta filter (per session, kept once, gone with its session)."""

from __future__ import annotations

import pytest

from reverie.errors import Conflict, ValidationError
from reverie.storage.base import LogName, LogRow, SessionWrites, Store
from reverie.types import SessionRecord

from .support import T0, UNICODE_TEXTS, at

LOGS: tuple[LogName, ...] = ("conversation", "executions", "tool-calls")


def row(minutes: float, agent_id: str = "agent-a", session_id: str | None = "s1", **record: object) -> LogRow:
    stamp = at(minutes=minutes)
    body: dict[str, object] = {"at": stamp.isoformat(), "agent": agent_id, **record}
    return LogRow(agent_id, session_id, stamp, body)


def contents(rows: list[LogRow]) -> list[object]:
    return [r.record.get("content") for r in rows]


@pytest.mark.parametrize("log", LOGS)
def test_rows_come_back_in_append_order_with_their_records(store: Store, log: LogName) -> None:
    nested: dict[str, object] = {"steps": [{"name": "pay", "ok": False, "error": None}], "n": 1.5, "flag": True}
    store.logs.append(log, [row(2, content=UNICODE_TEXTS[4], none=None, nested=nested), row(1, content="second")])
    store.logs.append(log, [row(3, content=UNICODE_TEXTS[6])])
    found = store.logs.read(log)
    assert contents(found) == [UNICODE_TEXTS[4], "second", UNICODE_TEXTS[6]]  # seq order, not time order
    assert found[0].seq < found[1].seq < found[2].seq
    first = found[0]
    assert (first.agent_id, first.session_id, first.at) == ("agent-a", "s1", at(minutes=2))
    assert first.at.tzinfo is not None and first.record["nested"] == nested
    assert first.record["at"] == at(minutes=2).isoformat() and first.record["none"] is None
    assert store.logs.count(log) == 3
    others = [name for name in LOGS if name != log]
    assert all(store.logs.read(name) == [] for name in others)  # one table per log


def test_reads_filter_by_agent_session_and_time(store: Store) -> None:
    store.logs.append(
        "conversation",
        [
            row(1, content="a1"),
            row(2, "agent-b", content="b1"),
            row(3, session_id="s2", content="a2"),
            row(4, content="a3"),
        ],
    )
    logs = store.logs
    assert contents(logs.read("conversation", agent_id="agent-a")) == ["a1", "a2", "a3"]
    assert contents(logs.read("conversation", agent_id="agent-a", session_id="s1")) == ["a1", "a3"]
    assert contents(logs.read("conversation", session_id="s1")) == ["a1", "b1", "a3"]
    assert contents(logs.read("conversation", since=at(minutes=3))) == ["a2", "a3"]  # at >= since
    assert contents(logs.read("conversation", agent_id="agent-b", since=at(minutes=3))) == []


def test_executions_and_tool_calls_may_have_no_session(store: Store) -> None:
    store.logs.append("executions", [row(1, session_id=None, content="no session")])
    (found,) = store.logs.read("executions")
    assert found.session_id is None and store.logs.sessions("executions") == []


def test_an_append_is_all_or_nothing(store: Store) -> None:
    with pytest.raises(ValidationError):
        store.logs.append("tool-calls", [row(1, content="fine"), row(2, content=float("nan"))])
    assert store.logs.read("tool-calls") == []
    with pytest.raises(RuntimeError), store.transaction():
        store.logs.append("tool-calls", [row(1, content="rolled back")])
        raise RuntimeError("undo")
    assert store.logs.count("tool-calls") == 0
    store.logs.append("tool-calls", [])
    assert store.logs.count("tool-calls") == 0


def test_delete_and_clear(store: Store) -> None:
    store.logs.append(
        "conversation",
        [row(1, content="a1"), row(2, "agent-b", content="b1"), row(3, session_id="s2", content="a2")],
    )
    first, *_ = store.logs.read("conversation")
    assert store.logs.delete("conversation", [first.seq, 10_000_000]) == 1
    assert store.logs.delete("conversation", []) == 0
    assert contents(store.logs.read("conversation")) == ["b1", "a2"]
    assert store.logs.clear("conversation", agent_id="agent-b") == 1
    store.logs.append("conversation", [row(4, content="a3"), row(5, "agent-b", session_id="s2", content="b2")])
    assert store.logs.clear("conversation", session_id="s2") == 2
    assert contents(store.logs.read("conversation")) == ["a3"]
    assert store.logs.clear("conversation") == 1 and store.logs.count("conversation") == 0


def test_seq_is_never_reused_after_the_newest_rows_went(store: Store) -> None:
    store.logs.append("executions", [row(1, content="one"), row(2, content="two")])
    newest = store.logs.read("executions")[-1].seq
    store.logs.clear("executions")
    store.logs.append("executions", [row(3, content="three")])
    assert store.logs.read("executions")[0].seq > newest


def test_sessions_list_each_last_write(store: Store) -> None:
    store.logs.append(
        "conversation",
        [row(5, session_id="s-b", content="x"), row(1, session_id="s-a"), row(2, "agent-b", session_id="s-b")],
    )
    listed = store.logs.sessions("conversation")
    seqs = [r.seq for r in store.logs.read("conversation")]
    assert listed == [
        SessionWrites("s-a", at(minutes=1), seqs[1]),
        SessionWrites("s-b", at(minutes=5), seqs[2]),  # last write: the latest time; last row: the newest seq
    ]


def test_a_session_appended_to_since_it_was_listed_is_not_dropped(store: Store) -> None:
    store.logs.append("conversation", [row(1, session_id="old"), row(2, session_id="old"), row(3, session_id="s")])
    old, _ = store.logs.sessions("conversation")
    store.logs.append("conversation", [row(4, session_id="old", content="late")])
    assert store.logs.drop_session("conversation", old) == 0
    assert len(store.logs.read("conversation", session_id="old")) == 3
    current, _ = store.logs.sessions("conversation")
    assert store.logs.drop_session("conversation", current) == 3
    assert [r.session_id for r in store.logs.read("conversation")] == ["s"]


def test_trim_keeps_the_last_rows_of_the_log_or_of_each_session(store: Store) -> None:
    store.logs.append("tool-calls", [row(n, content=str(n)) for n in range(5)])
    assert store.logs.trim("tool-calls", 2, per_session=False) == 3
    assert contents(store.logs.read("tool-calls")) == ["3", "4"]
    assert store.logs.trim("tool-calls", 2, per_session=False) == 0
    assert store.logs.trim("tool-calls", 10, per_session=False) == 0

    rows = [row(n, session_id=f"s{n % 2}", content=str(n)) for n in range(7)]
    store.logs.append("conversation", rows)
    assert store.logs.trim("conversation", 2, per_session=True) == 3
    assert contents(store.logs.read("conversation", session_id="s0")) == ["4", "6"]
    assert contents(store.logs.read("conversation", session_id="s1")) == ["3", "5"]
    with pytest.raises(ValidationError):
        store.logs.trim("conversation", 0, per_session=True)


def test_an_unknown_log_is_refused(store: Store) -> None:
    with pytest.raises(ValidationError):
        store.logs.read("dream")  # type: ignore[arg-type]


# -- the delta filter ----------------------------------------------------------------------------------------
def session(store: Store, agent_id: str, session_id: str) -> None:
    store.sessions.create(SessionRecord(agent_id, session_id, T0, T0, T0))


def test_the_delta_filter_is_per_session_and_keeps_an_id_once(store: Store) -> None:
    for agent_id, session_id in (("agent-a", "s1"), ("agent-a", "s2"), ("agent-b", "s1")):
        session(store, agent_id, session_id)
    injected = store.injected
    assert injected.injected("agent-a", "s1") == set()
    injected.add_injected("agent-a", "s1", ["e1", "e2"], at=T0)
    injected.add_injected("agent-a", "s1", ["e2", "e3", "e3"], at=at(minutes=1))
    injected.add_injected("agent-a", "s1", [], at=T0)
    injected.add_injected("agent-a", "s2", ["e9"], at=T0)
    assert injected.injected("agent-a", "s1") == {"e1", "e2", "e3"}
    assert injected.injected("agent-b", "s1") == set()
    assert injected.forget_injected("agent-a", "s1") == 3
    assert injected.injected("agent-a", "s1") == set() and injected.injected("agent-a", "s2") == {"e9"}


def test_the_delta_filter_goes_with_its_session(store: Store) -> None:
    with pytest.raises(Conflict):
        store.injected.add_injected("agent-a", "no-such-session", ["e1"], at=T0)
    session(store, "agent-a", "gone")
    store.injected.add_injected("agent-a", "gone", ["e1"], at=T0)
    assert store.sessions.mark_deleted("agent-a", "gone", at(minutes=1))
    assert store.injected.injected("agent-a", "gone") == {"e1"}  # marked deleted: kept until the purge
    assert store.sessions.purge_deleted(at(minutes=2)) == 1
    assert store.injected.injected("agent-a", "gone") == set()
