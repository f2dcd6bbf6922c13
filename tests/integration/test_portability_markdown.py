"""Markdown notes in and out (reverie.portability.markdown), on a real SQLite store with the bundled embedder:
export → edit a note → import gives the entry a new version and no duplicate; basic-memory and Obsidian
folders import as entries with provenance ``import:markdown``; bad notes are reported and skipped."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import reverie
from reverie import Scope
from reverie.clock import FakeClock
from reverie.errors import Conflict, NotFound
from reverie.portability.markdown import export_markdown, import_markdown
from reverie.portability.notes import note_name, read_note, render_note
from reverie.portability.report import ImportReport
from reverie.types import Tier


def export(rv: reverie.Reverie, dest: Path, **options: object) -> dict[str, int]:
    return export_markdown(rv.store, "default", dest, **options).counts  # type: ignore[arg-type]


def load(rv: reverie.Reverie, source: Path, **options: object) -> ImportReport:
    return import_markdown(rv.memory, rv.store, rv.clock, source, agent_id="default", **options)  # type: ignore[arg-type]


def current(rv: reverie.Reverie, agent: str = "default") -> list[reverie.MemoryEntry]:
    return [e for e in rv.store.facts.iter_all(agent) if e.current]


def notes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.md"))}


def front_matter(text: str) -> dict[str, object]:
    loaded = yaml.safe_load(text.split("---\n")[1])
    assert isinstance(loaded, dict)
    return loaded


@pytest.fixture
def saved(rv_local: reverie.Reverie) -> dict[str, str]:
    memory = rv_local.memory
    ids = {
        "tz": memory.save(
            "The user's timezone is Europe/Lisbon",
            category="user-preferences/timezone",
            tags=["time", "travel"],
            source="user",
            importance=0.8,
        ).id,
        "tea": memory.save("Maya drinks green tea without sugar", category="people/maya", tags=["food"]).id,
        "deploy": memory.save(
            "Deploys go out on Tuesdays after the standup",
            category="work/process",
            tier="procedural",
            metadata={"subjectTime": "2026-01", "team": {"name": "infra", "size": 4}},
        ).id,
        "private": memory.save("Ana prefers short answers", category="people/ana", scope=Scope(user_id="ana")).id,
    }
    gone = memory.save("An old fact about the weather", category="misc")
    memory.archive(gone.id)
    return ids


# -- export ----------------------------------------------------------------------------------------------
def test_export_writes_one_readable_note_per_current_entry_under_its_category(
    rv_local: reverie.Reverie, saved: dict[str, str], tmp_path: Path
) -> None:
    dest = tmp_path / "notes"
    counts = export(rv_local, dest)
    assert counts["notes"] == 4
    files = notes(dest)
    assert len(files) == 4 and not any("weather" in text for text in files.values())
    (tz_path,) = [p for p in files if saved["tz"][:8] in p]
    assert tz_path.startswith("user-preferences/timezone/the-user-s-timezone-is-europe-lisbon-")
    tz = front_matter(files[tz_path])
    assert list(tz)[:4] == ["id", "agent", "category", "tags"]
    assert tz["id"] == saved["tz"] and tz["tags"] == ["time", "travel"] and tz["source"] == "user"
    assert tz["importance"] == 0.8 and tz["pinned"] is False and tz["tier"] == "semantic"
    assert files[tz_path].endswith("---\nThe user's timezone is Europe/Lisbon\n")
    (deploy,) = [front_matter(t) for p, t in files.items() if p.startswith("work/process/")]
    assert deploy["subject_time"] == "2026-01" and deploy["metadata"] == {"team": {"name": "infra", "size": 4}}
    (private,) = [front_matter(t) for p, t in files.items() if p.startswith("people/ana/")]
    assert private["user"] == "ana"


def test_a_second_export_of_an_unchanged_store_is_the_same_bytes(
    rv_local: reverie.Reverie, saved: dict[str, str], tmp_path: Path
) -> None:
    dest = tmp_path / "notes"
    export(rv_local, dest)
    before = notes(dest)
    rv_local.clock.advance(days=3)  # type: ignore[attr-defined]
    rv_local.memory.search("timezone")  # reads move volatile counters, which notes do not carry
    counts = export(rv_local, dest, force=True)
    assert notes(dest) == before and counts["written"] == 0 and counts["removed"] == 0
    rv_local.memory.archive(saved["tea"])
    counts = export(rv_local, dest, force=True)
    assert counts["removed"] == 1 and len(notes(dest)) == 3


def test_a_destination_that_is_not_empty_is_refused_without_force(
    rv_local: reverie.Reverie, saved: dict[str, str], tmp_path: Path
) -> None:
    dest = tmp_path / "vault"
    dest.mkdir()
    (dest / "mine.md").write_text("my own note\n", encoding="utf-8")
    with pytest.raises(Conflict, match="not empty"):
        export(rv_local, dest)
    assert notes(dest) == {"mine.md": "my own note\n"}
    export(rv_local, dest, force=True)
    assert (dest / "mine.md").read_text(encoding="utf-8") == "my own note\n"  # force never removes foreign files
    with pytest.raises(NotFound, match="nobody"):
        export_markdown(rv_local.store, "nobody", tmp_path / "empty")
    assert not (tmp_path / "empty").exists()


def test_export_for_one_user_leaves_out_other_users_entries(
    rv_local: reverie.Reverie, saved: dict[str, str], tmp_path: Path
) -> None:
    rv_local.memory.save("Bo likes jazz", category="people/bo", scope=Scope(user_id="bo"))
    export_markdown(rv_local.store, "default", tmp_path / "ana", user_id="ana")
    texts = "".join(notes(tmp_path / "ana").values())
    assert "Ana prefers short answers" in texts and "Bo likes jazz" not in texts and "green tea" in texts


# -- round trip ------------------------------------------------------------------------------------------
def test_edit_a_note_and_import_gives_a_new_version_never_a_duplicate(
    rv_local: reverie.Reverie, saved: dict[str, str], tmp_path: Path
) -> None:
    dest = tmp_path / "notes"
    export(rv_local, dest)
    (tea,) = [p for p in dest.rglob("*.md") if saved["tea"][:8] in p.name]
    tea.write_text(tea.read_text(encoding="utf-8").replace("green tea", "jasmine tea"), encoding="utf-8")
    before = len(current(rv_local))

    report = load(rv_local, dest)

    assert report.skipped == []
    assert report.counts == {"entry": {"updated": 1, "unchanged": 3}}
    assert len(current(rv_local)) == before
    entry = rv_local.memory.get(saved["tea"])
    assert entry.content == "Maya drinks jasmine tea without sugar"
    history = rv_local.memory.history(saved["tea"])
    assert [v.change.value for v in history] == ["created", "edited"]
    assert history[0].content == "Maya drinks green tea without sugar"  # the old text is a version, not lost

    again = load(rv_local, dest)
    assert again.counts == {"entry": {"unchanged": 4}}
    assert len(rv_local.memory.history(saved["tea"])) == 2


def test_changing_tags_and_importance_in_the_front_matter_updates_the_entry(
    rv_local: reverie.Reverie, saved: dict[str, str], tmp_path: Path
) -> None:
    dest = tmp_path / "notes"
    export(rv_local, dest)
    (tz,) = [p for p in dest.rglob("*.md") if saved["tz"][:8] in p.name]
    text = tz.read_text(encoding="utf-8")
    tz.write_text(text.replace("- travel\n", "- travel\n- home\n").replace("importance: 0.8", "importance: 0.3"))
    assert load(rv_local, dest).counts == {"entry": {"updated": 1, "unchanged": 3}}
    entry = rv_local.memory.get(saved["tz"])
    assert entry.tags == ("time", "travel", "home") and entry.importance == pytest.approx(0.3)
    # Once imported from this path, the front matter alone is an edit too.
    tz.write_text(tz.read_text(encoding="utf-8").replace("importance: 0.3", "importance: 0.6"))
    assert load(rv_local, dest).counts == {"entry": {"updated": 1, "unchanged": 3}}
    assert rv_local.memory.get(saved["tz"]).importance == pytest.approx(0.6)


def test_importance_that_moved_in_the_store_is_not_reverted_by_an_untouched_note(
    rv_local: reverie.Reverie, saved: dict[str, str], tmp_path: Path
) -> None:
    dest = tmp_path / "notes"
    export(rv_local, dest)
    rv_local.memory.set_importance(saved["tz"], 0.55)  # as the dream's decay would
    assert load(rv_local, dest).counts == {"entry": {"unchanged": 4}}
    assert rv_local.memory.get(saved["tz"]).importance == pytest.approx(0.55)


def test_a_note_whose_entry_changed_in_the_store_since_the_export_is_not_applied(
    rv_local: reverie.Reverie, saved: dict[str, str], tmp_path: Path
) -> None:
    dest = tmp_path / "notes"
    export(rv_local, dest)
    rv_local.clock.advance(hours=1)  # type: ignore[attr-defined]
    rv_local.memory.edit(saved["tea"], content="Maya drinks black coffee")
    (tea,) = [p for p in dest.rglob("*.md") if saved["tea"][:8] in p.name]
    tea.write_text(tea.read_text(encoding="utf-8").replace("green tea", "oolong"), encoding="utf-8")
    report = load(rv_local, dest)
    assert [(path, "changed in the store" in why) for path, why in report.skipped] == [
        (tea.relative_to(dest).as_posix(), True)
    ]
    assert rv_local.memory.get(saved["tea"]).content == "Maya drinks black coffee"


def test_our_notes_imported_into_another_store_keep_their_fields_and_then_track_edits(
    rv_local: reverie.Reverie, saved: dict[str, str], tmp_path: Path
) -> None:
    dest = tmp_path / "notes"
    export(rv_local, dest)
    with reverie.open(tmp_path / "other", clock=rv_local.clock, embedding={"background": False}) as other:
        first = load(other, dest)
        assert first.counts == {"entry": {"saved": 4}} and first.skipped == []
        by_text = {e.content: e for e in current(other)}
        tz = by_text["The user's timezone is Europe/Lisbon"]
        assert tz.category == "user-preferences/timezone" and tz.tags == ("time", "travel")
        assert tz.source == "import:markdown" and tz.metadata["import"]["source"] == "user"
        assert tz.importance == pytest.approx(0.8)
        assert by_text["Ana prefers short answers"].scope == Scope(user_id="ana")
        assert by_text["Deploys go out on Tuesdays after the standup"].tier.value == "procedural"
        assert load(other, dest).counts == {"entry": {"unchanged": 4}}
        (tea,) = [p for p in dest.rglob("*.md") if saved["tea"][:8] in p.name]
        tea.write_text(tea.read_text(encoding="utf-8").replace("green tea", "mint tea"), encoding="utf-8")
        assert load(other, dest).counts == {"entry": {"updated": 1, "unchanged": 3}}
        assert len(current(other)) == 4


# -- foreign notes ---------------------------------------------------------------------------------------
BASIC_MEMORY_NOTE = """---
title: Coffee Brewing Methods
type: note
permalink: coffee-brewing-methods
tags: [coffee, brewing]
---

# Coffee Brewing Methods

## Observations
- [method] Pour over gives more flavour clarity than a French press
- [technique] Water at 96 °C extracts best #temperature
- [preference] Ethiopian beans suit lighter roasts (personal experience)

## Relations
- relates_to [[Coffee Bean Origins]]
- requires [[Proper Grinding Technique]]
"""

PERSON_NOTE = """---
title: Paul Graham
type: Person
permalink: paul-graham
tags: startups, essays
---

## Observations
- [role] Co-founded Y Combinator #startups
- [writing] Writes long essays about startups and programming
"""


def test_a_basic_memory_folder_imports_one_entry_per_note(rv_local: reverie.Reverie, tmp_path: Path) -> None:
    root = tmp_path / "basic"
    (root / "coffee").mkdir(parents=True)
    (root / "coffee" / "coffee-brewing-methods.md").write_text(BASIC_MEMORY_NOTE, encoding="utf-8")
    (root / "paul-graham.md").write_text(PERSON_NOTE, encoding="utf-8")

    report = load(rv_local, root)

    assert report.counts == {"entry": {"saved": 2}} and report.skipped == []
    by_path = {e.metadata["import"]["path"]: e for e in current(rv_local)}
    coffee = by_path["coffee/coffee-brewing-methods.md"]
    assert coffee.source == "import:markdown" and coffee.category == "coffee"
    assert coffee.content == BASIC_MEMORY_NOTE.split("---\n", 2)[2].strip()
    assert set(coffee.tags) == {"coffee", "brewing", "temperature", "method", "technique", "preference"}
    assert coffee.metadata["note"]["format"] == "basic-memory"
    assert coffee.metadata["note"]["links"] == ["Coffee Bean Origins", "Proper Grinding Technique"]
    assert coffee.metadata["note"]["frontmatter"]["permalink"] == "coffee-brewing-methods"
    person = by_path["paul-graham.md"]
    assert person.category == "person"  # no folder: basic-memory's type
    assert person.content.startswith("# Paul Graham\n\n## Observations")  # titled: the body had no heading
    assert {"startups", "essays", "role", "writing"} <= set(person.tags)

    # Edit an observation and import again: the same entry, a new version.
    note = root / "coffee" / "coffee-brewing-methods.md"
    note.write_text(BASIC_MEMORY_NOTE.replace("96 °C", "94 °C"), encoding="utf-8")
    assert load(rv_local, root).counts == {"entry": {"updated": 1, "unchanged": 1}}
    assert len(current(rv_local)) == 2
    assert "94 °C" in rv_local.memory.get(coffee.id).content
    assert [v.change.value for v in rv_local.memory.history(coffee.id)] == ["created", "edited"]
    assert load(rv_local, root).counts == {"entry": {"unchanged": 2}}


def test_an_obsidian_vault_imports_with_inline_tags_and_wikilinks(rv_local: reverie.Reverie, tmp_path: Path) -> None:
    vault = tmp_path / "Vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / ".obsidian" / "workspace.md").write_text("# not a note\n", encoding="utf-8")
    (vault / "Projects" / "Garden Shed").mkdir(parents=True)
    (vault / "Projects" / "Garden Shed" / "Roof.md").write_text(
        "The shed roof needs new felt before winter #todo #home/garden\n\nSee [[Budget 2026|the budget]] "
        "and [[Suppliers#Timber]].\n\n```\n#not-a-tag in code\n```\n",
        encoding="utf-8",
    )
    (vault / "Inbox.md").write_text(
        "---\naliases: [inbox]\ncreated: 2026-01-01\n---\nCall the plumber about the boiler #errand\n",
        encoding="utf-8",
    )
    (vault / "attachment.png").write_bytes(b"\x89PNG")

    report = load(rv_local, vault, user_id="ana")

    assert report.counts == {"entry": {"saved": 2}} and report.skipped == []
    by_path = {e.metadata["import"]["path"]: e for e in current(rv_local)}
    assert set(by_path) == {"Projects/Garden Shed/Roof.md", "Inbox.md"}
    roof = by_path["Projects/Garden Shed/Roof.md"]
    assert roof.category == "projects/garden-shed" and roof.scope == Scope(user_id="ana")
    assert roof.tags == ("todo", "home/garden")
    assert roof.content.startswith("# Roof\n\nThe shed roof needs new felt")
    assert roof.metadata["note"] == {"format": "obsidian", "links": ["Budget 2026", "Suppliers"]}
    inbox = by_path["Inbox.md"]
    assert inbox.tags == ("errand",) and inbox.metadata["note"]["frontmatter"]["created"] == "2026-01-01"


def test_notes_that_cannot_be_read_are_reported_and_skipped(rv_local: reverie.Reverie, tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    root.mkdir()
    (root / "good.md").write_text("A note that reads fine\n", encoding="utf-8")
    (root / "bad-yaml.md").write_text("---\ntitle: [unclosed\n---\nText\n", encoding="utf-8")
    (root / "unclosed.md").write_text("---\ntitle: x\nText without a closing line\n", encoding="utf-8")
    (root / "list.md").write_text("---\n- a\n- b\n---\nText\n", encoding="utf-8")
    (root / "latin1.md").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    (root / "empty.md").write_text("---\ntitle: Empty\n---\n\n", encoding="utf-8")
    (root / "bad-category.md").write_text(
        "---\nid: abc123abc123\nagent: default\ncategory: Not A Category\n---\nText\n", encoding="utf-8"
    )

    report = load(rv_local, root)

    assert report.counts == {"entry": {"saved": 1}}
    reasons = dict(report.skipped)
    assert set(reasons) == {"bad-yaml.md", "unclosed.md", "list.md", "latin1.md", "empty.md", "bad-category.md"}
    assert "not valid YAML" in reasons["bad-yaml.md"] and "(line 3, column 1)" in reasons["bad-yaml.md"]
    assert "not closed" in reasons["unclosed.md"]
    assert "not a mapping" in reasons["list.md"]
    assert "UTF-8" in reasons["latin1.md"]
    assert "no text" in reasons["empty.md"]
    assert "category" in reasons["bad-category.md"]
    assert [e.content for e in current(rv_local)] == ["# good\n\nA note that reads fine"]


def test_an_import_source_that_is_not_a_folder_is_refused(rv_local: reverie.Reverie, tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        load(rv_local, tmp_path / "missing")


# -- the note format, as a property -----------------------------------------------------------------------
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), min_size=1, max_size=80)


@settings(max_examples=150, deadline=None)
@given(
    content=_TEXT.filter(lambda t: t.strip() != ""),
    tags=st.lists(st.one_of(_TEXT, st.just("#nested/tag")).map(str.strip).filter(bool), max_size=4, unique=True),
    category=st.from_regex(r"[a-z0-9_-]{1,8}(/[a-z0-9_-]{1,8}){0,2}", fullmatch=True),
    metadata=st.dictionaries(
        st.text(min_size=1, max_size=10).filter(lambda k: k not in ("source", "subjectTime")),
        st.one_of(st.integers(), st.booleans(), _TEXT, st.lists(st.integers(), max_size=3)),
        max_size=3,
    ),
)
def test_a_rendered_note_reads_back_as_the_entry(
    content: str, tags: list[str], category: str, metadata: dict[str, object]
) -> None:
    moment = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    entry = reverie.MemoryEntry(
        id="0123456789ab",
        content=content,
        category=category,
        tags=tuple(tags),
        tier=Tier.SEMANTIC,
        scope=Scope(user_id="ana"),
        created_at=moment,
        last_seen_at=moment,
        metadata={**metadata, "source": "user", "subjectTime": "2026-01"},
    )
    note = read_note(render_note(entry), f"{category}/{note_name(entry)}")
    assert note.kind == "reverie" and note.entry_id == entry.id
    assert (note.content, note.category, note.tags) == (entry.content, entry.category, entry.tags)
    assert note.metadata == {**metadata, "subjectTime": "2026-01"}
    assert note.fields["user"] == "ana" and note.fields["source"] == "user"
    assert render_note(entry) == render_note(entry)  # no volatile field: the same entry, the same bytes


def test_the_round_trip_on_postgresql(
    pg_url: str, tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REVERIE_HOME", str(tmp_path / "home"))
    with reverie.open(pg_url, clock=clock, embedding={"background": False}) as rv:
        first = rv.memory.save("Maya drinks green tea without sugar", category="people/maya", tags=["food"])
        rv.memory.save("Deploys go out on Tuesdays", category="work", metadata={"team": {"size": 4, "name": "x"}})
        dest = tmp_path / "notes"
        export(rv, dest)
        (tea,) = [p for p in dest.rglob("*.md") if first.id[:8] in p.name]
        tea.write_text(tea.read_text(encoding="utf-8").replace("green", "white"), encoding="utf-8")
        assert load(rv, dest).counts == {"entry": {"updated": 1, "unchanged": 1}}
        assert load(rv, dest).counts == {"entry": {"unchanged": 2}}
        assert [v.change.value for v in rv.memory.history(first.id)] == ["created", "edited"]
        assert len(current(rv)) == 2
        before = notes(dest)
        export(rv, dest, force=True)
        assert notes(dest) != before and len(notes(dest)) == 2  # the edited note, now as the store has it
        assert "sha256" not in "".join(notes(dest).values())  # the import's bookkeeping stays out of notes
        export(rv, tmp_path / "again")
        assert notes(tmp_path / "again") == notes(dest)  # jsonb reorders keys; the notes do not
