"""core.provenance: canonical sources and how much each is trusted (seed 000, Provenance)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core.provenance import least_trusted, most_trusted, normalize_source, trust_rank

SOURCES = st.sampled_from(["user", "tool:web_browse", "tool:grep", "inferred", None])


@pytest.mark.parametrize("raw", ["user", "USER", "User", "  user  ", "\tuser\n"])
def test_user_is_canonicalised(raw: str) -> None:
    assert normalize_source(raw) == ("user", None)


@pytest.mark.parametrize("raw", ["inferred", "INFERRED", " Inferred "])
def test_inferred_is_canonicalised(raw: str) -> None:
    assert normalize_source(raw) == ("inferred", None)


@pytest.mark.parametrize("raw", ["inference", "Inference", " INFERENCE "])
def test_inference_is_an_alias_of_inferred(raw: str) -> None:
    assert normalize_source(raw) == ("inferred", None)


@pytest.mark.parametrize(
    ("raw", "source"),
    [
        ("tool:web_browse", "tool:web_browse"),
        ("tool:grep", "tool:grep"),
        ("  tool:web_browse ", "tool:web_browse"),
        ("tool:mcp/github.search-issues", "tool:mcp/github.search-issues"),
        ("tool:Web_Browse", "tool:Web_Browse"),
        ("tool:" + "a" * 100, "tool:" + "a" * 100),
    ],
)
def test_tool_sources_keep_their_name(raw: str, source: str) -> None:
    assert normalize_source(raw) == (source, None)


def test_none_is_unknown_without_note() -> None:
    assert normalize_source(None) == (None, None)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "verified",
        "users",
        "the user",
        "tool",
        "tool:",
        "tool: web",
        "tool:web browse",
        "tool:web;drop",
        "tool:" + "a" * 101,
        "tools:web",
        "web_browse",
        "inferred-ish",
    ],
)
def test_unrecognised_sources_are_dropped_with_a_note(raw: str) -> None:
    source, note = normalize_source(raw)
    assert source is None
    assert note is not None
    assert repr(raw) in note
    assert "dropped" in note
    for accepted in ("user", "tool:<name>", "inferred"):
        assert accepted in note


@pytest.mark.parametrize(
    ("source", "rank"),
    [("user", 3), ("tool:web_browse", 2), ("tool:x", 2), ("inferred", 1), (None, 0), ("bogus", 0), ("", 0)],
)
def test_trust_rank_values(source: str | None, rank: int) -> None:
    assert trust_rank(source) == rank


def test_trust_rank_orders_user_over_tool_over_inferred_over_unknown() -> None:
    ordered = ["user", "tool:web_browse", "inferred", None]
    ranks = [trust_rank(s) for s in ordered]
    assert ranks == sorted(ranks, reverse=True)
    assert len(set(ranks)) == len(ranks)


def test_trust_rank_expects_canonical_sources() -> None:
    # Ranking is for normalised values; the raw aliases and spellings rank as unknown.
    assert trust_rank("inference") == 0
    assert trust_rank("USER") == 0


@pytest.mark.parametrize("raw", ["USER", "Inference", "tool:web_browse", " inferred "])
def test_normalised_sources_are_stable_and_ranked(raw: str) -> None:
    source, _ = normalize_source(raw)
    assert source is not None
    assert normalize_source(source) == (source, None)
    assert trust_rank(source) > 0


@pytest.mark.parametrize("raw", ["TOOL:web", "Tool:web"])
def test_tool_prefix_is_case_insensitive_and_canonicalised(raw: str) -> None:
    assert normalize_source(raw) == ("tool:web", None)


def test_reinforcement_keeps_the_most_trusted_source() -> None:
    assert most_trusted("inferred", "user") == "user"  # a user confirming an inference upgrades it
    assert most_trusted("user", "inferred") == "user"
    assert most_trusted("tool:grep", None) == "tool:grep"
    assert most_trusted(None, None) is None


def test_combined_text_takes_the_least_trusted_source() -> None:
    assert least_trusted("user", "tool:grep") == "tool:grep"
    assert least_trusted("user", "inferred") == "inferred"
    assert least_trusted("user", None) is None  # a part with no source makes the result unknown
    assert least_trusted("inferred", None) == "inferred"  # unknown never hides an inference
    assert least_trusted() is None


@given(st.lists(SOURCES, min_size=1, max_size=6))
def test_merging_never_launders_an_inference(parts: list[str | None]) -> None:
    merged = least_trusted(*parts)
    assert trust_rank(merged) <= min(trust_rank(p) for p in parts) or merged == "inferred"
    if "inferred" in parts:
        assert merged == "inferred"
    assert merged in parts


@given(st.lists(SOURCES, min_size=1, max_size=6))
def test_reinforcement_only_picks_a_source_it_was_given(parts: list[str | None]) -> None:
    best = most_trusted(*parts)
    assert best in parts
    assert trust_rank(best) == max(trust_rank(p) for p in parts)


@pytest.mark.parametrize(
    ("raw", "source"),
    [
        ("import:markdown", "import:markdown"),
        (" IMPORT:Mem0 ", "import:mem0"),
        ("import:basic-memory", "import:basic-memory"),
    ],
)
def test_import_sources_name_their_format_and_rank_like_a_tool(raw: str, source: str) -> None:
    assert normalize_source(raw) == (source, None)
    assert trust_rank(source) == trust_rank("tool:grep")


@pytest.mark.parametrize("raw", ["import:", "import:a/b", "import: markdown", "imported:markdown"])
def test_malformed_import_sources_are_dropped(raw: str) -> None:
    assert normalize_source(raw)[0] is None
