"""core.compaction: keep-tokens, cold-entry compaction and the entropy filter (seed 003)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reverie.core.compaction import KEPT_PREFIX, compact, is_low_information, keep_tokens, word_entropy

# --- keep_tokens ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("I edited /etc/nginx/nginx.conf yesterday.", "/etc/nginx/nginx.conf"),
        ("The file is in C:\\Users\\x\\Documents\\notes.txt, I think", "C:\\Users\\x\\Documents\\notes.txt"),
        ("Profile at C:\\Users\\x", "C:\\Users\\x"),
        ("share \\\\fileserver\\team\\plan.docx here", "\\\\fileserver\\team\\plan.docx"),
        ("see ~/.config/reverie/config.toml", "~/.config/reverie/config.toml"),
        ("run ./scripts/deploy.sh now", "./scripts/deploy.sh"),
        ("open src/reverie/core/aging.py", "src/reverie/core/aging.py"),
        ("in docs/README.md.", "docs/README.md"),
        ("Docs: https://docs.python.org/3/library/re.html.", "https://docs.python.org/3/library/re.html"),
        ("(see https://en.wikipedia.org/wiki/Foo_(bar))", "https://en.wikipedia.org/wiki/Foo_(bar)"),
        ("[link](https://example.com/a?b=1&c=2)", "https://example.com/a?b=1&c=2"),
        ("Run `pip install -e .` first", "`pip install -e .`"),
        ("Chrome says ERR_CONNECTION_REFUSED again", "ERR_CONNECTION_REFUSED"),
        ("flake8 reports E1234 on line 3", "E1234"),
        ("tsc: TS2345 mismatch", "TS2345"),
        ("Oracle raised ORA-00942: table does not exist", "ORA-00942"),
        ("patched CVE-2021-44228 today", "CVE-2021-44228"),
        ("the API returned HTTP 404 for that id", "HTTP 404"),
        ("got HTTP/1.1 503 back", "HTTP/1.1 503"),
        ("with status code 500", "status code 500"),
        ("open() failed with ENOENT", "ENOENT"),
        ("connect: ECONNREFUSED on port 5432", "ECONNREFUSED"),
        ("the worker got SIGKILL", "SIGKILL"),
        ("rename snake_case_name please", "snake_case_name"),
        ("set MAX_RETRIES to 5", "MAX_RETRIES"),
        ("call camelCaseName()", "camelCaseName"),
        ("it raised ValueError", "ValueError"),
        ("an HTTPServer instance", "HTTPServer"),
        ("use os.path.join here", "os.path.join"),
        ("edit config.yaml and retry", "config.yaml"),
        ("define __init__ first", "__init__"),
        ("entry 550e8400-e29b-41d4-a716-446655440000 moved", "550e8400-e29b-41d4-a716-446655440000"),
        ("fixed in commit 3f2a9c1e", "3f2a9c1e"),
        ("address 0x7ffe1234", "0x7ffe1234"),
    ],
)
def test_keeps_worthwhile_tokens(text: str, token: str) -> None:
    assert token in keep_tokens(text)


@pytest.mark.parametrize(
    "text",
    [
        "Thanks, that works. See you tomorrow!",
        "Use and/or between TCP/IP and I/O, e.g. here, i.e. there.",
        "We met on 2019/06/14 at 3/4 past.",
        "The APIs and URLs and IDs were fine.",
        "JSON HTTP API without anything else",
        "12345678 is a number, deadbeef is a word",
        "a ``` fence ``` and `` empty",
    ],
)
def test_plain_prose_keeps_nothing(text: str) -> None:
    assert keep_tokens(text) == []


def test_first_seen_order_without_duplicates() -> None:
    text = "See /var/log/syslog then ENOENT, then /var/log/syslog again and ENOENT and my_var."
    assert keep_tokens(text) == ["/var/log/syslog", "ENOENT", "my_var"]


def test_inside_code_spans_and_urls_is_not_scanned_again() -> None:
    text = "Run `cat /etc/hosts | grep my_host` and read https://example.com/docs/get_started.html"
    assert keep_tokens(text) == ["`cat /etc/hosts | grep my_host`", "https://example.com/docs/get_started.html"]


def test_fenced_blocks_are_scanned_as_text() -> None:
    text = "```python\nimport os.path\nos.makedirs(some_dir)\n```"
    assert keep_tokens(text) == ["os.path", "os.makedirs", "some_dir"]


# --- compact --------------------------------------------------------------------------------------

SESSION = """Debugged the nginx reverse proxy for the staging API.

The upstream kept failing with ERR_CONNECTION_REFUSED. We looked at /etc/nginx/nginx.conf and found the
proxy_pass pointing to the wrong port; the docs at https://nginx.org/en/docs/http/ngx_http_proxy_module.html
helped. After `systemctl reload nginx` the API still returned HTTP 502 until gunicorn was restarted.

We chatted for a while about the weather and lunch plans, which did not matter at all, and then spent a long
time going over how the deploy used to work before the migration, none of which changed anything today.
"""


def test_compact_keeps_first_paragraph_and_tokens() -> None:
    result = compact(SESSION)
    assert result == (
        "Debugged the nginx reverse proxy for the staging API.\n\n"
        "Kept: ERR_CONNECTION_REFUSED /etc/nginx/nginx.conf proxy_pass "
        "https://nginx.org/en/docs/http/ngx_http_proxy_module.html `systemctl reload nginx` HTTP 502"
    )
    assert "weather" not in result


def test_compact_puts_the_abstract_first_and_skips_what_it_holds() -> None:
    abstract = "Fixed ERR_CONNECTION_REFUSED behind nginx: proxy_pass pointed to the wrong port."
    result = compact(SESSION, abstract=abstract)
    assert result.split("\n\n") == [
        abstract,
        "Debugged the nginx reverse proxy for the staging API.",
        "Kept: /etc/nginx/nginx.conf https://nginx.org/en/docs/http/ngx_http_proxy_module.html "
        "`systemctl reload nginx` HTTP 502",
    ]


def test_text_that_opens_with_its_abstract_does_not_repeat_it() -> None:
    abstract = "Staging proxy fix."
    result = compact(abstract + "\n\n" + SESSION, abstract=abstract)
    assert result.split("\n\n")[:2] == [abstract, "Debugged the nginx reverse proxy for the staging API."]


def test_a_long_first_paragraph_is_cut_at_a_word() -> None:
    long = " ".join(["word"] * 400) + " tail_token"
    result = compact(long + "\n\nmore prose", max_summary_chars=100)
    first, kept = result.split("\n\n")
    assert len(first) <= 100 and first.endswith("…") and first.startswith("word word")
    assert kept == KEPT_PREFIX + "tail_token"


def test_short_text_is_returned_unchanged() -> None:
    assert compact("See /etc/hosts.") == "See /etc/hosts."
    assert compact("One paragraph only, nothing to drop.") == "One paragraph only, nothing to drop."
    assert compact("Tiny.", abstract="A much longer abstract than the text itself") == "Tiny."
    assert compact("") == ""


_FRAGMENTS = st.sampled_from(
    [
        "the",
        "deploy",
        "failed",
        "again",
        ".",
        ",",
        "(",
        ")",
        "`",
        "/etc/nginx/nginx.conf",
        "C:\\Users\\x",
        "https://example.com/a_b",
        "`make test`",
        "ERR_CONNECTION_REFUSED",
        "E1234",
        "ORA-00942",
        "HTTP 404",
        "HTTP",
        "404",
        "status",
        "ENOENT",
        "snake_case_name",
        "camelCaseName",
        "os.path.join",
        "config.yaml",
        "src/app.py",
        "3f2a9c1e",
        "550e8400-e29b-41d4-a716-446655440000",
        "e.g.",
        "and/or",
        "Kept:",
        "…",
    ]
)
_SEPARATORS = st.sampled_from([" ", " ", " ", "", "\n", "\n\n", "\n \n", "\t"])
_TEXTS = st.lists(st.tuples(_FRAGMENTS, _SEPARATORS), max_size=60).map(lambda parts: "".join(a + b for a, b in parts))


@given(text=_TEXTS, abstract=st.one_of(st.none(), _TEXTS), limit=st.integers(min_value=1, max_value=120))
@example(text=SESSION, abstract=None, limit=600)
@example(text=SESSION, abstract="Fixed the proxy: proxy_pass.", limit=600)
def test_compact_is_idempotent_and_never_longer(text: str, abstract: str | None, limit: int) -> None:
    once = compact(text, abstract=abstract, max_summary_chars=limit)
    assert len(once) <= len(text)
    assert compact(once, abstract=abstract, max_summary_chars=limit) == once


@given(text=_TEXTS)
def test_compaction_keeps_every_token(text: str) -> None:
    once = compact(text)
    kept = set(keep_tokens(once))
    assert all(token in kept for token in keep_tokens(text))


@given(st.text(max_size=300))
def test_keep_tokens_never_spans_lines_and_never_repeats(text: str) -> None:
    tokens = keep_tokens(text)
    assert len(tokens) == len(set(tokens))
    assert all(token and "\n" not in token and token in text for token in tokens)


# --- is_low_information ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "ok",
        "ok thanks bye",
        "thanks thanks thanks thanks",
        "yes yes no yes yes",
        "The build failed again on main.\n" * 50,
        "user: hi\nassistant: hello\n" * 30,
    ],
)
def test_low_information(text: str) -> None:
    assert is_low_information(text)


@pytest.mark.parametrize(
    "text",
    [
        "The deploy failed because the disk on db-2 was full.",
        "User prefers dark mode",
        SESSION,
        "Moved the cron job to 02:00 UTC. " + " ".join(f"step {n} checked the replica lag" for n in range(5)),
    ],
)
def test_informative_text(text: str) -> None:
    assert not is_low_information(text)


def test_word_entropy() -> None:
    assert word_entropy([]) == 0.0
    assert word_entropy(["a", "a", "a"]) == 0.0
    assert word_entropy(["a", "b"]) == pytest.approx(1.0)
    assert word_entropy(["a", "b", "c", "d"]) == pytest.approx(2.0)
