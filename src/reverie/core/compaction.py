"""Cold-entry compaction text and the entropy filter (seed 003: ``compact_cold_episodic``, "Skip empty
sessions"). Pure text logic.

Invariants:
- ``keep_tokens`` returns each token once, in first-seen order; a token never spans a line break.
- ``compact`` keeps the abstract, the first paragraph (cut to ``max_summary_chars``) and one ``Kept:`` line
  with the keep-tokens those do not already hold; it drops the rest of the prose. Its result is never
  longer than its input (when compaction would not shrink the text, the text comes back unchanged) and it
  is idempotent: ``compact(compact(x, abstract=a), abstract=a) == compact(x, abstract=a)``.
- ``is_low_information`` is True for near-empty or highly repetitive text (see ``LowInformationParams``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from reverie.core.text import cut_words

KEPT_PREFIX = "Kept: "

# Path segment characters: letters, digits, "_", ".", "@", "%", "+", "=", "-".
_SEG = r"[\w.@%+=-]"
_NOT_AFTER_PATH = r"(?<![\w/.~@%+=-])"
_WIN_SEG = r"""[^\s\\/:*?"<>|`]+"""

# Alternatives in priority order: at one position the first that matches wins, so the structured forms
# (code spans, URLs, paths) come before the bare words they contain.
_ALTERNATIVES = {
    "code": r"(?<!`)`[^`\n]{1,200}`(?!`)",
    "url": r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s<>\"'`]+",
    "uuid": r"\b[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\b",
    "winpath": rf"(?<![\w\\])(?:[A-Za-z]:\\|\\\\[\w.$-]+\\)(?:{_WIN_SEG}(?:\\{_WIN_SEG})*\\?)?",
    "abspath": rf"{_NOT_AFTER_PATH}(?:~|\.\.?)?(?:/{_SEG}+)+/?",
    # A relative path needs two slashes or a file extension, so "and/or" and "TCP/IP" stay prose.
    "relpath": (
        rf"{_NOT_AFTER_PATH}(?=[\w.-]*[A-Za-z])(?:{_SEG}+/){{2,}}{_SEG}*"
        rf"|{_NOT_AFTER_PATH}(?:{_SEG}+/)+{_SEG}*\.[A-Za-z][A-Za-z0-9]{{0,9}}\b"
    ),
    "http": r"\b(?:HTTP(?:/\d(?:\.\d)?)?|[Ss]tatus(?: [Cc]ode)?)[ \t]+[1-5]\d\d\b",
    "errcode": r"\b[A-Z]{2,}(?:-\d{2,})+\b|\b[A-Z]{1,4}\d{3,5}\b",
    "hex": r"(?<![\w-])(?:0x[0-9A-Fa-f]+|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64})(?![\w-])",
    "word": r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*",
}
_TOKEN = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in _ALTERNATIVES.items()))

# POSIX errno and signal names: all caps and no underscore, so only a list tells them from shouting.
_ERRNO_TEXT = """EPERM ENOENT ESRCH EINTR EIO ENXIO E2BIG ENOEXEC EBADF ECHILD EAGAIN ENOMEM EACCES EFAULT EBUSY EEXIST
    EXDEV ENODEV ENOTDIR EISDIR EINVAL ENFILE EMFILE ENOTTY ETXTBSY EFBIG ENOSPC ESPIPE EROFS EMLINK EPIPE
    EDOM ERANGE EDEADLK ENAMETOOLONG ENOLCK ENOSYS ENOTEMPTY ELOOP EWOULDBLOCK ENOTSOCK EADDRINUSE
    EADDRNOTAVAIL ENETDOWN ENETUNREACH ENETRESET ECONNABORTED ECONNRESET ENOBUFS EISCONN ENOTCONN ESHUTDOWN
    ETIMEDOUT ECONNREFUSED EHOSTDOWN EHOSTUNREACH EALREADY EINPROGRESS ESTALE EDQUOT ECANCELED EOVERFLOW
    EPROTO ENOTSUP EOPNOTSUPP EAFNOSUPPORT EPROTONOSUPPORT EMSGSIZE EDESTADDRREQ ENODATA ETIME
    SIGHUP SIGINT SIGQUIT SIGILL SIGTRAP SIGABRT SIGBUS SIGFPE SIGKILL SIGUSR1 SIGSEGV SIGUSR2 SIGPIPE
    SIGALRM SIGTERM SIGCHLD SIGCONT SIGSTOP SIGTSTP SIGTTIN SIGTTOU SIGWINCH"""
_ERRNO_NAMES = frozenset(_ERRNO_TEXT.split())
_SNAKE = re.compile(r"[A-Za-z0-9]_|_[A-Za-z0-9]")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]{2}")


def _trim(token: str) -> str:
    """Drop sentence punctuation and unbalanced closing brackets from the end of a URL or a path."""
    pairs = {")": "(", "]": "[", "}": "{", ">": "<"}
    while token:
        last = token[-1]
        if last in ".,;:!?'\"" or (last in pairs and token.count(last) > token.count(pairs[last])):
            token = token[:-1]
        else:
            break
    return token


def _is_identifier(word: str) -> bool:
    """snake_case, SCREAMING_SNAKE, camelCase/PascalCase, dotted.names (not "e.g"), errno and signal names."""
    if "." in word:
        return any(len(part) > 1 for part in word.split("."))
    return word in _ERRNO_NAMES or bool(_SNAKE.search(word)) or bool(_CAMEL.search(word))


def _token(match: re.Match[str]) -> str | None:
    kind, text = match.lastgroup, match.group(0)
    if kind in ("url", "winpath", "abspath", "relpath"):
        text = _trim(text)
        return text if len(text) > 1 and any(ch.isalnum() for ch in text) else None
    if kind == "word":
        return text if _is_identifier(text) else None
    return text


def keep_tokens(text: str) -> list[str]:
    """The tokens worth keeping when prose is dropped, once each, in first-seen order: code spans (with
    their backticks), URLs, file paths (POSIX, ``~/``, relative with two slashes or an extension, Windows
    and UNC), UUIDs and hex ids (7+ hex digits with a digit and a letter, or ``0x…``), error codes
    (``E1234``, ``TS2345``, ``ORA-00942``, ``CVE-2021-44228``, ``HTTP 404``, errno and signal names) and
    identifiers (snake_case, SCREAMING_SNAKE, camelCase, PascalCase with two humps, dotted.names).
    Text inside a code span or a URL is not scanned again."""
    seen: dict[str, None] = {}
    for match in _TOKEN.finditer(text):
        token = _token(match)
        if token:
            seen.setdefault(token, None)
    return list(seen)


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n[ \t]*\n", text) if p.strip()]


_cut = cut_words


def compact(text: str, *, abstract: str | None = None, max_summary_chars: int = 600) -> str:
    """The compacted form of a cold entry: the abstract (e.g. ``metadata["abstract"]``), the first
    paragraph of ``text`` that is not the abstract, and a ``Kept:`` line of the keep-tokens the two do not
    hold, separated by blank lines. ``text`` unchanged when that would not be shorter.

    When ``text`` already opens with the abstract's paragraphs they are not repeated; this is also what
    makes compaction idempotent for a given abstract.
    """
    summary = _paragraphs(abstract or "")
    body = _paragraphs(text)
    if summary and body[: len(summary)] == summary:
        body = body[len(summary) :]
    kept = summary + ([_cut(body[0], max_summary_chars)] if body else [])
    held = set(keep_tokens("\n\n".join(kept)))
    extra = [token for token in keep_tokens(text) if token not in held]
    if extra:
        kept.append(KEPT_PREFIX + " ".join(extra))
    result = "\n\n".join(kept)
    return result if len(result) < len(text) else text


@dataclass(frozen=True, slots=True)
class LowInformationParams:
    """Thresholds of the entropy filter, over lower-cased word tokens (``\\w+``):

    - fewer than ``min_words`` words is near-empty ("ok thanks bye");
    - a Shannon entropy below ``min_entropy_bits`` bits per word is repetitive ("thanks thanks thanks": 0;
      any three distinct words: log2(3) ≈ 1.58);
    - when there are at least ``min_trigrams`` word trigrams, a share of distinct trigrams below
      ``min_distinct_trigram_ratio`` is repetitive (one line pasted 50 times: about 0.02; prose, even long
      prose, stays well above 0.8 because its word sequences rarely repeat).
    """

    min_words: int = 4
    min_entropy_bits: float = 1.5
    min_trigrams: int = 8
    min_distinct_trigram_ratio: float = 0.3


DEFAULT_LOW_INFORMATION = LowInformationParams()


def word_entropy(words: list[str]) -> float:
    """Shannon entropy in bits per word of the word distribution (0 for no words or one repeated word)."""
    total = len(words)
    if total == 0:
        return 0.0
    return -sum(n / total * math.log2(n / total) for n in Counter(words).values())


def is_low_information(text: str, params: LowInformationParams = DEFAULT_LOW_INFORMATION) -> bool:
    """True for near-empty or highly repetitive text, which the experience pass skips before building any
    LLM prompt (thresholds in ``LowInformationParams``)."""
    words = re.findall(r"\w+", text.lower())
    if len(words) < params.min_words or word_entropy(words) < params.min_entropy_bits:
        return True
    trigrams = list(zip(words, words[1:], words[2:], strict=False))
    if len(trigrams) < params.min_trigrams:
        return False
    return len(set(trigrams)) / len(trigrams) < params.min_distinct_trigram_ratio
