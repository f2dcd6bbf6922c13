"""core.text: query terms, FTS-safe match expressions, LIKE patterns, the BM25 document and previews."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.core.text import (
    MAX_QUERY_TERMS,
    STOPWORDS,
    fts_match,
    preview,
    query_terms,
)

# --- query_terms ---------------------------------------------------------------------------------


def test_query_terms_lowercases_and_keeps_order() -> None:
    assert query_terms("Lisbon Portugal TIMEZONE") == ["lisbon", "portugal", "timezone"]


def test_query_terms_letters_and_digits_only() -> None:
    assert query_terms("utc-6, (America/Chicago)!  v2.0?") == ["utc", "6", "america", "chicago", "v2", "0"]


def test_query_terms_underscore_splits_like_unicode61() -> None:
    assert query_terms("user_id snake_case_name") == ["user", "id", "snake", "case", "name"]


def test_query_terms_keeps_non_ascii_letters_and_digits() -> None:
    assert query_terms("Café São-Paulo 東京 ٣") == ["café", "são", "paulo", "東京", "٣"]


def test_query_terms_casefolds_case_variants_to_one_term() -> None:
    assert query_terms("Python PYTHON python pYtHoN") == ["python"]


def test_query_terms_removes_duplicates_keeping_first_position() -> None:
    assert query_terms("beta alpha beta gamma alpha") == ["beta", "alpha", "gamma"]


def test_query_terms_drops_stopwords_when_other_terms_remain() -> None:
    assert query_terms("where does the user live?") == ["user", "live"]


def test_query_terms_keeps_stopwords_when_nothing_else_remains() -> None:
    assert query_terms("Who is it?") == ["who", "is", "it"]


def test_query_terms_stopwords_only_are_still_deduplicated() -> None:
    assert query_terms("the THE the a") == ["the", "a"]


def test_query_terms_stopword_detection_is_case_insensitive() -> None:
    assert query_terms("THE Timezone OF The USER") == ["timezone", "user"]


@pytest.mark.parametrize("text", ["", "   ", "!!! ??? ...", "___", "-*:()\"'", "\n\t"])
def test_query_terms_empty_when_no_letters_or_digits(text: str) -> None:
    assert query_terms(text) == []


def test_query_terms_caps_at_max_query_terms() -> None:
    words = [f"word{i}" for i in range(MAX_QUERY_TERMS + 10)]
    terms = query_terms(" ".join(words))
    assert len(terms) == MAX_QUERY_TERMS
    assert terms == words[:MAX_QUERY_TERMS]


def test_query_terms_cap_counts_distinct_terms_not_tokens() -> None:
    words = [f"w{i}" for i in range(MAX_QUERY_TERMS)]
    text = " ".join(w for w in words for _ in range(3))
    assert query_terms(text) == words


def test_query_terms_cap_applies_after_stopwords_are_dropped() -> None:
    content = [f"term{i}" for i in range(MAX_QUERY_TERMS)]
    text = " ".join(["the", "and", "of"] + content)
    assert query_terms(text) == content


def test_stopwords_are_lowercase_function_words() -> None:
    assert {"the", "a", "is", "who", "where"} <= STOPWORDS
    assert "user" not in STOPWORDS
    assert all(w == w.lower() and w.isalpha() for w in STOPWORDS)


@pytest.mark.parametrize(("text", "token"), [("Straße", "straße"), ("ﬁle", "ﬁle")])
def test_query_terms_match_the_tokens_fts5_indexes(text: str, token: str) -> None:
    assert query_terms(text) == [token]


# --- fts_match -----------------------------------------------------------------------------------


@pytest.mark.parametrize("terms", [[], ()])
def test_fts_match_none_when_no_terms(terms: list[str]) -> None:
    assert fts_match(list(terms)) is None


def test_fts_match_single_term_is_quoted() -> None:
    assert fts_match(["lisbon"]) == '"lisbon"'


def test_fts_match_joins_quoted_terms_with_or() -> None:
    assert fts_match(["user", "lives", "lisbon"]) == '"user" OR "lives" OR "lisbon"'


def test_fts_match_doubles_embedded_quotes() -> None:
    # query_terms never yields a quote; the escaping is the belt behind that brace.
    assert fts_match(['say"hi']) == '"say""hi"'


def test_fts_match_of_query_full_of_fts_syntax_quotes_only_words() -> None:
    match = fts_match(query_terms('NEAR(foo bar) -baz title:qux "x" * AND NOT'))
    assert match == '"near" OR "foo" OR "bar" OR "baz" OR "title" OR "qux" OR "x" OR "not"'


def test_fts_match_of_query_without_words_is_none() -> None:
    assert fts_match(query_terms('*:()"-')) is None


_QUOTED_TERM = re.compile(r'"([^"]+)"')
_FTS_SYNTAX = set('"*:()-^+{},')


def _is_term_char(ch: str) -> bool:
    # Letters and digits; casefolding may add a combining mark (e.g. 'İ' -> 'i' + U+0307), never syntax.
    return ch.isalnum() or unicodedata.category(ch) == "Mn"


@settings(max_examples=300, database=None, deadline=None)
@given(st.text(max_size=300))
def test_fts_match_only_emits_quoted_alphanumeric_terms(text: str) -> None:
    match = fts_match(query_terms(text))
    if match is None:
        assert query_terms(text) == []
        return
    parts = match.split(" OR ")
    assert 1 <= len(parts) <= MAX_QUERY_TERMS
    for part in parts:
        quoted = _QUOTED_TERM.fullmatch(part)
        assert quoted is not None, part
        term = quoted.group(1)
        assert term and all(_is_term_char(ch) for ch in term), term
        assert not _FTS_SYNTAX & set(term)
        assert not any(ch.isspace() for ch in term)
    # Nothing outside the quotes but the OR joiners: NEAR, '*', ':', '(', ')', '-' cannot leak.
    outside = _QUOTED_TERM.sub("", match)
    assert outside.replace(" OR ", "") == ""


@settings(max_examples=200, database=None, deadline=None)
@given(st.text(max_size=300))
def test_query_terms_are_unique_nonempty_and_capped(text: str) -> None:
    terms = query_terms(text)
    assert len(terms) <= MAX_QUERY_TERMS
    assert len(set(terms)) == len(terms)
    assert all(t and "_" not in t and not any(ch.isspace() for ch in t) for t in terms)


_ASCII_TEXT = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=200)


@settings(max_examples=200, database=None, deadline=None)
@given(_ASCII_TEXT)
def test_query_terms_ignore_case(text: str) -> None:
    terms = query_terms(text)
    assert all(t == t.lower() for t in terms)
    assert query_terms(text.upper()) == terms == query_terms(text.lower())


# --- preview -------------------------------------------------------------------------------------


def test_preview_short_text_unchanged() -> None:
    assert preview("The user lives in Lisbon") == "The user lives in Lisbon"


def test_preview_flattens_whitespace_to_one_line() -> None:
    assert preview("  line one\n\nline\ttwo  \r\n three ") == "line one line two three"


def test_preview_exactly_at_limit_is_not_cut() -> None:
    text = "x" * 120
    assert preview(text) == text


def test_preview_over_limit_is_cut_with_ellipsis() -> None:
    text = "y" * 121
    out = preview(text)
    assert len(out) == 120
    assert out == "y" * 119 + "…"


def test_preview_custom_limit() -> None:
    assert preview("abcdefghij", limit=5) == "abcd…"


def test_preview_strips_trailing_space_before_ellipsis() -> None:
    assert preview("abcd efgh", limit=6) == "abcd…"


def test_preview_limit_counts_flattened_text() -> None:
    # 10 characters once the run of spaces collapses, so no cut.
    assert preview("abcd      efghi", limit=10) == "abcd efghi"


def test_preview_of_blank_text_is_empty() -> None:
    assert preview(" \n\t ") == ""


@settings(max_examples=200, database=None, deadline=None)
@given(st.text(max_size=400), st.integers(min_value=1, max_value=200))
def test_preview_is_one_line_within_limit(text: str, limit: int) -> None:
    out = preview(text, limit=limit)
    assert len(out) <= limit
    assert out == " ".join(out.split())
    flat = " ".join(text.split())
    if len(flat) <= limit:
        assert out == flat
    else:
        assert out.endswith("…")
        assert flat.startswith(out[:-1])
