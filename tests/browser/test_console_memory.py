"""The console's memory browser in a real browser: the taxonomy tree with counts, the list's orders (the new
"reinforced" and "cold" among them), its filters and cursor paging, and the search's evidence (scores, what
matched, the floor, the query's terms highlighted, escaped)."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Page, expect

import reverie
from reverie.api.console.pages_memory import ORDER_LABELS, category_tree, highlight
from reverie.core.filters import ORDERS
from reverie.types import CategoryCount, MemoryEntry

from .conftest import Console, shot, sign_in

DEMO = reverie.Scope(agent_id="demo")
MEMORY = "/console/agents/demo/memory"


def snap(page: Page, name: str) -> None:
    """``shot``, then drop the empty ``style`` attributes Playwright's screenshot leaves on inputs (it hides
    the caret): htmx copies an old element's attributes onto its same-id successor while settling, and a
    copied ``style`` is an inline style the console's CSP blocks, which the ``page`` fixture counts as an error."""
    shot(page, name)
    page.evaluate("document.querySelectorAll('#view [style]').forEach(e => e.removeAttribute('style'))")


def rows(page: Page) -> list[str]:
    return page.locator("table.mem-list tbody tr").evaluate_all("rs => rs.map(r => r.dataset.entry)")


def listed(console: Console, **options: object) -> list[MemoryEntry]:
    return list(console.rv.memory.list(scope=DEMO, limit=25, **options).items)  # type: ignore[arg-type]


def test_the_tree_the_orders_the_filters_and_the_cursor(page: Page, console: Console) -> None:
    # One fact said again: reinforced, so "reinforced" has a clear first entry.
    again = console.rv.memory.save(
        "Lantern's nightly import job pulls tide tables from the NOAA CO-OPS API at 02:30 UTC.",
        category="project-context/lantern",
        scope=DEMO,
    )
    assert again.outcome == "reinforced"
    sign_in(page, console, path=MEMORY)
    expect(page.locator("#view h1")).to_contain_text("Memory of demo")
    # The tree: people under lantern under project-context, each count its subtree's.
    taxonomy = console.rv.memory.browse(limit=1, scope=DEMO).taxonomy
    lantern_total = sum(c.count for c in taxonomy if c.category.startswith("project-context/lantern"))
    lantern = page.locator(".mem-tree li:has(> a[title='project-context/lantern'])")
    expect(lantern.locator("> .count")).to_have_text(re.compile(rf"^{lantern_total}\b"))
    expect(lantern.locator(".mem-tree a[title='project-context/lantern/people']")).to_be_visible()
    assert rows(page) == [e.id for e in listed(console)]
    snap(page, "console-memory-list")

    page.get_by_label("Order (list)").select_option("reinforced")
    expect(page).to_have_url(re.compile(r"order=reinforced"))
    expect(page.locator("#mem-list-title")).to_have_text("Most reinforced")
    assert rows(page) == [e.id for e in listed(console, order="reinforced")]
    assert rows(page)[0] == again.entry.id
    page.get_by_label("Order (list)").select_option("cold")
    expect(page.locator("#mem-list-title")).to_contain_text("Cold first")
    assert rows(page) == [e.id for e in listed(console, order="cold")]

    # A category from the tree, then a tag, then pinned, then the archive.
    lantern.locator("> a").click()
    expect(page.locator(".mem-chip")).to_contain_text("project-context/lantern")
    assert set(rows(page)) == {e.id for e in listed(console, order="cold", category="project-context/lantern")}
    page.get_by_role("link", name="Reset").click()
    # The form carries the category as a hidden field until the reset page is swapped in: filling the tag
    # before that (a busy machine) applied tag and category together.
    expect(page.locator(".mem-chip")).to_have_count(0)
    page.get_by_label("Tag").fill("stack")
    page.get_by_role("button", name="Apply").click()
    expect(page).to_have_url(re.compile(r"tag=stack"))
    stack = [e.id for e in listed(console, filter=reverie.EntryFilter(tags_any=("stack",)))]
    expect(page.locator("table.mem-list tbody tr")).to_have_count(len(stack))
    page.get_by_label("Tag").fill("")
    page.get_by_label("Pinned").select_option("true")
    page.get_by_role("button", name="Apply").click()
    expect(page).to_have_url(re.compile(r"pinned=true"))
    # htmx pushes the URL before it swaps the list in: wait for the pinned row itself, not only for one row
    # (the tag's list before it may hold one row too).
    expect(page.locator(f"table.mem-list tbody tr[data-entry='{console.built.pinned}']")).to_have_count(1)
    expect(page.locator("table.mem-list tbody tr")).to_have_count(1)
    assert rows(page) == [console.built.pinned]
    expect(page.locator("table.mem-list .badge.pinned")).to_be_visible()
    page.get_by_label("Pinned").select_option("")
    page.get_by_label("Tier").select_option("semantic")
    page.get_by_label("only archived").check()
    page.get_by_role("button", name="Apply").click()
    expect(page).to_have_url(re.compile(r"tier=semantic&archived=true"))
    expect(page.locator("[data-mem=states]")).to_contain_text("Only archived entries")
    archived = page.locator(f"tr[data-entry='{console.built.archived}']")
    expect(archived.locator(".badge.archived")).to_be_visible()
    only_archived = reverie.EntryFilter(tier=reverie.Tier.SEMANTIC, archived=True)
    assert rows(page) == [e.id for e in listed(console, filter=only_archived)]
    expect(page.locator("table.mem-list tbody tr:not(:has(.badge.archived))")).to_have_count(0)

    # Only superseded: the corrected belief (contradicted, not archived), and nothing current or merely archived.
    page.get_by_label("only archived").uncheck()
    page.get_by_label("Tier").select_option("")
    page.get_by_label("only superseded").check()
    page.get_by_role("button", name="Apply").click()
    expect(page).to_have_url(re.compile(r"superseded=true"))
    expect(page.locator("[data-mem=states]")).to_contain_text("Only superseded")
    corrected = page.locator(f"tr[data-entry='{console.built.corrected}']")
    expect(corrected.locator(".badge.superseded")).to_be_visible()
    superseded = [e.id for e in listed(console, filter=reverie.EntryFilter(superseded=True))]
    assert rows(page) == superseded
    assert console.built.correction not in superseded and console.built.archived not in superseded
    expect(page.locator("table.mem-list tbody tr:not(:has(.badge.superseded))")).to_have_count(0)
    snap(page, "console-memory-superseded")


def test_the_next_page_link_carries_the_cursor_to_the_end(page: Page, console: Console) -> None:
    sign_in(page, console, path=MEMORY + "?order=reinforced&limit=4")
    expected = [e.id for e in console.rv.memory.list(scope=DEMO, order="reinforced", limit=1000).items]
    seen: list[str] = []
    while True:
        expect(page.locator("table.mem-list tbody tr").first).to_be_visible()
        seen.extend(rows(page))
        following = page.get_by_role("link", name="Next page")
        if following.count() == 0:
            break
        following.click()
        expect(page).to_have_url(re.compile(r"cursor="))
        expect(page.locator("table.mem-list tbody tr").first).not_to_have_attribute("data-entry", seen[-4])
    assert seen == expected and len(seen) > 8
    expect(page.get_by_text("Last page")).to_be_visible()


def test_search_shows_why_each_hit_ranked(page: Page, console: Console) -> None:
    sign_in(page, console, path=MEMORY)
    page.get_by_label("Search this agent's memory").fill("which database does Lantern use")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#mem-results-title")).to_contain_text("which database does Lantern use")
    expect(page.locator("[data-mem=mode]")).to_have_text("hybrid")
    expect(page.locator("[data-mem=floor]")).to_have_text(re.compile(r"^0\.\d{3}$"))
    expect(page.locator("[data-mem=terms]")).to_contain_text("database")
    first = page.locator(".mem-hit").first
    expect(first.locator(".mem-text")).to_contain_text("PostgreSQL")
    expect(first.locator(".mem-text mark").first).to_have_text("Lantern")
    expect(first.locator(".mem-matched")).to_contain_text("lantern")
    expect(first.locator("[data-mem=matched-by]")).to_have_text(re.compile(r"^(bm25\+vector|bm25|vector)$"))
    expect(first.locator("[data-mem=bm25]")).to_have_text(re.compile(r"^\d+\.\d{3}$"))
    expect(first.locator("[data-mem=similarity]")).to_contain_text("floor")
    score = float(first.locator(".mem-score").inner_text())
    parts = [float(first.locator(f"[data-mem={name}]").inner_text()) for name in ("own", "context", "time")]
    assert abs(score - sum(parts)) < 0.003
    snap(page, "console-memory-search")

    page.get_by_label("Search this agent's memory").fill("quantum chromodynamics of emperor penguins")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.get_by_role("heading", name="Nothing relevant")).to_be_visible()
    expect(page.locator(".mem-hit")).to_have_count(0)


def test_a_hostile_hit_is_highlighted_as_text(page: Page, console: Console) -> None:
    sign_in(page, console, path=MEMORY + "?q=" + "Maya+bold+note")
    hit = page.locator(f".mem-hit[data-entry='{console.built.hostile}']")
    expect(hit.locator(".mem-text")).to_contain_text("<script>window.__pwned = 1</script>")
    expect(hit.locator(".mem-text mark")).to_have_text(["Maya", "bold", "note"])
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#view b, #view script, #view img").count() == 0


def test_a_reader_browses_without_write_buttons_and_a_phone_fits(page: Page, console: Console) -> None:
    sign_in(page, console, console.reader, path=MEMORY)
    expect(page.locator("table.mem-list tbody tr").first).to_be_visible()
    assert page.locator("#view [hx-post], #view [hx-delete], #view [hx-patch], #view [hx-put]").count() == 0
    assert page.locator("#view button").all_inner_texts() == ["Search", "Apply"]
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(console.origin + MEMORY + "?q=Lantern+deploys")
    expect(page.locator(".mem-hit").first).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "console-memory-phone")


def test_a_bad_filter_is_the_apis_422_and_another_agent_is_refused(console: Console) -> None:
    with httpx.Client(base_url=console.origin, headers={"Authorization": f"Bearer {console.reader}"}) as client:
        assert client.get("/console/ui/agents/demo/memory", params={"tier": "weird"}).status_code == 422
        assert client.get("/console/ui/agents/demo/memory", params={"order": "sideways"}).status_code == 422
        assert client.get("/console/ui/agents/other/memory").status_code == 403


def test_every_order_has_a_label_and_the_tree_sums_its_children() -> None:
    assert list(ORDER_LABELS) == list(ORDERS)
    tree = category_tree(
        [CategoryCount("a", 2), CategoryCount("a/b/c", 3), CategoryCount("a/d", 1), CategoryCount("z", 4)]
    )
    a = tree[0]
    assert (a.path, a.own, a.total) == ("a", 2, 6)
    assert [(n.path, n.own, n.total) for n in a.children] == [("a/b", 0, 3), ("a/d", 1, 1)]
    assert a.children[0].children[0].path == "a/b/c"
    marked = highlight("<b>Running</b> runs & ran", frozenset({"run"}))
    assert str(marked) == "&lt;b&gt;<mark>Running</mark>&lt;/b&gt; <mark>runs</mark> &amp; ran"
