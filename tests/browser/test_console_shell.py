"""The console's shell in a real browser: sign-in, what a key sees, escaping, CSP and CSRF."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from .conftest import Console, shot, sign_in


def test_sign_in_lands_on_the_agents_overview(page: Page, console: Console) -> None:
    page.goto(console.origin + "/console")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    shot(page, "console-sign-in")
    sign_in(page, console)
    expect(page.locator("#view h1")).to_contain_text("demo")
    assert page.url.endswith("/console/agents/demo")
    # The key lives in session storage, never in the address or a cookie.
    assert console.admin not in page.url
    assert page.context.cookies() == []
    assert page.evaluate("sessionStorage.getItem('reverie.key')") == console.admin
    shot(page, "console-overview")


def test_a_wrong_key_is_refused_with_a_message(page: Page, console: Console) -> None:
    page.goto(console.origin + "/console")
    page.get_by_label("API key").fill("rv_not-a-key")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#sign-in-error")).to_contain_text("not valid")
    expect(page.locator("#nav")).to_be_hidden()


def test_an_agent_key_sees_only_its_own_agent(page: Page, console: Console) -> None:
    sign_in(page, console, console.agent)
    options = page.locator("#agent-pick option").all_text_contents()
    assert options == ["demo"]
    for link in page.locator("#nav a[data-admin]").all():  # Dream and Usage: admin keys only
        expect(link).to_be_hidden()
    page.evaluate("window.reverieNavigate('/console/agents/other')")
    expect(page.locator("#flash")).to_contain_text("403")


def test_saved_markup_renders_as_text(page: Page, console: Console) -> None:
    sign_in(page, console)
    expect(page.locator("#view")).to_contain_text("<script>window.__pwned = 1</script>")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#view b").count() == 0  # the saved <b> is text, not markup


def test_the_key_survives_a_reload_but_not_a_new_tab(page: Page, console: Console) -> None:
    sign_in(page, console)
    page.reload()
    expect(page.locator("#view h1")).to_contain_text("demo")
    other = page.context.new_page()
    other.goto(console.origin + "/console")
    expect(other.get_by_role("heading", name="Sign in")).to_be_visible()


def test_fragments_need_a_key_and_state_changes_need_the_csrf_token(console: Console) -> None:
    with httpx.Client(base_url=console.origin) as client:
        assert client.get("/console/ui/agents/demo").status_code == 401
        shell = client.get("/console/agents/demo")
        assert shell.status_code == 200 and console.built.hostile not in shell.text  # the shell holds no data
        csp = shell.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        auth = {"Authorization": f"Bearer {console.admin}"}
        token = client.get("/console/ui/whoami", headers=auth).json()["csrf"]
        # A POST to any console route without the token, or from another origin, is refused before it runs.
        assert client.post("/console/ui/agents/demo", headers=auth).status_code == 403
        cross = {**auth, "X-CSRF-Token": token, "Origin": "https://evil.example"}
        assert client.post("/console/ui/agents/demo", headers=cross).status_code == 403
        # With the token it reaches routing (no POST route there: 405), proving the check is what refused above.
        assert client.post("/console/ui/agents/demo", headers={**auth, "X-CSRF-Token": token}).status_code == 405


def test_the_api_docs_page_works_offline_from_bundled_assets(page: Page, console: Console) -> None:
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(console.origin + "/docs")
    expect(page.locator(".opblock").first).to_be_visible(timeout=15_000)
    expect(page.get_by_text("/api/memory/agents/{agent_id}/search").first).to_be_visible()
    shot(page, "console-api-docs", full_page=False)
    outside = [url for url in requested if not url.startswith((console.origin, "data:"))]
    assert outside == []  # nothing from a CDN: the page works on an offline machine


def test_console_pages_stay_usable_at_phone_width(page: Page, console: Console) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, console)
    expect(page.locator("#nav")).to_be_visible()
    # Nothing is wider than the screen: no sideways scrolling of the whole page.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "console-overview-phone")


def test_keyboard_reaches_sign_in_and_the_navigation(page: Page, console: Console) -> None:
    page.goto(console.origin + "/console")
    expect(page.get_by_label("API key")).to_be_focused()  # the sign-in form takes the focus
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    for _ in range(2):  # the skip link, the brand, then the key's field
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "api-key"
    page.keyboard.type(console.admin)
    page.keyboard.press("Enter")
    expect(page.locator("#view h1")).to_be_visible()
    page.locator("#nav a", has_text="Overview").focus()
    assert page.evaluate("document.activeElement.textContent") == "Overview"
