"""The long-term save path for imports, on both backends (SQLite file, embedded PostgreSQL): ``save_many`` with
per-item results (``on_error="skip"``), an explicit observed time (``observed_at``), and subject-time metadata
checked at save."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import reverie
from _template import new_store_file
from reverie import SaveRejection, SaveResult, Scope, ValidationError
from reverie.clock import FakeClock
from reverie.core.validate import OBSERVED_AT_TOLERANCE

BACKENDS = ["sqlite", "postgresql"]
MAX_CHARS = 20_000  # memory.max_content_chars, the default
MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@pytest.fixture(params=BACKENDS)
def engine(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, sqlite_template: Path
) -> Iterator[reverie.Reverie]:
    options: dict[str, Any] = {"clock": clock, "embedding": {"provider": "hash", "background": False}}
    if request.param == "sqlite":
        new_store_file(sqlite_template, tmp_path / "home" / "reverie.db", clock.now())
        rv = reverie.open(tmp_path / "home", **options)
    else:
        monkeypatch = request.getfixturevalue("monkeypatch")
        monkeypatch.setenv("REVERIE_HOME", str(tmp_path / "home"))  # a URL keeps the default home
        rv = reverie.open(request.getfixturevalue("pg_url"), **options)
    try:
        yield rv
    finally:
        rv.close()


def stored(rv: reverie.Reverie, scope: Scope | None = None) -> list[str]:
    """The texts of the live entries of ``scope``, sorted."""
    return sorted(e.content for e in rv.memory.browse(limit=1000, scope=scope).entries)


# -- save_many: on_error ---------------------------------------------------------------------------------
def mixed_batch() -> list[dict[str, Any]]:
    return [
        {"content": "Ana lives in Porto", "category": "people"},
        {"content": "   "},
        {"content": "Bruno plays the cello", "tags": ["music"]},
        {"content": "x" * (MAX_CHARS + 1)},
        {"content": "Carla works at the harbour"},
    ]


def test_skip_saves_the_good_items_and_reports_the_bad_ones_with_positions(engine: reverie.Reverie) -> None:
    results = engine.memory.save_many(mixed_batch(), on_error="skip")
    assert [r.outcome for r in results] == ["created", "rejected", "created", "rejected", "created"]
    empty, long = results[1], results[3]
    assert isinstance(empty, SaveRejection) and isinstance(long, SaveRejection)
    assert (empty.position, empty.field, empty.error) == (1, "content", "content is empty")
    assert (long.position, long.field) == (3, "content")
    assert f"{MAX_CHARS + 1:,} characters" in long.error and not long.error.startswith("item")
    saved = [r for r in results if isinstance(r, SaveResult)]
    assert [r.entry.content for r in saved] == [
        "Ana lives in Porto",
        "Bruno plays the cello",
        "Carla works at the harbour",
    ]
    assert saved[1].entry.tags == ("music",)
    assert stored(engine) == ["Ana lives in Porto", "Bruno plays the cello", "Carla works at the harbour"]
    for result in saved:
        assert engine.memory.get(result.id) == result.entry


def test_raise_still_saves_nothing_and_names_the_first_bad_item(engine: reverie.Reverie) -> None:
    with pytest.raises(ValidationError, match=r"^item 1: content is empty$") as exc:
        engine.memory.save_many(mixed_batch())
    assert exc.value.field == "content"
    good, _, _, long, _ = mixed_batch()
    with pytest.raises(ValidationError, match=r"^item 1: content is 20,001 characters"):
        engine.memory.save_many([good, long], on_error="raise")
    assert stored(engine) == []


def test_skip_reports_every_kind_of_bad_item(engine: reverie.Reverie) -> None:
    items: list[Any] = [
        "just a string",
        {"content": "fine", "colour": "red"},
        {"content": "fine", "category": "Not A Path"},
        {"content": "fine", "tier": "eternal"},
        {"content": "fine", "importance": 2},
        {"content": "fine", "metadata": {"subjectTime": "last summer"}},
        {"content": "fine", "observed_at": "2023-05-08T13:56:00"},
        {"content": "kept", "scope": Scope(user_id="u1")},
    ]
    results = engine.memory.save_many(items, on_error="skip")
    rejected = [(r.position, r.field) for r in results if isinstance(r, SaveRejection)]
    assert rejected == [
        (0, "items"),
        (1, "items"),
        (2, "category"),
        (3, "tier"),
        (4, "importance"),
        (5, "metadata.subjectTime"),
        (6, "observed_at"),
    ]
    assert results[7].outcome == "created"
    assert stored(engine) == [] and stored(engine, Scope(user_id="u1")) == ["kept"]


def test_skip_with_nothing_good_saves_nothing(engine: reverie.Reverie) -> None:
    results = engine.memory.save_many([{"content": ""}, {"content": "\t"}], on_error="skip")
    assert results == [SaveRejection(0, "content is empty", "content"), SaveRejection(1, "content is empty", "content")]
    assert all(r.outcome == "rejected" for r in results)
    assert stored(engine) == []


def test_arguments_of_the_batch_itself_raise_even_when_skipping(engine: reverie.Reverie) -> None:
    good = [{"content": "Ana lives in Porto"}]
    calls: list[dict[str, Any]] = [
        {"on_error": "ignore"},
        {"on_error": "skip", "dedup": "yes"},
        {"on_error": "skip", "scope": Scope(agent_id="@reserved")},
        {"on_error": "skip", "observed_at": MAY_8.replace(tzinfo=None)},
    ]
    fields = []
    for kwargs in calls:
        with pytest.raises(ValidationError) as exc:
            engine.memory.save_many(good, **kwargs)
        fields.append(exc.value.field)
    assert fields == ["on_error", "dedup", "agent_id", "observed_at"]
    for not_a_list in ({"content": "Ana lives in Porto"}, "Ana lives in Porto", 5, None):
        with pytest.raises(ValidationError, match="items must be a list") as exc:
            engine.memory.save_many(not_a_list, on_error="skip")  # type: ignore[call-overload]
        assert exc.value.field == "items"
    assert stored(engine) == []


def test_skipped_items_do_not_disturb_deduplication_within_the_batch(engine: reverie.Reverie) -> None:
    fact = "The user prefers green tea in the morning"
    results = engine.memory.save_many([{"content": fact}, {"content": ""}, {"content": fact}], on_error="skip")
    assert [r.outcome for r in results] == ["created", "rejected", "reinforced"]
    first, last = results[0], results[2]
    assert isinstance(first, SaveResult) and isinstance(last, SaveResult)
    assert last.id == first.id and last.entry.reinforcement_count == 2


# -- observed_at -------------------------------------------------------------------------------------------
def test_observed_at_sets_created_at_last_seen_at_and_the_first_version(
    engine: reverie.Reverie, clock: FakeClock
) -> None:
    entry = engine.memory.save("Ana moved to Porto", observed_at=MAY_8).entry
    assert entry.created_at == entry.last_seen_at == MAY_8 and entry.updated_at is None
    assert engine.memory.get(entry.id) == entry
    (first,) = engine.memory.history(entry.id)
    assert first.recorded_at == MAY_8
    later = clock.advance(days=1)
    edited = engine.memory.edit(entry.id, content="Ana moved to Porto in May")
    assert (edited.created_at, edited.updated_at) == (MAY_8, later)  # what happens after is stamped by the clock
    assert [v.recorded_at for v in engine.memory.history(entry.id)] == [MAY_8, later]


def test_observed_at_reads_any_offset_and_an_iso_string(engine: reverie.Reverie) -> None:
    plus_two = MAY_8.astimezone(timezone(timedelta(hours=2)))
    assert engine.memory.save("Fact one", observed_at=plus_two).entry.created_at == MAY_8
    assert engine.memory.save("Fact two", observed_at="2023-05-08T13:56:00Z").entry.created_at == MAY_8
    undated = engine.memory.save("Fact three").entry
    assert undated.created_at == undated.last_seen_at == engine.clock.now()


def test_save_many_takes_observed_at_per_item_and_as_the_batch_default(engine: reverie.Reverie) -> None:
    june = datetime(2023, 6, 1, tzinfo=UTC)
    results = engine.memory.save_many(
        [
            {"content": "Ana moved to Porto"},
            {"content": "Bruno plays the cello", "observed_at": june},
            {"content": "Carla works at the harbour", "observed_at": None},
        ],
        observed_at=MAY_8,
        dedup=False,
    )
    assert [r.entry.created_at for r in results] == [MAY_8, june, engine.clock.now()]
    assert [engine.memory.history(r.id)[0].recorded_at for r in results] == [MAY_8, june, engine.clock.now()]


def test_a_future_observed_at_is_refused_and_saves_nothing(engine: reverie.Reverie, clock: FakeClock) -> None:
    ahead = clock.now() + OBSERVED_AT_TOLERANCE + timedelta(seconds=1)
    with pytest.raises(ValidationError, match="in the future") as exc:
        engine.memory.save("From the future", observed_at=ahead)
    assert exc.value.field == "observed_at"
    with pytest.raises(ValidationError, match="^item 0: observed_at .* in the future") as exc:
        engine.memory.save_many([{"content": "From the future", "observed_at": ahead.isoformat()}])
    assert exc.value.field == "observed_at"
    assert stored(engine) == []
    # Within the tolerance (another machine's clock a little ahead) it counts as now.
    skew = engine.memory.save("Slightly ahead", observed_at=clock.now() + timedelta(minutes=1)).entry
    assert skew.created_at == clock.now()


@pytest.mark.parametrize("naive", [datetime(2023, 5, 8, 13, 56), "2023-05-08T13:56:00", "2023-05-08"])
def test_a_naive_observed_at_is_refused(engine: reverie.Reverie, naive: object) -> None:
    with pytest.raises(ValidationError, match="no timezone") as exc:
        engine.memory.save("When, exactly?", observed_at=naive)  # type: ignore[arg-type]
    assert exc.value.field == "observed_at"
    assert stored(engine) == []


def test_a_dated_restatement_reinforces_and_keeps_created_at(engine: reverie.Reverie) -> None:
    fact = "The user prefers green tea in the morning"
    first = engine.memory.save(fact, observed_at=MAY_8).entry
    june = datetime(2023, 6, 1, tzinfo=UTC)
    again = engine.memory.save(fact.lower(), observed_at=june)
    assert again.outcome == "reinforced" and again.id == first.id
    assert again.entry.reinforcement_count == 2
    assert (again.entry.created_at, again.entry.last_seen_at) == (MAY_8, june)
    # An older observation of the same fact reinforces too, but never moves last_seen_at backwards.
    april = datetime(2023, 4, 1, tzinfo=UTC)
    older = engine.memory.save(fact, observed_at=april)
    assert older.outcome == "reinforced" and older.id == first.id
    assert (older.entry.created_at, older.entry.last_seen_at, older.entry.reinforcement_count) == (MAY_8, june, 3)
    assert engine.memory.get(first.id) == older.entry
    assert len(engine.memory.history(first.id)) == 1  # a reinforcement writes no version


def test_a_dated_save_with_new_specifics_extends_and_keeps_created_at(
    engine: reverie.Reverie, clock: FakeClock
) -> None:
    first = engine.memory.save("Maya bought a bicycle in Lisbon.", observed_at=MAY_8).entry
    june = datetime(2023, 6, 1, tzinfo=UTC)
    more = engine.memory.save("Maya bought a bicycle in Lisbon from Decathlon.", observed_at=june)
    assert more.outcome == "extended" and more.id == first.id
    entry = engine.memory.get(first.id)
    assert "Decathlon" in entry.content
    assert (entry.created_at, entry.last_seen_at, entry.updated_at) == (MAY_8, june, clock.now())
    assert [v.recorded_at for v in engine.memory.history(first.id)] == [MAY_8, clock.now()]


def test_an_undated_entry_reinforced_by_a_dated_save_keeps_its_times(engine: reverie.Reverie) -> None:
    fact = "Bruno plays the cello on Sundays"
    now_entry = engine.memory.save(fact).entry
    again = engine.memory.save(fact, observed_at=MAY_8)
    assert again.outcome == "reinforced" and again.id == now_entry.id
    assert (again.entry.created_at, again.entry.last_seen_at) == (now_entry.created_at, now_entry.last_seen_at)


# -- subject time ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "metadata, field",
    [
        ({"subjectTime": "last summer"}, "metadata.subjectTime"),
        ({"subjectTime": 2019}, "metadata.subjectTime"),
        ({"subjectTime": "2019-02-30"}, "metadata.subjectTime"),
        ({"subjectTimeStart": "spring"}, "metadata.subjectTimeStart"),
        ({"subjectTimeEnd": "2019/06/14"}, "metadata.subjectTimeEnd"),
        ({"subjectTimeStart": "2020", "subjectTimeEnd": "2019-06"}, "metadata.subjectTimeStart"),
    ],
)
def test_a_bad_subject_time_is_refused_with_its_field(
    engine: reverie.Reverie, metadata: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as exc:
        engine.memory.save("Ana lived in Oslo", metadata=metadata)
    assert exc.value.field == field
    with pytest.raises(ValidationError, match="^item 1: ") as exc:
        engine.memory.save_many([{"content": "fine"}, {"content": "Ana lived in Oslo", "metadata": metadata}])
    assert exc.value.field == field
    assert stored(engine) == []


def test_subject_time_is_checked_at_save_and_well_formed_values_are_kept_as_written(
    engine: reverie.Reverie,
) -> None:
    with pytest.raises(ValidationError):
        engine.memory.save("Ana lived in Oslo", metadata={"subjectTime": "the year of the flood"})
    well_formed: list[dict[str, Any]] = [
        {"subjectTime": "2019"},
        {"subjectTime": "2019-06"},
        {"subjectTime": "2019-06-14"},
        {"subjectTime": "2023-05-08T13:56:00+00:00"},  # what the LoCoMo benchmark writes: kept as written
        {"subjectTimeStart": "2010", "subjectTimeEnd": "2015-06"},
        {"subjectTimeStart": "2015"},
    ]
    for metadata in well_formed:
        entry = engine.memory.save("Ana lived in Oslo", metadata=metadata, dedup=False).entry
        assert engine.memory.get(entry.id).metadata == metadata
