"""The console's entry page in a real browser: versions and their diff, version restore, the supersession chain
both ways, archive and restore, pin, the edit form's validation, what a read-only key sees, escaping, and the
merge links a dream leaves."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

import reverie

from ._store import FASTAPI, POSTGRES
from .conftest import Console, shot, sign_in

DEMO = reverie.Scope(agent_id="demo")


def entry_path(entry_id: str, query: str = "") -> str:
    return f"/console/agents/demo/entries/{entry_id}{query}"


def open_entry(page: Page, console: Console, entry_id: str, secret: str | None = None) -> None:
    """Sign in straight onto the entry's page and accept every confirmation it asks for."""
    page.on("dialog", lambda dialog: dialog.accept())
    sign_in(page, console, secret, path=entry_path(entry_id))
    expect(page.locator("#view h1")).to_contain_text(entry_id)


def fresh(console: Console, text: str) -> str:
    """An entry of its own for a test that changes it (the store is shared by the module's tests)."""
    return console.rv.memory.save(text, category="notes", tags=["console"], scope=DEMO, dedup=False).id


def test_the_page_shows_the_entry_and_diffs_any_two_versions(page: Page, console: Console) -> None:
    edited = console.built.edited
    versions = console.rv.memory.history(edited, scope=DEMO)
    assert len(versions) >= 3
    open_entry(page, console, edited)
    view = page.locator("#view")
    expect(page.locator("#entry-content")).to_have_text(console.rv.memory.get(edited, scope=DEMO).content)
    expect(view).to_contain_text("Projected importance")
    assert page.locator("svg.entry-decay polyline.line").get_attribute("points")
    expect(page.locator("#entry-versions tbody tr")).to_have_count(len(versions))
    expect(page.locator(".entry-timeline li").first).to_contain_text("saved")
    shot(page, "console-entry")

    page.get_by_label("From version").select_option("1")
    page.get_by_label("To version").select_option("3")
    page.get_by_role("button", name="Compare").click()
    diff = page.locator("#entry-diff")
    expect(diff).to_contain_text("Version 1 → version 3")
    assert "a=1" in page.url and "b=3" in page.url
    # Version 1 said "Lisbon" where version 3 says "Porto": a removed and an added word.
    expect(diff.locator("del").first).to_be_visible()
    expect(diff.locator("ins", has_text="Porto").first).to_be_visible()
    assert "Lisbon" in " ".join(diff.locator("del").all_text_contents())
    shot(page, "console-entry-diff")


def test_restoring_a_version_makes_its_text_current_as_a_new_version(page: Page, console: Console) -> None:
    edited = console.built.edited
    before = console.rv.memory.history(edited, scope=DEMO)
    open_entry(page, console, edited)
    page.get_by_role("button", name="Restore version 1").click()
    expect(page.locator("#entry-content")).to_have_text(before[0].content)
    expect(page.locator("#entry-versions tbody tr")).to_have_count(len(before) + 1)
    expect(page.locator(".entry-notice")).to_contain_text("Version 1 restored")
    after = console.rv.memory.history(edited, scope=DEMO)
    assert after[-1].change.value == "reverted" and after[-1].content == before[0].content


def test_the_supersession_chain_links_both_ways(page: Page, console: Console) -> None:
    corrected, correction = console.built.corrected, console.built.correction
    assert console.rv.memory.get(corrected, scope=DEMO).superseded_by == correction
    open_entry(page, console, corrected)
    chain = page.locator("#entry-chain")
    expect(chain).to_contain_text("Superseded by")
    expect(chain).to_contain_text("stopped holding")
    expect(page.locator(".entry-badges")).to_contain_text("superseded")
    shot(page, "console-entry-superseded")
    chain.get_by_role("link", name="Priya's editor is not Neovim.").click()
    expect(page.locator("#view h1")).to_contain_text(correction)
    assert page.url.endswith(entry_path(correction))
    expect(page.locator("#entry-chain")).to_contain_text("Replaced")
    page.locator("#entry-chain").get_by_role("link", name="Priya's editor is Neovim.").click()
    expect(page.locator("#view h1")).to_contain_text(corrected)


def test_archive_then_restore(page: Page, console: Console) -> None:
    entry_id = fresh(console, "The console's archive test: the staging box is called kestrel.")
    open_entry(page, console, entry_id)
    page.get_by_role("button", name="Archive").click()
    expect(page.locator(".entry-badges")).to_contain_text("archived")
    expect(page.locator(".entry-notice")).to_contain_text("Archived")
    assert console.rv.memory.get(entry_id, scope=DEMO).archived
    page.get_by_role("button", name="Restore", exact=True).click()
    expect(page.locator(".entry-badges")).to_contain_text("current")
    assert not console.rv.memory.get(entry_id, scope=DEMO).archived


def test_pin_goes_through_the_memory_service(page: Page, console: Console) -> None:
    entry_id = fresh(console, "The console's pin test: the on-call phone is in the blue drawer.")
    open_entry(page, console, entry_id)
    page.get_by_role("button", name="Pin").click()
    expect(page.locator(".entry-badges")).to_contain_text("pinned")
    expect(page.locator(".entry-note")).to_contain_text("Pinned: importance does not decay")
    assert console.rv.memory.get(entry_id, scope=DEMO).pinned
    page.get_by_role("button", name="Unpin").click()
    expect(page.locator(".entry-badges")).not_to_contain_text("pinned")
    assert not console.rv.memory.get(entry_id, scope=DEMO).pinned
    changes = [v.change for v in console.rv.memory.history(entry_id, scope=DEMO)]
    assert changes.count("pinned") == 2  # each change is a version: when it was pinned, and unpinned


def test_the_edit_form_validates_as_the_api_does(page: Page, console: Console) -> None:
    entry_id = fresh(console, "The console's edit test: the build cache lives on disk two.")
    versions = len(console.rv.memory.history(entry_id, scope=DEMO))
    open_entry(page, console, entry_id)
    page.locator(".entry-edit summary").click()
    page.get_by_label("Text", exact=True).fill("")
    with page.expect_response(lambda r: r.url.endswith("/edit")) as answered:
        page.get_by_role("button", name="Save changes").click()
    assert answered.value.status == 422 and answered.value.json()["message"] == "content is empty"
    expect(page.locator("#flash")).to_contain_text("content is empty (422)")
    stored = console.rv.memory.get(entry_id, scope=DEMO)
    assert stored.content.startswith("The console's edit test")
    assert len(console.rv.memory.history(entry_id, scope=DEMO)) == versions
    # A bad importance is refused before the text changes.
    page.get_by_label("Text", exact=True).fill("The build cache lives on disk three.")
    page.get_by_label("Importance (0–1)").fill("7")
    with page.expect_response(lambda r: r.url.endswith("/edit")) as answered:
        page.get_by_role("button", name="Save changes").click()
    assert answered.value.status == 422 and answered.value.json()["field"] == "importance"
    expect(page.locator("#flash")).to_contain_text("importance must be between 0 and 1")
    assert console.rv.memory.get(entry_id, scope=DEMO).content == stored.content
    # A good edit: new text, tags and importance, and a new version.
    page.get_by_label("Importance (0–1)").fill("0.9")
    page.get_by_label("Tags (comma-separated)").fill("console, infra")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#entry-content")).to_have_text("The build cache lives on disk three.")
    expect(page.locator("#entry-importance")).to_have_text("0.900")
    changed = console.rv.memory.get(entry_id, scope=DEMO)
    assert changed.tags == ("console", "infra") and changed.importance == 0.9
    assert len(console.rv.memory.history(entry_id, scope=DEMO)) > versions


def post_as(console: Console, secret: str, action: str) -> tuple[int, str]:
    """POST a console action on an entry with ``secret`` and its own CSRF token (so only access decides)."""
    with httpx.Client(base_url=console.origin) as client:
        auth = {"Authorization": f"Bearer {secret}"}
        token = client.get("/console/ui/whoami", headers=auth).json()["csrf"]
        answer = client.post(f"/console/ui/agents/demo/entries/{action}", headers={**auth, "X-CSRF-Token": token})
        return answer.status_code, answer.text


def test_a_read_only_key_sees_no_buttons_and_is_refused(page: Page, console: Console) -> None:
    edited = console.built.edited
    open_entry(page, console, edited, console.reader)
    expect(page.locator("#entry-versions tbody tr").first).to_be_visible()
    expect(page.locator("#entry-actions")).to_have_count(0)
    expect(page.locator("#view [hx-post]")).to_have_count(0)
    expect(page.locator("#view button")).to_have_text(["Compare"])  # reading versions is reading
    for action in ("archive", "edit", "versions/1/restore"):
        status, body = post_as(console, console.reader, f"{edited}/{action}")
        assert status == 403, (action, body)
    assert not console.rv.memory.get(edited, scope=DEMO).archived
    with httpx.Client(base_url=console.origin) as client:  # an id the scope does not see: the API's 404
        missing = client.get(
            "/console/ui/agents/demo/entries/000000000000", headers={"Authorization": f"Bearer {console.reader}"}
        )
        assert missing.status_code == 404 and missing.json()["error"] == "not_found"


def test_saved_markup_renders_as_text(page: Page, console: Console) -> None:
    hostile = console.built.hostile
    open_entry(page, console, hostile)
    expect(page.locator("#entry-content")).to_contain_text("<script>window.__pwned = 1</script>")
    expect(page.get_by_label("Text", exact=True)).to_have_value(console.rv.memory.get(hostile, scope=DEMO).content)
    page.get_by_role("link", name="a year").click()  # another span of the decay projection
    expect(page.locator("#entry-decay-h")).to_have_text("Projected importance, next 365 days")
    assert page.url.endswith("?days=365")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#view b, #view img, #view script").count() == 0


def test_at_phone_width_nothing_overflows(page: Page, console: Console) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    open_entry(page, console, console.built.edited)
    expect(page.locator("svg.entry-decay")).to_be_visible()
    wide = page.evaluate(
        "[...document.querySelectorAll('body *')]"
        ".filter(e => e.getBoundingClientRect().right > 391 && !e.closest('.table-wrap'))"
        ".map(e => e.tagName + '.' + e.className + '#' + e.id).slice(0, 8)"
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= 390, wide
    shot(page, "console-entry-phone")


def test_a_dream_merge_shows_merged_from_and_merged_into(page: Page, console: Console) -> None:
    console.rv.dream.run(agent_id="demo")  # the scripted model merges the two short Lantern stack entries
    lantern = console.rv.memory.list(category="project-context/lantern", scope=DEMO, limit=100).items
    merged = [e for e in lantern if "mergedFrom" in e.metadata]
    assert [e.content for e in merged] == [f"{FASTAPI} {POSTGRES}"], [e.content for e in lantern]
    sources = merged[0].metadata["mergedFrom"]
    open_entry(page, console, merged[0].id)
    chain = page.locator("#entry-chain")
    expect(chain).to_contain_text("Merged from")
    expect(chain.get_by_role("link")).to_have_count(len(sources))
    chain.get_by_role("link").first.click()
    expect(page.locator("#view h1")).to_contain_text(sources[0])
    expect(page.locator("#entry-chain")).to_contain_text("Merged into")
    expect(page.locator(".entry-badges")).to_contain_text("archived")
    shot(page, "console-entry-merged")
