"""The console's knowledge-graph page in a real browser: the entity list, a search drawn on the canvas, an
entity's panel (relations, mentioning entries), expanding a node, a path, unknown names, untrusted names."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Page, expect

import reverie

from .conftest import Console, shot, sign_in

GRAPH = "/console/agents/demo/graph"


def _drawn(page: Page) -> int:
    canvas = page.locator("#graph-canvas")
    expect(canvas).to_have_attribute("data-drawn", "done")
    return int(canvas.get_attribute("data-nodes") or 0)


def _click_node(page: Page, name: str) -> None:
    """A real mouse click on the node labelled ``name`` (where Cytoscape drew it)."""
    point = page.evaluate(
        """name => {
            const canvas = document.getElementById('graph-canvas');
            const node = canvas.cy.nodes().filter(n => n.data('label') === name)[0];
            const box = canvas.getBoundingClientRect(), at = node.renderedPosition();
            return {x: box.left + at.x, y: box.top + at.y};
        }""",
        name,
    )
    page.mouse.click(point["x"], point["y"])


def test_the_list_a_search_and_the_drawing(page: Page, console: Console) -> None:
    sign_in(page, console, path=GRAPH)
    expect(page.locator("#view h1")).to_have_text("Knowledge graph")
    expect(page.locator("table.graph-entities")).to_contain_text("Lantern")
    expect(page.locator("#graph-canvas")).to_have_count(0)  # nothing chosen: the list, no drawing
    page.get_by_label("Entity", exact=True).fill("maya")
    page.get_by_role("button", name="Show", exact=True).click()
    expect(page).to_have_url(re.compile(r"/console/agents/demo/graph\?entity=maya"))
    assert _drawn(page) >= 5  # Maya and her neighbours: Lantern, Joss, Kotlin, API
    panel = page.locator("#graph-panel")
    expect(panel.locator("h2")).to_contain_text("Maya")
    expect(panel.locator(".graph-relations")).to_contain_text("Lantern")
    expect(page.locator("#graph-status")).to_contain_text("entities")
    shot(page, "console-graph")
    # Following an entry that mentions her opens that entry's page.
    first = panel.locator(".graph-mentions a").first
    href = first.get_attribute("href") or ""
    assert re.fullmatch(r"/console/agents/demo/entries/[0-9a-f]{12}", href), href
    first.click()
    expect(page).to_have_url(re.compile(re.escape(href) + "$"))


def test_a_click_on_a_node_opens_its_panel_and_expand_adds_its_neighbours(page: Page, console: Console) -> None:
    sign_in(page, console, path=GRAPH + "?entity=Maya")
    before = _drawn(page)
    _click_node(page, "Lantern")
    panel = page.locator("#graph-panel")
    expect(panel.locator("h2")).to_contain_text("Lantern")
    expect(panel.locator(".graph-relations")).to_contain_text("PostgreSQL")
    panel.get_by_role("button", name="Expand in the drawing").click()
    canvas = page.locator("#graph-canvas")
    expect(canvas).not_to_have_attribute("data-nodes", str(before))
    labels = page.evaluate("document.getElementById('graph-canvas').cy.nodes().map(n => n.data('label'))")
    assert {"PostgreSQL", "FastAPI"} <= set(labels)
    # The panel is keyboard reachable too: its link centres the page on the entity.
    panel.get_by_role("link", name="Centre on it").click()
    expect(page).to_have_url(re.compile(r"entity=thing%3ALantern"))
    expect(page.locator("#graph-panel h2")).to_contain_text("Lantern")


def test_a_path_is_highlighted_and_listed(page: Page, console: Console) -> None:
    sign_in(page, console, path=GRAPH)
    page.get_by_label("From", exact=True).fill("Python")
    page.get_by_label("To", exact=True).fill("Maya")
    page.get_by_role("button", name="Show path").click()
    steps = page.locator(".graph-steps li")
    expect(steps).to_have_count(3)
    expect(page.locator("#graph-path-result")).to_contain_text("Python to Maya in 3 steps")
    _drawn(page)
    on_path = page.evaluate("document.getElementById('graph-canvas').cy.elements('.path').length")
    assert on_path == 7  # four entities and the three relations between them
    shot(page, "console-graph-path")
    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_label("Entity", exact=True).fill("Lantern")
    page.get_by_role("button", name="Show", exact=True).click()
    expect(page.locator("#graph-panel h2")).to_contain_text("Lantern")
    _drawn(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "console-graph-phone")


def test_unknown_names_say_so(page: Page, console: Console) -> None:
    sign_in(page, console, path=GRAPH + "?entity=Zebedee")
    expect(page.locator("#view h2").first).to_contain_text("No entity named “Zebedee”")
    expect(page.locator("#graph-none")).to_be_visible()
    page.get_by_label("Entity", exact=True).fill("Lant")
    page.get_by_role("button", name="Show", exact=True).click()
    expect(page.locator(".graph-matches")).to_contain_text("Lantern")  # a part of a name lists the matches
    page.get_by_label("From", exact=True).fill("Maya")
    page.get_by_label("To", exact=True).fill("Nobody")
    page.get_by_role("button", name="Show path").click()
    expect(page.locator("#graph-path-result")).to_contain_text("no entity 'thing:Nobody'")
    page.get_by_label("From", exact=True).fill("Maya")
    page.get_by_label("To", exact=True).fill("UTC")
    page.get_by_role("button", name="Show path").click()
    expect(page.locator("#graph-path-result")).to_contain_text("No chain of valid relations")


def test_untrusted_names_stay_text(page: Page, console: Console) -> None:
    hostile = '<img src=x onerror="window.__pwned = 3"> Quokka'
    entry = console.rv.memory.save("The quokka note.", category="notes", scope=reverie.Scope(agent_id="demo"))
    console.rv.graph.add_relation("demo", f"thing:{hostile}", "knows", "thing:Wombat", sources=[entry.id])
    sign_in(page, console, path=GRAPH + "?entity=Wombat")
    _drawn(page)
    _click_node(page, hostile)
    panel = page.locator("#graph-panel")
    expect(panel.locator("h2")).to_contain_text(hostile)
    expect(panel.locator(".graph-mentions")).to_contain_text("The quokka note.")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#view img").count() == 0


def test_the_json_and_the_panel_validate_as_the_api_does(console: Console) -> None:
    auth = {"Authorization": f"Bearer {console.admin}"}
    url = "/console/ui/agents/demo/graph/data"
    with httpx.Client(base_url=console.origin, headers=auth) as client:
        data = client.get(url, params={"entity": "Maya", "depth": 1}).json()
        assert {n["label"] for n in data["nodes"]} >= {"Maya", "Lantern"}
        assert all({"source", "target", "label"} <= set(e) for e in data["edges"])
        assert client.get(url, params={"entity": "Zebedee"}).status_code == 404
        assert client.get(url).status_code == 422
        assert client.get(url, params={"entity": "Maya", "depth": 0}).status_code == 422
        assert client.get("/console/ui/agents/demo/graph/entity", params={"name": "Zebedee"}).status_code == 404
        # Another agent's graph: its key sees nothing of demo's, and demo's entities are not in other's graph.
        assert client.get("/console/ui/agents/other/graph/data", params={"entity": "Maya"}).status_code == 404
        reader = {"Authorization": f"Bearer {console.reader}"}
        assert client.get("/console/ui/agents/demo/graph", headers=reader).status_code == 200
        assert client.get("/console/ui/agents/other/graph", headers=reader).status_code == 403
    assert httpx.get(console.origin + "/console/ui/agents/demo/graph/data?entity=Maya").status_code == 401


def test_the_list_and_a_panels_relations_come_a_page_at_a_time(page: Page, console: Console) -> None:
    # Last in the module: it adds 41 entities, so the list needs a second page.
    for n in range(40):
        console.rv.graph.add_relation("demo", "thing:Hub", "links", f"thing:Spoke {n:02d}")
    sign_in(page, console, path=GRAPH)
    rows = page.locator("table.graph-entities tbody tr")
    expect(rows).to_have_count(50)
    first = set(rows.locator("td:first-child").all_text_contents())
    page.get_by_role("link", name="Next page").click()
    expect(page.get_by_role("link", name="First page")).to_be_visible()
    second = set(rows.locator("td:first-child").all_text_contents())
    assert second and not first & second
    page.goto(console.origin + GRAPH + "?entity=Hub")
    panel = page.locator("#graph-panel")
    expect(panel.locator(".graph-relations li")).to_have_count(25)
    panel.get_by_role("button", name="More relations").click()
    expect(panel.locator(".graph-relations li")).to_have_count(15)
    expect(panel.get_by_role("button", name="First relations")).to_be_visible()
