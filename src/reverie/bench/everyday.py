"""The everyday recall set: loading, validation and scoring, as pure functions.

A hand-written regression set (``data/everyday.json``, shipped with the package): facts an assistant would
remember about its user, the people around them, their projects, preferences, schedules, habits, health,
places, pets and tools; and queries a user would type, each with a ``kind`` and the ids of every fact that
answers it (none for ``offtopic`` and ``nearmiss``). The file format::

    {"name": ..., "now": "2027-01-04T09:00:00Z", "scope": "everyday",
     "facts": [{"id": "f001", "category": "people/dan", "content": "...",
                "saved_at": "2025-01-06", "subjectTime": "2026-03-14"}, ...],
     "queries": [{"id": "q001", "kind": "exact", "query": "...", "expected": ["f001"],
                  "now": "2026-03-23T09:00:00Z"}, ...]}

``saved_at`` (optional) is when the user said the fact: the harness saves it with the clock there, so the
entry's ``created_at`` is that time. ``subjectTime`` (optional) is when the thing happened (``YYYY``,
``YYYY-MM`` or ``YYYY-MM-DD``), stored as the entry's metadata. A query's ``now`` (optional, else the file's)
is the clock when it is asked, for relative ones ("last week").

Scoring, over the top ``k`` (5) hits mapped back to fact ids:

- precision@1, over on-topic queries: the top hit is one of the expected facts;
- recall@k, over on-topic queries: |expected ∩ top k| / |expected|, averaged;
- off-topic empty: the share of ``offtopic`` queries that return no hit at all — the target: nothing in the
  facts is about any person, pet, project, place or subject they name ("what is the capital of Peru",
  "who is Kevin Walsh?" when there is no Kevin Walsh);
- near-miss empty: the same share for ``nearmiss`` queries, which ask something no fact answers about someone
  or something the facts do cover ("which database does Beacon use?"). Returning the facts about Beacon is
  right for a memory (the agent reads them and says it does not know), so this share is reported for
  information only, not as a target.

On-topic means every kind but ``offtopic`` and ``nearmiss``.

Only ``load_everyday`` reads a file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from reverie.core.subject_time import valid_subject_time
from reverie.errors import ValidationError

OFFTOPIC = "offtopic"
NEARMISS = "nearmiss"
ON_TOPIC_KINDS = ("exact", "paraphrase", "question", "name", "negation", "time", "preference")
EMPTY_KINDS = (OFFTOPIC, NEARMISS)  # nothing answers them: scored by the share with no hit at all
KINDS = ON_TOPIC_KINDS + EMPTY_KINDS
ALL_ON_TOPIC = "all on-topic"
DEFAULT_K = 5
DEFAULT_SCOPE = "everyday"
BUNDLED = "everyday.json"
_SUBJECT_TIME = re.compile(r"\d{4}(?:-\d{2}(?:-\d{2})?)?")  # the file's forms; valid_subject_time checks the date


@dataclass(frozen=True, slots=True)
class Fact:
    id: str
    content: str
    category: str | None
    saved_at: datetime | None
    subject_time: str | None


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    text: str
    kind: str
    expected: tuple[str, ...]  # fact ids, in the file's order; empty for offtopic and nearmiss
    now: datetime | None  # the clock when asked; None: the dataset's

    @property
    def offtopic(self) -> bool:
        return self.kind == OFFTOPIC

    @property
    def unanswerable(self) -> bool:
        """No fact answers it: ``offtopic`` or ``nearmiss``."""
        return self.kind in EMPTY_KINDS


@dataclass(frozen=True, slots=True)
class Everyday:
    name: str
    facts: tuple[Fact, ...]
    queries: tuple[Query, ...]
    now: datetime | None  # default clock for queries; None: after the last fact's saved_at
    scope: str

    def query_now(self, query: Query) -> datetime | None:
        return query.now or self.now


@dataclass(frozen=True, slots=True)
class QueryScore:
    query_id: str
    kind: str
    hit_at_1: bool | None  # None for offtopic and nearmiss
    recall: float | None  # |expected ∩ top k| / |expected|; None for offtopic and nearmiss
    empty: bool  # no hit at all
    ranked: tuple[str, ...]  # fact ids of the top k, best first
    # the share of those hits that are expected; None for offtopic and nearmiss and when nothing was returned
    on_target: float | None = None


@dataclass(frozen=True, slots=True)
class KindRow:
    """One group of queries. Precision and recall are None for offtopic and nearmiss, ``empty`` None for
    on-topic groups, and every value None when the group is empty (n = 0)."""

    label: str
    n: int
    precision_at_1: float | None
    recall_at_k: float | None
    empty: float | None
    # on-topic groups: the share of the hits returned that are expected, averaged over the queries that
    # returned any (low when a right answer is padded with hits about something else)
    on_target: float | None = None


# -- parsing -----------------------------------------------------------------------------------------------
def _fail(where: str, message: str) -> ValidationError:
    return ValidationError(f"everyday {where}: {message}", field=where.split(" ")[0])


def _required(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, f"{key!r} must be a non-empty string, got {value!r}")
    return value.strip()


def _optional(item: Mapping[str, Any], key: str, where: str) -> str | None:
    return None if item.get(key) is None else _required(item, key, where)


def parse_when(value: object, where: str, key: str) -> datetime | None:
    """An ISO date (``2026-03-14``, midnight UTC) or datetime (naive means UTC), or None when absent."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _fail(where, f"{key!r} must be an ISO date or datetime, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise _fail(where, f"{key!r} is not an ISO date or datetime: {value!r}") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _fact(item: object, index: int) -> Fact:
    if not isinstance(item, Mapping):
        raise _fail(f"fact #{index + 1}", "must be an object")
    raw_id = item.get("id")
    where = f"fact {raw_id!r}" if isinstance(raw_id, str) and raw_id.strip() else f"fact #{index + 1}"
    fact_id = _required(item, "id", where)
    content = _required(item, "content", where)
    subject_time = item.get("subjectTime")
    if subject_time is not None and not (
        isinstance(subject_time, str) and _SUBJECT_TIME.fullmatch(subject_time) and valid_subject_time(subject_time)
    ):
        raise _fail(where, f"subjectTime must be YYYY, YYYY-MM or YYYY-MM-DD (a real date), got {subject_time!r}")
    return Fact(
        id=fact_id,
        content=content,
        category=_optional(item, "category", where),
        saved_at=parse_when(item.get("saved_at"), where, "saved_at"),
        subject_time=subject_time,
    )


def _query(item: object, index: int, fact_ids: frozenset[str]) -> Query:
    if not isinstance(item, Mapping):
        raise _fail(f"query #{index + 1}", "must be an object")
    raw_id = item.get("id")
    where = f"query {raw_id!r}" if isinstance(raw_id, str) and raw_id.strip() else f"query #{index + 1}"
    query_id = _required(item, "id", where)
    text = _required(item, "query", where)
    kind = item.get("kind")
    if kind not in KINDS:
        raise _fail(where, f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    expected = item.get("expected")
    if not isinstance(expected, list) or not all(isinstance(e, str) for e in expected):
        raise _fail(where, f"'expected' must be a list of fact ids, got {expected!r}")
    if len(set(expected)) != len(expected):
        raise _fail(where, f"'expected' lists a fact twice: {expected!r}")
    unknown = [e for e in expected if e not in fact_ids]
    if unknown:
        raise _fail(where, f"expects unknown fact ids {', '.join(unknown)}")
    if kind in EMPTY_KINDS and expected:
        raise _fail(where, f"{'an' if kind == OFFTOPIC else 'a'} {kind} query expects no facts")
    if kind not in EMPTY_KINDS and not expected:
        raise _fail(where, f"a query of kind {kind} must expect at least one fact")
    return Query(
        id=query_id, text=text, kind=kind, expected=tuple(expected), now=parse_when(item.get("now"), where, "now")
    )


def _unique(ids: Iterable[str], what: str) -> None:
    seen: set[str] = set()
    for item_id in ids:
        if item_id in seen:
            raise _fail(f"{what} {item_id!r}", "duplicate id")
        seen.add(item_id)


def parse_everyday(data: object, *, name: str = "everyday") -> Everyday:
    """Validate a decoded everyday file. Raises ``ValidationError`` naming the offending item: a missing or
    duplicate id, an unknown kind, an expected id naming no fact, a malformed subjectTime or date."""
    if not isinstance(data, Mapping):
        raise _fail("file", "must be a JSON object with 'facts' and 'queries'")
    raw_facts, raw_queries = data.get("facts"), data.get("queries")
    if not isinstance(raw_facts, list) or not raw_facts:
        raise _fail("file", "'facts' must be a non-empty list")
    if not isinstance(raw_queries, list) or not raw_queries:
        raise _fail("file", "'queries' must be a non-empty list")
    facts = tuple(_fact(item, i) for i, item in enumerate(raw_facts))
    _unique((f.id for f in facts), "fact")
    fact_ids = frozenset(f.id for f in facts)
    queries = tuple(_query(item, i, fact_ids) for i, item in enumerate(raw_queries))
    _unique((q.id for q in queries), "query")
    scope = data.get("scope", DEFAULT_SCOPE)
    if not isinstance(scope, str) or not scope.strip():
        raise _fail("file", f"'scope' must be a non-empty string, got {scope!r}")
    label = data.get("name", name)
    return Everyday(
        name=label if isinstance(label, str) and label.strip() else name,
        facts=facts,
        queries=queries,
        now=parse_when(data.get("now"), "file", "now"),
        scope=scope.strip(),
    )


def bundled_text() -> str:
    """The text of the everyday set shipped inside the package."""
    return resources.files("reverie.bench").joinpath("data").joinpath(BUNDLED).read_text(encoding="utf-8")


def load_everyday(path: Path | None = None) -> Everyday:
    """Read and validate an everyday file; None reads the bundled set. Raises ``ValidationError`` for an
    unreadable file, bad JSON or bad contents."""
    if path is None:
        text, name = bundled_text(), "everyday"
    else:
        try:
            text, name = path.read_text(encoding="utf-8"), path.stem
        except OSError as exc:
            raise ValidationError(f"cannot read the everyday file {path}: {exc}", field="path") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"the everyday file {path or BUNDLED} is not JSON: {exc}", field="path") from None
    return parse_everyday(data, name=name)


# -- scoring -----------------------------------------------------------------------------------------------
def score_query(query: Query, ranked: Sequence[str], k: int = DEFAULT_K) -> QueryScore:
    """Score one query from the fact ids of its hits, best first (only the first ``k`` count)."""
    top = tuple(ranked[:k])
    if query.unanswerable:
        return QueryScore(query.id, query.kind, None, None, not top, top)
    wanted = set(query.expected)
    return QueryScore(
        query_id=query.id,
        kind=query.kind,
        hit_at_1=bool(top) and top[0] in wanted,
        recall=len(wanted & set(top)) / len(wanted),
        empty=not top,
        ranked=top,
        on_target=len(wanted.intersection(top)) / len(top) if top else None,
    )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _row(label: str, scores: Sequence[QueryScore], unanswerable: bool) -> KindRow:
    if unanswerable:
        return KindRow(label, len(scores), None, None, _mean([float(s.empty) for s in scores]))
    return KindRow(
        label=label,
        n=len(scores),
        precision_at_1=_mean([float(bool(s.hit_at_1)) for s in scores]),
        recall_at_k=_mean([s.recall or 0.0 for s in scores]),
        empty=None,
        on_target=_mean([s.on_target for s in scores if s.on_target is not None]),
    )


def summarise(scores: Sequence[QueryScore]) -> tuple[KindRow, ...]:
    """One row per on-topic kind (in ``KINDS`` order), then ``all on-topic`` (neither offtopic nor nearmiss),
    then ``offtopic`` (the target) and ``nearmiss`` (information only)."""
    rows = [_row(kind, [s for s in scores if s.kind == kind], unanswerable=False) for kind in ON_TOPIC_KINDS]
    rows.append(_row(ALL_ON_TOPIC, [s for s in scores if s.kind in ON_TOPIC_KINDS], unanswerable=False))
    rows.extend(_row(kind, [s for s in scores if s.kind == kind], unanswerable=True) for kind in EMPTY_KINDS)
    return tuple(rows)


def kind_counts(queries: Sequence[Query]) -> dict[str, int]:
    return {kind: sum(1 for q in queries if q.kind == kind) for kind in KINDS}
