"""Fixtures of the console's browser tests: a real ``reverie serve`` app on 127.0.0.1 over a store built by
``_store.build`` (real SQLite, the real local embedder, a loopback scripted LLM for the dream), and Debian's
headless Chromium driven by Playwright (never a downloaded browser).

Chromium is required, not optional: the README's test command installs it (``apt-get install chromium``).
Without ``/usr/bin/chromium`` these tests fail with a message saying so, so CI can never skip them silently.

Every test may take screenshots with ``shot(page, name)``: they land in ``build/console-screenshots/`` (or
``$REVERIE_SCREENSHOTS``), to be looked at; docs/console.md shows copies of them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

import reverie
from reverie.api import ApiServer, create_app
from reverie.clock import FakeClock, SystemClock
from reverie.testing.openai_server import ScriptedOpenAIServer

from ._store import Built, build, scripted_dream

CHROMIUM = os.environ.get("REVERIE_CHROMIUM", "/usr/bin/chromium")
# A loaded 2-core CI machine runs two workers and a browser each: give every expectation 15 s, not 5.
expect.set_options(timeout=15_000)
SHOTS = Path(
    os.environ.get("REVERIE_SCREENSHOTS", Path(__file__).resolve().parents[2] / "build" / "console-screenshots")
)
# As the machine's notes advise: no background networking (this machine's network is closed), no sandbox (root).
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@dataclass
class Console:
    """A served console: its origin, the engine behind it, its clock, the keys and the built ids."""

    origin: str
    rv: reverie.Reverie
    clock: FakeClock
    admin: str  # an admin key's secret
    agent: str  # agent ``demo``'s read+write key
    reader: str  # agent ``demo``'s read-only key
    built: Built
    llm: ScriptedOpenAIServer


@dataclass
class _Template:
    """The built store, closed, to be copied for each test module; with its keys' secrets and ids."""

    home: Path
    built: Built
    admin: str
    agent: str
    reader: str


@pytest.fixture(scope="session")
def console_template(tmp_path_factory: pytest.TempPathFactory) -> _Template:
    """``_store.build`` once per test process (embedding the sample is the slow part); modules get copies."""
    home = tmp_path_factory.mktemp("console-template") / "home"
    settings = {"embedding": {"background": False}, "memory": {"expansion_enabled": False}}
    with reverie.open(home, clock=FakeClock(SystemClock().now()), graph={"extraction": "rules"}, **settings) as rv:
        built = build(rv)
        admin = rv.keys.create("console-admin", agent_id=None, scopes=["admin"])[1]
        agent = rv.keys.create("demo-agent", agent_id="demo", scopes=["memory_read", "memory_write"], users=["*"])
        reader = rv.keys.create("demo-reader", agent_id="demo", scopes=["memory_read"], users=["*"])
    return _Template(home, built, admin, agent[1], reader[1])


@pytest.fixture(scope="module")
def console(console_template: _Template, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """A copy of the built store served on 127.0.0.1 for one test module (modules change it freely)."""
    home = tmp_path_factory.mktemp("console") / "home"
    shutil.copytree(console_template.home, home)
    clock = FakeClock(SystemClock().now())
    with ScriptedOpenAIServer() as llm:
        llm.answer_chat_with(scripted_dream)
        rv = reverie.open(
            home,
            clock=clock,
            embedding={"background": False},
            llm={"provider": "openai", "endpoint": llm.url, "model": "scripted", "max_retries": 0},
            memory={"expansion_enabled": False},
            graph={"extraction": "rules"},
        )
        try:
            t = console_template
            with ApiServer(create_app(rv)) as server:
                yield Console(server.origin, rv, clock, t.admin, t.agent, t.reader, t.built, llm)
        finally:
            rv.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium for one test module. Not for the session: while Playwright's sync API runs, its event loop is
    the thread's running loop, and every later test of the worker that calls ``asyncio.run`` (the MCP
    clients, LangGraph's async store) would fail."""
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"the console's browser tests need Debian's Chromium at {CHROMIUM}: "
            "apt-get install chromium (the README's test command does)"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context (its own session storage) at laptop width; fails the test on a page error or a
    CSP violation reported on the console."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    opened = context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    opened.on(
        "console",
        lambda message: (
            problems.append(f"console {message.type}: {message.text}")
            if message.type == "error" and "Content Security Policy" in message.text
            else None
        ),
    )
    yield opened
    context.close()
    assert not problems, problems


def sign_in(page: Page, console: Console, secret: str | None = None, path: str = "/console") -> None:
    """Open ``path`` and sign in with ``secret`` (the admin key by default); waits for the first page."""
    page.goto(console.origin + path)
    page.get_by_label("API key").fill(secret or console.admin)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#view h1")).to_be_visible()


def shot(page: Page, name: str, *, full_page: bool = True) -> Path:
    """Save a screenshot of ``page`` as ``<SHOTS>/<name>.png`` and return its path."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    target = SHOTS / f"{name}.png"
    page.screenshot(path=str(target), full_page=full_page)
    return target


def copy_shots(names: list[str], docs: Path) -> None:
    """Copy screenshots into ``docs`` (used by hand to refresh docs/console.md's images)."""
    for name in names:
        shutil.copy(SHOTS / f"{name}.png", docs / f"{name}.png")
