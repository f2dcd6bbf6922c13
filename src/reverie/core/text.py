"""Text rules for search: query terms, FTS-safe match expressions, previews.

Invariant: ``fts_match`` only ever emits double-quoted alphanumeric terms joined by OR, so no user input
can reach FTS5's query syntax (quotes, ``*``, ``NEAR(``, ``-``, ``:``, parentheses) and a search never
raises on what the user typed.
"""

from __future__ import annotations

import re

# FTS5's unicode61 tokenizer splits on everything that is not a letter or a digit, including "_";
# matching that here keeps the terms we quote identical to the tokens it indexed.
_TERM = re.compile(r"[^\W_]+", re.UNICODE)
MAX_QUERY_TERMS = 64

# Function words carry no topic; OR-ing them in would match nearly every entry. Dropped only when the
# query has other words, so "who is it" still searches for something.
_STOPWORD_TEXT = """a an and are as at be been but by can could did do does for from had has have he her hers him his
    how i if in into is it its me my of on or our ours she so than that the their them then there these
    they this those to too us was we were what when where which who whom why will with would you your"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Contraction pieces ("can't" -> "can", "t"; "Dan's" -> "dan", "s"), filler, and the words of asking
# ("what kind of", "does Dan like", "which database does Harbor use"): in a query they carry no topic, and
# one of them matching a short entry outranked what the query was about (the everyday set). Dropped from
# queries like the stopwords (only when other words remain); entries still index them. Kept short: each
# further function word tried (about, after, many, other, ...) cost LoCoMo a little.
_FILLER_TEXT = """d didn doesn don ever even get gets got hadn hasn haven isn kind kinds ll like likes m re s sort
    t type types use uses used using ve wasn weren won wouldn couldn aren shouldn please tell know think mean
    really just yes yeah ok okay thanks hey hi hello oh well"""
FILLER = frozenset(_FILLER_TEXT.split())
# An e-mail address or a web address: one value, whatever digits or dots it holds.
ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\bhttps?://\S+[^\s.,;!?)]")


def query_terms(text: str) -> list[str]:
    """The lower-cased search terms of ``text``: letters and digits only, stopwords and filler dropped when
    others remain, duplicates removed, order kept, at most ``MAX_QUERY_TERMS``."""
    seen: dict[str, None] = {}
    for match in _TERM.finditer(text):
        # lower(), not casefold(): unicode61 folds case one character at a time ("straße" stays
        # "straße"), and casefold's "ss" would never match what the index holds.
        seen.setdefault(match.group(0).lower(), None)
    terms = list(seen)
    content = [t for t in terms if t not in STOPWORDS and t not in FILLER]
    return (content or terms)[:MAX_QUERY_TERMS]


def fts_match(terms: list[str]) -> str | None:
    """An FTS5 MATCH expression that ORs the quoted terms, or None when there is nothing to match."""
    if not terms:
        return None
    # Terms hold only letters and digits, so quoting cannot be broken out of; the replace is a belt.
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def preview(text: str, limit: int = 120) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis when cut."""
    limit = max(limit, 1)
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def cut_words(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters, ending in an ellipsis when cut."""
    if len(text) <= limit:
        return text
    head = text[: max(limit - 1, 0)]
    if " " in head:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip() + "…"
