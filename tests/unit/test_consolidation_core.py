"""The host's merge arithmetic and review fingerprint (``reverie.core.consolidation``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from reverie.core.consolidation import (
    REVIEWED_HASH,
    corpus_fingerprint,
    is_high_value,
    is_reviewed,
    merged_fields,
    render_entries,
    render_entry,
    review_fingerprint,
)
from reverie.types import MemoryEntry, Scope, Tier

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entry(n: int, content: str = "Maya moved to Lisbon.", **fields: object) -> MemoryEntry:
    base = MemoryEntry(
        id=f"{n:012x}",
        content=content,
        category="people",
        tags=("move",),
        tier=Tier.SEMANTIC,
        scope=Scope(),
        created_at=T0,
        last_seen_at=T0,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def test_the_fingerprint_moves_with_writes_not_with_housekeeping() -> None:
    e = entry(1)
    same = review_fingerprint(e)
    for housekeeping in (
        replace(e, importance=0.1),
        replace(e, updated_at=T0 + timedelta(days=3)),
        replace(e, decayed_through=T0, read_strength=2.0),
    ):
        assert review_fingerprint(housekeeping) == same
    for write in (
        replace(e, content="Maya moved to Porto."),
        replace(e, category="people/maya"),
        replace(e, tags=("move", "home")),
        replace(e, reinforcement_count=2),
    ):
        assert review_fingerprint(write) != same


def test_is_reviewed_compares_the_stamp_with_the_entry_as_it_stands() -> None:
    e = entry(1)
    assert not is_reviewed(e)
    stamped = replace(e, metadata={REVIEWED_HASH: review_fingerprint(e)})
    assert is_reviewed(stamped)
    assert not is_reviewed(replace(stamped, reinforcement_count=3))


def test_merge_arithmetic_is_the_hosts() -> None:
    a = entry(1, created_at=T0, last_seen_at=T0 + timedelta(days=5), reinforcement_count=2, importance=0.4)
    b = entry(
        2,
        created_at=T0 - timedelta(days=30),
        last_seen_at=T0 + timedelta(days=1),
        reinforcement_count=3,
        importance=0.7,
        tier=Tier.EPISODIC,
        metadata={"subjectTimeStart": "2024-03", "subjectTimeEnd": "2024-05", "other": "dropped"},
    )
    c = entry(3, metadata={"subjectTimeStart": "2024-01"})
    fields = merged_fields([a, b, c])
    assert fields.created_at == T0 - timedelta(days=30)
    assert fields.last_seen_at == T0 + timedelta(days=5)  # the latest source's, never now
    assert fields.reinforcement_count == 6
    assert fields.importance == 0.7
    assert fields.tier is Tier.SEMANTIC  # the more durable tier wins
    assert fields.subject_time == {"subjectTimeStart": "2024-01"}  # c has no end: the range stays open
    assert merged_fields([a, b], importance=0.2).importance == 0.2


def test_an_expiry_survives_a_merge_only_when_every_source_expires() -> None:
    soon, later = T0 + timedelta(days=1), T0 + timedelta(days=9)
    assert merged_fields([entry(1, expires_at=soon), entry(2, expires_at=later)]).expires_at == later
    assert merged_fields([entry(1, expires_at=soon), entry(2)]).expires_at is None
    with pytest.raises(ValueError):
        merged_fields([])


def test_the_high_value_floor() -> None:
    def high(e: MemoryEntry) -> bool:
        return is_high_value(e, importance=0.8, reinforcement=5)

    assert not high(entry(1, importance=0.79, reinforcement_count=4))
    assert high(entry(1, importance=0.8))
    assert high(entry(1, reinforcement_count=5))
    assert high(entry(1, pinned=True))


def test_an_entry_is_shown_with_its_temporal_context() -> None:
    e = entry(
        7,
        content="line one\nline two",
        created_at=T0,
        last_seen_at=T0 + timedelta(days=40),
        reinforcement_count=4,
        metadata={"subjectTime": "2025-06", "source": "user"},
    )
    header, *body = render_entry(3, e).splitlines()
    assert header == (
        "[3] id=000000000007 category=people tags=move importance=0.50 first=2026-01-01 last=2026-02-10 "
        "reinforced=4× subject=2025-06 source=user"
    )
    assert body == ["    line one", "    line two"]
    listing = render_entries([entry(1), e], related={e.id})
    assert listing.startswith("## Entries (2)\n[1] id=000000000001")
    assert listing.splitlines()[3].endswith("related=merge-only")


def test_the_corpus_fingerprint_ignores_order() -> None:
    assert corpus_fingerprint(["a", "b"]) == corpus_fingerprint(["b", "a"]) != corpus_fingerprint(["a", "c"])
