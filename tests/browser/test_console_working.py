"""The console's working-memory and sessions pages in a real browser: working memory with TTLs counting
down from the server's clock, the sessions and their turns, the context preview, and escaping."""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
from playwright.sync_api import Page, expect

from ._store import HOSTILE
from .conftest import Console, shot, sign_in

NOTE = '[data-key="session/standup-1/draft-agenda"]'


def test_the_working_page_shows_the_note_with_a_ttl_counting_down(page: Page, console: Console) -> None:
    patrol = console.rv.working.for_namespace("patrol/inbox", agent_id="demo")
    patrol.save(
        "summary",
        "2 unread: Maya (Lantern review), Ravi (tea order)",
        ttl_minutes=240,
        category="email/inbox",
        tags=["unread"],
    )
    patrol.save("reminder", "gone in about a second", ttl_minutes=0.02)  # the server's clock stays put (FakeClock)
    try:
        sign_in(page, console, path="/console/agents/demo/working")
        expect(page.locator("#view h1")).to_have_text("Working memory")
        row = page.locator(NOTE)
        expect(row).to_contain_text("draft-agenda")
        expect(row).to_contain_text("Lantern review moved to Thursday")
        expect(page.locator("#view h3", has_text="session/standup-1")).to_be_visible()
        expect(page.locator('[data-key="patrol/inbox/summary"]')).to_contain_text("email/inbox")
        expect(page.locator(".wm-empty")).to_contain_text("subagent/")
        ttl = row.locator(".wm-ttl")
        expect(ttl).to_have_text(re.compile(r"^\d+m\d\ds$"))
        first = ttl.text_content()
        page.wait_for_timeout(2100)
        second = ttl.text_content()
        assert first != second, (first, second)
        assert second is not None and second < (first or "")  # same width (e.g. 29m57s < 29m59s): it went down
        # Past its TTL the countdown says so (the server, on its clock, would no longer list it).
        reminder = page.locator('[data-key="patrol/inbox/reminder"]')
        expect(reminder.locator(".wm-ttl")).to_have_text("expired")
        expect(reminder).to_have_class(re.compile("wm-expired"))
        shot(page, "console-working")
    finally:
        patrol.delete("summary")
        patrol.delete("reminder")


def test_the_countdown_follows_the_servers_clock(page: Page, console: Console) -> None:
    view = console.rv.working.for_namespace("patrol/console-test", agent_id="demo")
    view.save("later", "due in two hours and a minute", ttl_minutes=121)
    start = console.clock.now()
    # The server an hour ahead of this browser's wall clock (no write meanwhile: a write would sweep the
    # entries that hour expired, the store's note among them).
    console.clock.advance(hours=1)
    try:
        sign_in(page, console, path="/console/agents/demo/working?namespace=patrol/console-test")
        # Counted from the server's now (data-now), not from the browser's clock (which would say 2h00m).
        expect(page.locator('[data-key="patrol/console-test/later"] .wm-ttl')).to_have_text(re.compile(r"^1h0[01]m$"))
    finally:
        console.clock.set(start)
        view.delete("later")


def test_a_long_value_is_cut_with_a_way_to_see_all(page: Page, console: Console) -> None:
    view = console.rv.working.for_namespace("subagent/console-test", agent_id="demo")
    long_value = "findings " * 100 + "THE END"
    view.save("report-index", long_value, ttl_minutes=60, category="research", tags=["lantern"])
    try:
        sign_in(page, console, path="/console/agents/demo/working")
        row = page.locator('[data-key="subagent/console-test/report-index"]')
        expect(row).to_contain_text("research")
        expect(row).to_contain_text("#lantern")
        expect(row.locator(".wm-value")).not_to_contain_text("THE END")
        row.get_by_role("link", name=re.compile("Show all")).click()
        expect(page.locator("#view h1")).to_contain_text("subagent/console-test/report-index")
        expect(page.locator(".wm-full")).to_contain_text("THE END")
        assert "/console/agents/demo/working/entry?key=" in page.url
    finally:
        view.delete("report-index")


def test_hostile_values_and_turns_stay_text(page: Page, console: Console) -> None:
    notes = console.rv.working.for_namespace("session/standup-1", agent_id="demo")
    notes.save("hostile-note", HOSTILE, ttl_minutes=60)
    console.rv.conversation.create("hostile-1", agent_id="demo")
    console.rv.conversation.add_turn("hostile-1", "user", HOSTILE, agent_id="demo")
    try:
        sign_in(page, console, path="/console/agents/demo/working?namespace=session/standup-1")
        expect(page.locator('[data-key="session/standup-1/hostile-note"]')).to_contain_text(
            "<script>window.__pwned = 1</script>"
        )
        page.evaluate("window.reverieNavigate('/console/agents/demo/sessions/hostile-1')")
        expect(page.locator(".ss-turn")).to_contain_text('<img src=x onerror="window.__pwned = 2">')
        assert page.evaluate("window.__pwned") is None
        assert page.locator("#view b, #view img, #view script").count() == 0
    finally:
        notes.delete("hostile-note")
        console.rv.conversation.delete("hostile-1", agent_id="demo")


def test_the_sessions_list_and_a_session_with_its_turns_in_order(page: Page, console: Console) -> None:
    sign_in(page, console, console.reader, path="/console/agents/demo/sessions")
    row = page.locator('[data-session="standup-1"]')
    expect(row.locator(".ss-turns")).to_have_text("3")
    expect(row).to_contain_text("live")
    shot(page, "console-sessions")
    row.get_by_role("link", name="standup-1").click()
    expect(page.locator("#view h1")).to_have_text("Session standup-1")
    turns = page.locator(".ss-turn")
    expect(turns).to_have_count(3)
    expect(turns.locator(".ss-content")).to_have_text(
        [
            "Maya asked to move the Lantern review to Thursday.",
            "Noted: the Lantern review moves to Thursday.",
            "Also remind me that Priya is off on Wednesday afternoons.",
        ]
    )
    expect(turns.locator(".ss-role")).to_have_text(["user", "assistant", "user"])
    expect(page.locator("#ss-summary")).to_be_visible()
    shot(page, "console-session")


def test_a_long_session_is_windowed_with_its_compaction_summary(page: Page, console: Console) -> None:
    rv = console.rv
    rv.conversation.create("long-1", agent_id="demo")
    for i in range(1, 61):
        rv.conversation.add_turn("long-1", "user" if i % 2 else "assistant", f"turn number {i}", agent_id="demo")
    compacted = rv.conversation.compact("long-1", force=True, agent_id="demo")
    assert compacted.compacted and compacted.summary
    try:
        sign_in(page, console, path="/console/agents/demo/sessions/long-1")
        summary = page.locator("#view .ss-summary")
        expect(summary).to_have_text(compacted.summary)
        expect(page.locator("#view")).to_contain_text(f"Covers turns 1–{compacted.compacted_through}")
        turns = page.locator(".ss-turn")
        expect(turns).to_have_count(50)
        expect(turns.last).to_contain_text("turn number 60")
        page.get_by_role("link", name="← Earlier turns").click()
        expect(turns.first).to_contain_text("turn number 1")
        expect(turns.first).to_contain_text("summarised")
        shot(page, "console-session-compacted")
        expect(page.locator("#ss-turns")).to_contain_text("of 1–60")
        page.get_by_role("link", name="Later turns →").click()
        expect(turns.last).to_contain_text("turn number 60")
    finally:
        rv.conversation.delete("long-1", agent_id="demo")


def test_the_context_preview_shows_sections_with_token_counts(page: Page, console: Console) -> None:
    sign_in(page, console, path="/console/agents/demo/sessions/standup-1")
    page.get_by_role("link", name=re.compile("Preview the context")).click()
    expect(page.locator("#view h1")).to_have_text("Context preview")
    expect(page.get_by_label("Session")).to_have_value("standup-1")
    expect(page.locator(".ctx-notice")).to_contain_text("changes nothing")
    page.get_by_label("Message").fill("when is Priya off?")
    page.get_by_role("button", name="Preview the context").click()
    result = page.locator("#context-result")
    recall = result.locator('details[data-section="recall"]')
    expect(recall).to_contain_text("Priya")
    expect(result.locator('details[data-section="working"]')).to_contain_text("session/standup-1/draft-agenda")
    expect(result.locator('details[data-section="message"]')).to_contain_text("when is Priya off?")
    names = result.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.section)")
    assert names[0] == "recall" and names[-1] == "message" and "turns" in names, names
    for cell in result.locator(".ctx-tokens").all_text_contents():
        assert int(cell) > 0
    shot(page, "console-context")


def test_the_preview_changes_nothing(console: Console) -> None:
    rv, auth = console.rv, {"Authorization": f"Bearer {console.admin}"}
    rv.conversation.create("preview-1", agent_id="demo")
    with httpx.Client(base_url=console.origin, headers=auth) as client:
        form = client.get("/console/ui/agents/demo/context", params={"session_id": "standup-1", "message": "Priya"})
        assert form.status_code == 200 and "ctx-form" in form.text and "ctx-result" not in form.text
        query = {"session_id": "preview-1", "message": "when is Priya off?"}
        first = client.get("/console/ui/agents/demo/context/preview", params=query)
        assert first.status_code == 200 and 'data-section="recall"' in first.text and "Priya" in first.text
        # A preview records nothing: the same memories are offered again, by a second preview and by a real turn.
        again = client.get("/console/ui/agents/demo/context/preview", params=query)
        assert 'data-section="recall"' in again.text
        assert rv.store.injected.injected("demo", "preview-1") == frozenset()
        built = rv.context.build("preview-1", "when is Priya off?", agent_id="demo")
        assert built.injected and all(entry_id in first.text for entry_id in built.injected)
        unknown = client.get("/console/ui/agents/demo/context/preview", params={**query, "session_id": "nope"})
        assert unknown.status_code == 404


def test_the_working_page_at_phone_width(page: Page, console: Console) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, console, path="/console/agents/demo/working")
    expect(page.locator(NOTE)).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "console-working-phone")
    for path in ("/console/agents/demo/sessions", "/console/agents/demo/sessions/standup-1"):
        page.evaluate(f"window.reverieNavigate('{path}')")
        expect(page.locator("#view h1")).to_contain_text("standup-1" if path.endswith("1") else "Sessions")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, path
    shot(page, "console-session-phone")


def test_an_expired_clock_jump_is_not_shown(console: Console) -> None:
    """The server never lists an expired entry: past its TTL on the server's clock, the note is gone."""
    auth = {"Authorization": f"Bearer {console.admin}"}
    start = console.clock.now()
    try:
        with httpx.Client(base_url=console.origin, headers=auth) as client:
            assert "draft-agenda" in client.get("/console/ui/agents/demo/working").text
            console.clock.advance(timedelta(minutes=31))
            assert "draft-agenda" not in client.get("/console/ui/agents/demo/working").text
    finally:
        console.clock.set(start)
