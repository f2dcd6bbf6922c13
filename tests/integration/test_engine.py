"""The engine's public surface: input validation at every entry point (a rejected call raises and changes
nothing), settings layering through ``reverie.open``, and maintenance through the engine."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import reverie
from reverie import ConfigError, NotFound, Scope, StorageError, ValidationError
from reverie.clock import FakeClock

Call = Callable[[reverie.Reverie, str], Any]


def snapshot(rv: reverie.Reverie) -> dict[str, Any]:
    """Everything a rejected call must leave alone."""
    stats = rv.stats()
    entries = list(rv.store.facts.iter_all())
    return {
        "counts": (stats.live, stats.archived, stats.by_tier, stats.by_category),
        "entries": entries,
        "history": {e.id: rv.store.versions.history(e.id, e.scope) for e in entries},
        "browse": rv.memory.browse(),
    }


# -- validation: every rejected call raises and changes nothing ------------------------------------------
def _save(**kwargs: Any) -> Call:
    kwargs.setdefault("content", "valid content")
    return lambda rv, _id: rv.memory.save(**kwargs)


BAD_SCOPES = [
    Scope(agent_id=""),
    Scope(agent_id=" padded"),
    Scope(agent_id="tab\there"),
    Scope(agent_id="x" * 201),
    Scope(user_id=""),
    Scope(user_id="   "),
    Scope(session_id="nul\x00"),
    "default",
]
BAD_CATEGORIES = ["../x", "/x", "x/", "X", "a b", "a//b", "a/../b", "", ".", 5, ["a"], "é", "a" * 201]
BAD_IMPORTANCE = [-0.01, 1.01, math.nan, math.inf, True, False, "0.5", None]

REJECTED: list[Any] = [
    *(pytest.param(_save(content=c), id=f"content-{i}") for i, c in enumerate(["", "   ", "\n\t ", None, 42, b"x"])),
    pytest.param(_save(content="x" * 20_001), id="content-over-default-max"),
    *(pytest.param(_save(category=c), id=f"category-{c!r}"[:40]) for c in BAD_CATEGORIES),
    *(pytest.param(_save(importance=v), id=f"importance-{v!r}") for v in BAD_IMPORTANCE if v is not None),
    *(pytest.param(_save(tags=t), id=f"tags-{t!r}") for t in ([1], ["ok", None], "travel", 5, [b"x"], ["x" * 101])),
    pytest.param(_save(tags=["line\nbreak"]), id="tags-control-char"),
    pytest.param(_save(tier="Episodic"), id="tier-unknown"),
    pytest.param(_save(pinned="yes"), id="pinned-not-bool"),
    pytest.param(_save(source=5), id="source-not-str"),
    pytest.param(_save(metadata=["a"]), id="metadata-not-mapping"),
    pytest.param(_save(metadata={1: "a"}), id="metadata-key-not-str"),
    pytest.param(_save(metadata={"x": math.nan}), id="metadata-nan"),
    pytest.param(_save(metadata={"x": object()}), id="metadata-not-json"),
    *(pytest.param(_save(scope=s), id=f"save-scope-{i}") for i, s in enumerate(BAD_SCOPES)),
    *(
        pytest.param(lambda rv, i, s=s: rv.memory.get(i, scope=s), id=f"get-scope-{n}")
        for n, s in enumerate(BAD_SCOPES)
    ),
    *(
        pytest.param(lambda rv, i, s=s: rv.memory.search("x", scope=s), id=f"search-scope-{n}")
        for n, s in enumerate(BAD_SCOPES)
    ),
    pytest.param(lambda rv, i: rv.memory.edit(i, content=""), id="edit-empty"),
    pytest.param(lambda rv, i: rv.memory.edit(i, content="x" * 20_001), id="edit-too-long"),
    *(
        pytest.param(lambda rv, i, c=c: rv.memory.edit(i, category=c), id=f"edit-category-{c!r}"[:40])
        for c in BAD_CATEGORIES[:7]
    ),
    pytest.param(lambda rv, i: rv.memory.edit(i, tags="travel"), id="edit-tags-bare-string"),
    pytest.param(lambda rv, i: rv.memory.edit(i, tags=[3]), id="edit-tags-not-strings"),
    *(
        pytest.param(lambda rv, i, v=v: rv.memory.set_importance(i, v), id=f"set-importance-{v!r}")
        for v in BAD_IMPORTANCE
    ),
    *(pytest.param(lambda rv, _i, v=v: rv.memory.get(v), id=f"get-id-{v!r}") for v in ("", " x", None, 7, "a\nb")),
    pytest.param(lambda rv, _i: rv.memory.search(None), id="search-query-none"),
    pytest.param(lambda rv, _i: rv.memory.search(b"lisbon"), id="search-query-bytes"),
    *(
        pytest.param(lambda rv, _i, n=n: rv.memory.search("x", limit=n), id=f"search-limit-{n!r}")
        for n in (0, -1, 1001, True, 2.0)
    ),
    pytest.param(lambda rv, _i: rv.memory.search("x", category="X"), id="search-category"),
    pytest.param(lambda rv, _i: rv.memory.search("x", include_archived="yes"), id="search-include-archived"),
    pytest.param(lambda rv, _i: rv.memory.browse(limit=0), id="browse-limit"),
    pytest.param(lambda rv, _i: rv.memory.browse(category="../x"), id="browse-category"),
    *(
        pytest.param(lambda rv, i, v=v: rv.memory.restore_version(i, v), id=f"version-{v!r}")
        for v in (0, -1, True, "1", 1.0)
    ),
    pytest.param(lambda rv, _i: rv.purge(agent_id=""), id="purge-agent-empty"),
]


@pytest.mark.parametrize("call", REJECTED)
def test_invalid_input_raises_validation_error_and_changes_nothing(
    rv: reverie.Reverie, lisbon: str, call: Call
) -> None:
    before = snapshot(rv)
    with pytest.raises(ValidationError):
        call(rv, lisbon)
    assert snapshot(rv) == before


UNKNOWN: list[Any] = [
    pytest.param(lambda rv, _i: rv.memory.get("nope00000000"), id="get"),
    pytest.param(lambda rv, _i: rv.memory.archive("nope00000000"), id="archive"),
    pytest.param(lambda rv, _i: rv.memory.restore("nope00000000"), id="restore"),
    pytest.param(lambda rv, _i: rv.memory.edit("nope00000000", content="x"), id="edit"),
    pytest.param(lambda rv, _i: rv.memory.set_importance("nope00000000", 0.5), id="set-importance"),
    pytest.param(lambda rv, _i: rv.memory.history("nope00000000"), id="history"),
    pytest.param(lambda rv, _i: rv.memory.restore_version("nope00000000", 1), id="restore-version-id"),
    pytest.param(lambda rv, i: rv.memory.restore_version(i, 99), id="restore-version-number"),
    pytest.param(lambda rv, i: rv.memory.edit(i, content="x", scope=Scope("other")), id="edit-other-agent"),
    pytest.param(lambda rv, i: rv.memory.archive(i, scope=Scope("other", user_id="u9")), id="archive-other-agent"),
    pytest.param(lambda rv, i: rv.memory.set_importance(i, 0.1, scope=Scope("other")), id="importance-other-agent"),
    pytest.param(lambda rv, i: rv.memory.history(i, scope=Scope("other")), id="history-other-agent"),
]


@pytest.mark.parametrize("call", UNKNOWN)
def test_unknown_ids_raise_not_found_and_change_nothing(rv: reverie.Reverie, lisbon: str, call: Call) -> None:
    before = snapshot(rv)
    with pytest.raises(NotFound):
        call(rv, lisbon)
    assert snapshot(rv) == before


def test_a_configured_content_maximum_is_enforced(tmp_path: Path, clock: FakeClock) -> None:
    # No background embedder: a snapshot must not race the worker stamping the first entry's model.
    with reverie.open(
        tmp_path / "small",
        clock=clock,
        memory={"max_content_chars": 50},
        embedding={"provider": "hash", "background": False},
        graph={"extraction": "off"},
    ) as rv:
        assert rv.memory.save("x" * 50).entry.content == "x" * 50
        eid = rv.memory.save("short").id
        before = snapshot(rv)
        with pytest.raises(ValidationError):
            rv.memory.save("x" * 51)
        with pytest.raises(ValidationError):
            rv.memory.edit(eid, content="y" * 51)
        assert snapshot(rv) == before
        assert rv.memory.edit(eid, content="y" * 50).content == "y" * 50


# -- settings layering -----------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No REVERIE_* variable of the caller's shell may leak into these tests."""
    for name in list(os.environ):
        if name.upper().startswith("REVERIE_"):
            monkeypatch.delenv(name)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def write_toml(home: Path, text: str) -> None:
    (home / "reverie.toml").write_text(text, encoding="utf-8")


def max_chars(home: Path, clock: FakeClock, **overrides: Any) -> int:
    """The content maximum the engine enforces, read from its behaviour as well as from its settings."""
    with reverie.open(home, clock=clock, **overrides) as rv:
        limit = rv.settings.memory.max_content_chars
        assert rv.memory.config.max_content_chars == limit
        rv.memory.save("x" * limit)
        with pytest.raises(ValidationError):
            rv.memory.save("x" * (limit + 1))
        return limit


def test_defaults_apply_without_a_file_env_or_overrides(home: Path, clock: FakeClock) -> None:
    assert max_chars(home, clock) == 20_000


def test_the_toml_file_in_the_data_dir_is_read(home: Path, clock: FakeClock) -> None:
    write_toml(home, "[memory]\nmax_content_chars = 40\n")
    assert max_chars(home, clock) == 40


def test_env_beats_toml(home: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(home, "[memory]\nmax_content_chars = 40\n")
    monkeypatch.setenv("REVERIE_MEMORY__MAX_CONTENT_CHARS", "30")
    assert max_chars(home, clock) == 30


def test_env_beats_defaults(home: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_MEMORY__MAX_CONTENT_CHARS", "35")
    assert max_chars(home, clock) == 35


def test_overrides_beat_env_and_toml(home: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(home, "[memory]\nmax_content_chars = 40\n")
    monkeypatch.setenv("REVERIE_MEMORY__MAX_CONTENT_CHARS", "30")
    assert max_chars(home, clock, memory={"max_content_chars": 20}) == 20


def test_layers_merge_key_by_key(home: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(home, "[memory]\nmax_content_chars = 40\nsearch_limit = 7\narchive_retention_days = 5\n")
    monkeypatch.setenv("REVERIE_MEMORY__MAX_CONTENT_CHARS", "30")
    monkeypatch.setenv("REVERIE_MEMORY__SEARCH_LIMIT", "6")
    with reverie.open(home, clock=clock, memory={"search_limit": 4, "browse_limit": 3}) as rv:
        m = rv.settings.memory
        assert (m.max_content_chars, m.search_limit, m.browse_limit, m.archive_retention_days) == (30, 4, 3, 5)
        assert m.default_category == "general"  # untouched by every layer
        assert rv.memory.config.search_limit == 4
        for n in range(6):
            rv.memory.save(f"zebra {n}")
        assert len(rv.memory.search("zebra")) == 4
        assert len(rv.memory.browse().entries) == 3


def test_a_home_key_in_the_toml_file_cannot_move_the_store(home: Path, clock: FakeClock, tmp_path: Path) -> None:
    write_toml(home, f"home = {str(tmp_path / 'elsewhere')!r}\n[memory]\nmax_content_chars = 33\n")
    with reverie.open(home, clock=clock) as rv:
        assert rv.settings.home == home.resolve()
        assert rv.settings.memory.max_content_chars == 33
    assert (home / "reverie.db").is_file()
    assert not (tmp_path / "elsewhere").exists()


BAD_TOML = [
    pytest.param("[memory\nmax_content_chars = 40\n", id="malformed-table"),
    pytest.param("[memory]\nmax_content_chars = \n", id="missing-value"),
    pytest.param("[memory]\nmax_content_chars = 40\nmax_content_chars = 41\n", id="duplicate-key"),
    pytest.param("[memory]\nbogus = 1\n", id="unknown-key"),
    pytest.param("[bogus]\nx = 1\n", id="unknown-section"),
    pytest.param("[memory]\nmax_content_chars = 0\n", id="out-of-range"),
    pytest.param("[memory]\nmax_content_chars = 'many'\n", id="wrong-type"),
    pytest.param("[store]\nsynchronous = 'SOMETIMES'\n", id="bad-choice"),
]


@pytest.mark.parametrize("text", BAD_TOML)
def test_a_bad_toml_file_raises_config_error(home: Path, clock: FakeClock, text: str) -> None:
    write_toml(home, text)
    with pytest.raises(ConfigError):
        reverie.open(home, clock=clock)
    assert not (home / "reverie.db").exists()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REVERIE_MEMORY__MAX_CONTENT_CHARS", "abc"),
        ("REVERIE_MEMORY__MAX_CONTENT_CHARS", "0"),
        ("REVERIE_MEMORY__BOGUS", "1"),
    ],
)
def test_a_bad_environment_variable_raises_config_error(
    home: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError):
        reverie.open(home, clock=clock)


@pytest.mark.parametrize(
    "overrides",
    [{"memory": {"bogus": 1}}, {"bogus": {"x": 1}}, {"memory": {"max_content_chars": -5}}, {"memory": "nope"}],
    ids=["unknown-key", "unknown-section", "out-of-range", "not-a-table"],
)
def test_bad_overrides_raise_config_error(home: Path, clock: FakeClock, overrides: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        reverie.open(home, clock=clock, **overrides)
    assert not (home / "reverie.db").exists()


# -- the engine's lifecycle and maintenance --------------------------------------------------------------
def test_entries_survive_closing_and_reopening(home: Path, clock: FakeClock) -> None:
    with reverie.open(home, clock=clock) as rv:
        eid = rv.memory.save("Persisted across processes", tags=["durable"]).id
        rv.memory.edit(eid, content="Persisted across restarts")
    with reverie.open(home, clock=clock) as rv:
        assert rv.memory.get(eid).content == "Persisted across restarts"
        assert [h.entry.id for h in rv.memory.search("restarts")] == [eid]
        assert len(rv.memory.history(eid)) == 2


def test_backup_and_restore_through_the_engine(rv: reverie.Reverie, tmp_path: Path) -> None:
    kept = rv.memory.save("Saved before the backup").id
    backup = rv.backup(tmp_path / "out" / "memory.bak")
    assert backup.is_file()
    later = rv.memory.save("Saved after the backup").id
    rv.restore_backup(backup)
    assert rv.memory.get(kept).content == "Saved before the backup"
    with pytest.raises(NotFound):
        rv.memory.get(later)
    assert rv.check().ok


def test_a_failed_restore_through_the_engine_changes_nothing(rv: reverie.Reverie, tmp_path: Path) -> None:
    rv.memory.save("Still here")
    before = snapshot(rv)
    junk = tmp_path / "junk.bak"
    junk.write_text("not a backup")
    with pytest.raises(StorageError):
        rv.restore_backup(junk)
    with pytest.raises(StorageError):
        rv.restore_backup(tmp_path / "missing.bak")
    assert snapshot(rv) == before


def test_stats_check_and_vacuum_through_the_engine(rv: reverie.Reverie) -> None:
    ids = [rv.memory.save(f"entry about topic{n}", category="topics").id for n in range(5)]
    rv.memory.archive(ids[0])
    stats = rv.stats()
    assert (stats.live, stats.archived, stats.by_category) == (4, 1, {"topics": 4})
    rv.vacuum()
    for n, eid in enumerate(ids[1:], start=1):
        assert [h.entry.id for h in rv.memory.search(f"topic{n}")] == [eid]
    assert rv.check().ok


def test_nul_in_content_is_refused_and_changes_nothing(rv: reverie.Reverie) -> None:
    with pytest.raises(reverie.ValidationError, match="NUL"):
        rv.memory.save("before\x00after")
    assert rv.stats().live == 0


def test_a_misspelt_environment_section_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_MEMROY__MAX_CONTENT_CHARS", "5")
    with pytest.raises(reverie.ConfigError, match="MEMROY"):
        reverie.open(tmp_path / "home")


def test_a_huge_query_is_truncated_not_refused(rv: reverie.Reverie) -> None:
    saved = rv.memory.save("the lighthouse keeper's log")
    hits = rv.memory.search("lighthouse " + "x" * 100_000)
    assert [h.entry.id for h in hits] == [saved.id]
