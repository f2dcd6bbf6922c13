"""The console's dream, audit and usage pages in a real browser: a dream triggered from the page, its run with
the merge's before/after text, abort while a dream runs, the audit's plots, what an agent key may not do, and
the usage page's plots, table and CSV download.

The dream's model is the loopback scripted server of the fixture, answering through ``consolidator`` below: it
merges the two short Lantern entries the consolidation prompt shows, and can be held (``HOLD``) so a dream is
seen running and aborted."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from ._store import FASTAPI, POSTGRES, scripted_dream
from .conftest import Console, shot, sign_in

HOLD = threading.Event()  # set: every model call waits for RELEASE (a dream that stays running)
RELEASE = threading.Event()
HELD = threading.Event()  # a call is being held


def consolidator(body: dict[str, Any]) -> str:
    """The store's scripted model (it merges the two short Lantern entries), which can be held."""
    if HOLD.is_set():
        HELD.set()
        RELEASE.wait(20)
    return scripted_dream(body)


@pytest.fixture(scope="module", autouse=True)
def scripted(console: Console) -> None:
    """This module's model, and an audit a day before the first dream (so the trend has a start)."""
    console.llm.answer_chat_with(consolidator)
    console.rv.audit.run()
    console.clock.advance(days=1)


def _csrf(console: Console, secret: str) -> str:
    with httpx.Client(base_url=console.origin) as client:
        token: str = client.get("/console/ui/whoami", headers={"Authorization": f"Bearer {secret}"}).json()["csrf"]
        return token


def test_a_dream_triggered_from_the_page_shows_its_run_and_merge(page: Page, console: Console) -> None:
    sign_in(page, console, path="/console/agents/demo/dream")
    expect(page.locator("#view h1")).to_have_text("Dream of demo")
    expect(page.get_by_text("No dream has run for this agent yet.")).to_be_visible()
    page.get_by_role("button", name="Dream now").click()
    expect(page.locator(".notice")).to_contain_text("A dream was started.")
    run = page.locator("#dream-runs li.run").first
    expect(run.locator(".run-head .badge")).to_have_text("completed", timeout=15_000)  # the page polls every 2 s
    expect(page.get_by_role("button", name="Dream now")).to_be_visible()
    expect(page.locator("#dream-live")).not_to_have_attribute("hx-trigger", "every 2s")  # polling stopped
    run.locator("summary").click()
    expect(run.get_by_role("row", name=re.compile("^consolidation"))).to_contain_text("merged 1")
    shot(page, "console-dream")

    run.locator(".run-head a").click()
    expect(page.locator("#view h1")).to_contain_text("Dream run")
    merge = page.locator("article.merge")
    expect(merge).to_have_count(1)
    expect(merge.locator(".before-text")).to_have_count(2)
    assert sorted(merge.locator(".before-text").all_inner_texts()) == sorted([FASTAPI, POSTGRES])
    expect(merge.locator(".after-text")).to_have_text(f"{FASTAPI} {POSTGRES}")
    # Each entry links to its page in the console, sources and merged entry alike.
    assert merge.locator("a[href^='/console/agents/demo/entries/']").count() == 3
    expect(page.get_by_role("row", name=re.compile("^consolidation"))).to_contain_text("merged 1")
    shot(page, "console-dream-run")


def test_the_audit_plots_its_trend(page: Page, console: Console) -> None:
    sign_in(page, console, path="/console/agents/demo/dream")
    page.get_by_role("link", name="The memory audit's trends").click()
    expect(page.locator("#view h1")).to_contain_text("Memory audit of demo")
    page.get_by_role("button", name="Audit now").click()  # after the dream: the merge shows in the trend
    expect(page.locator("#view")).to_contain_text("2 records")
    charts = page.locator(".chart")
    expect(charts).to_have_count(7)
    expect(page.locator(".chart canvas")).to_have_count(7)  # each drawn by uPlot
    merges = page.get_by_role("figure", name="Merges", exact=True)
    merges.locator("summary").click()
    expect(merges.locator("tbody tr").last).to_contain_text("2")  # two sources archived by the merge
    destroyed = page.locator(".chart[aria-label^='Destroyed outside the purge']")
    spec = json.loads(destroyed.get_attribute("data-chart") or "{}")
    assert spec["series"][0]["values"] == [0, 0]  # the flat zero line
    tokens = json.loads(page.locator(".chart[aria-label^='LLM tokens per day']").get_attribute("data-chart") or "{}")
    assert sum(v or 0 for v in tokens["series"][0]["values"]) > 0
    shot(page, "console-dream-audit")


def test_a_running_dream_can_be_aborted(page: Page, console: Console) -> None:
    # A new turn gives the dream something to ask the model about; the held model keeps the dream running.
    turn = "Priya moves to the platform team."
    console.rv.conversation.add_turn(console.built.session, "user", turn, agent_id="demo")
    console.clock.advance(minutes=10)  # this run starts after the first: the history lists it first
    HOLD.set()
    RELEASE.clear()
    HELD.clear()
    try:
        page.on("dialog", lambda dialog: dialog.accept())  # hx-confirm
        sign_in(page, console, path="/console/agents/demo/dream")
        page.get_by_role("button", name="Dream now").click()
        assert HELD.wait(10), "the dream never called the model"
        abort = page.get_by_role("button", name="Abort the dream")
        expect(abort).to_be_visible(timeout=10_000)
        expect(page.locator("#dream-state")).to_contain_text("running")
        abort.click()
        expect(page.locator(".notice")).to_contain_text("asked to stop")
        shot(page, "console-dream-aborting")
    finally:
        HOLD.clear()
        RELEASE.set()
    expect(page.locator("#dream-runs li.run").first.locator(".run-head .badge")).to_have_text("aborted", timeout=15_000)
    # Aborting again, with nothing running, is answered plainly.
    with httpx.Client(base_url=console.origin) as client:
        headers = {"Authorization": f"Bearer {console.admin}", "X-CSRF-Token": _csrf(console, console.admin)}
        again = client.post("/console/ui/agents/demo/dream/abort", headers=headers)
        assert again.status_code == 200 and "No dream of this agent is running." in again.text


def test_an_agent_key_neither_sees_nor_controls_the_dream(page: Page, console: Console) -> None:
    # As the API: the dream's history, status and control and the audit need an admin key.
    sign_in(page, console, console.agent)
    expect(page.locator("#nav a", has_text="Dream")).to_be_hidden()
    expect(page.locator("#nav a", has_text="Usage")).to_be_hidden()
    page.evaluate("window.reverieNavigate('/console/agents/demo/dream')")
    expect(page.locator("#flash")).to_contain_text("admin key")
    with httpx.Client(base_url=console.origin) as client:
        headers = {"Authorization": f"Bearer {console.agent}", "X-CSRF-Token": _csrf(console, console.agent)}
        for action in ("dream/trigger", "dream/abort", "dream/audit/run"):
            assert client.post(f"/console/ui/agents/demo/{action}", headers=headers).status_code == 403, action
        for view in ("dream", "dream/audit", "dream/runs/0123456789ab"):
            assert client.get(f"/console/ui/agents/demo/{view}", headers=headers).status_code == 403, view
        assert client.get("/console/ui/usage", headers=headers).status_code == 403
        admin = {"Authorization": f"Bearer {console.admin}"}
        assert client.get("/console/ui/agents/demo/dream/runs/0123456789ab", headers=admin).status_code == 404


def test_usage_shows_tokens_per_agent_and_downloads_the_csv(page: Page, console: Console) -> None:
    sign_in(page, console)
    page.locator("#nav a", has_text="Usage").click()
    expect(page.locator("#view h1")).to_have_text("Usage and cost")
    demo = page.locator("tr.usage-agent", has_text="demo")
    expect(demo).to_be_visible()
    expect(page.locator("tr.usage-model").first).to_contain_text("openai / scripted")
    prompt_tokens = int(demo.locator("td").nth(3).inner_text())
    assert prompt_tokens == sum(s.prompt_tokens for s in console.rv.usage(agent_id="demo"))
    assert prompt_tokens > 0
    expect(page.locator(".chart canvas")).to_have_count(2)
    with page.expect_download() as info:
        page.get_by_role("link", name="Export CSV (every call)").click()
    download = info.value
    assert download.suggested_filename.endswith(".csv")
    with open(download.path(), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    assert lines[0] == "at,agent_id,provider,model,purpose,prompt_tokens,completion_tokens,cost,ok"
    assert any(",demo,openai,scripted," in line for line in lines[1:])
    assert console.admin not in page.url
    shot(page, "console-usage")
    # The period is a form: its days go in the address; a period too long is refused with a message.
    page.get_by_label("From (day)").fill("2000-01-01")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#flash")).to_contain_text("422")
    assert "from=2000-01-01" in page.url


def test_the_dream_page_fits_a_phone(page: Page, console: Console) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, console, path="/console/agents/demo/dream")
    expect(page.locator("#dream-runs li.run").first).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "console-dream-phone")
    page.get_by_role("link", name="The memory audit's trends").click()
    expect(page.locator(".chart canvas")).to_have_count(7)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
