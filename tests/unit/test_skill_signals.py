"""The pure signals of the dream's skill passes (``reverie.core.skill_signals``): sessions grouped from the log,
recurring terms across sessions, the sparse thresholds, the corpus fingerprint, the optimisation bookkeeping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from reverie.core.skill_signals import (
    RECURRING_HEADER,
    cited_sessions,
    fresh_signals,
    group_sessions,
    is_sparse,
    needs_expansion,
    parse_moment,
    parse_version,
    recurring_terms,
    render_recurring,
    skills_fingerprint,
)

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def test_sessions_are_grouped_newest_first_with_user_turns_only() -> None:
    records = [
        ("s1", {"at": "2026-01-01T10:00:00+00:00", "role": "user", "content": "Summarize my emails"}),
        ("s1", {"at": "2026-01-01T10:01:00+00:00", "role": "assistant", "content": "Done."}),
        ("s1", {"at": "2026-01-01T10:02:00+00:00", "role": "user", "content": "Thanks"}),
        ("s2", {"at": "2026-01-03T09:00:00+00:00", "role": "user", "content": "Email digest please"}),
        ("s3", {"at": "2026-01-04T09:00:00+00:00", "role": "assistant", "content": "no user turn here"}),
        ("s4", {"at": "2026-01-02T09:00:00+00:00", "role": "user", "content": "   "}),
    ]
    sessions = group_sessions(records)
    assert [s.session_id for s in sessions] == ["s2", "s1"]
    assert sessions[1].user_turns == ["Summarize my emails", "Thanks"]
    assert sessions[1].first_message == "Summarize my emails"
    assert (sessions[1].first_at, sessions[1].last_at) == ("2026-01-01T10:00:00+00:00", "2026-01-01T10:02:00+00:00")


def test_terms_count_once_per_session_and_only_from_two_sessions_up() -> None:
    messages = [
        "Please summarize my email inbox, email email",  # "email" counts once here
        "Can you summarize the emails from Bob?",  # "emails" is the same stem
        "Draft an email to the landlord",
        "What is the weather in Lisbon",
        "Weather for 2026 in Porto",  # "2026" is all digits: never a term
    ]
    terms = recurring_terms(messages)
    assert terms == [("email", 3), ("summarize", 2), ("weather", 2)]
    assert recurring_terms(messages, min_sessions=3) == [("email", 3)]
    assert recurring_terms(["the cat ox", "the cat ox"]) == [("cat", 2)]  # stopwords and short tokens never count
    assert recurring_terms(["one message about email"]) == []
    block = render_recurring(terms)
    assert block.splitlines()[0] == RECURRING_HEADER
    assert '- "email": 3 session(s)' in block and '- "weather": 2 session(s)' in block
    assert "none" in render_recurring([])


def test_cited_sessions_keep_shown_distinct_ids_only() -> None:
    assert cited_sessions(["s1", "s1", "s9", 3, None, "s2"], ["s1", "s2", "s3"]) == ["s1", "s2"]
    assert cited_sessions([], ["s1"]) == []


def test_sparse_means_under_200_characters_and_older_than_7_days() -> None:
    old, young = NOW - timedelta(days=7, seconds=1), NOW - timedelta(days=6, hours=23)
    assert is_sparse("x" * 199, old, NOW)
    assert not is_sparse("x" * 200, old, NOW)  # 200 characters is enough
    assert not is_sparse("x" * 10, young, NOW)  # too new to judge
    assert not is_sparse("x" * 10, NOW - timedelta(days=7), NOW)  # exactly 7 days is not "more than"
    assert is_sparse("x" * 299, NOW - timedelta(days=2), NOW, chars=300, days=1)


def test_fingerprint_is_stable_order_insensitive_and_covers_the_text_only() -> None:
    a = ("mcp/email", "Send mail", "1. open the client", ("mcp/calendar",))
    b = ("mcp/calendar", "Book a slot", "1. find a free slot", ())
    base = skills_fingerprint([a, b])
    assert base == skills_fingerprint([b, a]) == skills_fingerprint([a, b])
    for changed in (
        (a[0], "Send email", a[2], a[3]),
        (a[0], a[1], a[2] + " then send", a[3]),
        (a[0], a[1], a[2], ()),
        ("mcp/mail", a[1], a[2], a[3]),
    ):
        assert skills_fingerprint([changed, b]) != base
    assert skills_fingerprint([a]) != base
    # Field boundaries matter: text moved from the summary into the content is a change.
    assert skills_fingerprint([("n", "ab", "c", ())]) != skills_fingerprint([("n", "a", "bc", ())])


def test_only_signals_newer_than_the_last_optimisation_count() -> None:
    times = [NOW - timedelta(days=3), NOW - timedelta(days=1), NOW]
    assert fresh_signals(times, None) == [0, 1, 2]
    assert fresh_signals(times, NOW - timedelta(days=2)) == [1, 2]
    assert fresh_signals(times, NOW) == []
    assert needs_expansion(True, None, 1)
    assert not needs_expansion(True, 2, 2)  # reviewed and untouched since
    assert needs_expansion(True, 2, 3)  # edited after the review
    assert not needs_expansion(False, None, 1)
    assert parse_version(3) == 3 and parse_version("3") is None and parse_version(True) is None
    assert parse_version(0) is None and parse_version(None) is None
    assert parse_moment(NOW.isoformat()) == NOW
    assert parse_moment("yesterday") is None and parse_moment(None) is None
