"""The skill store (seed 001's ``ISkillStore`` + ``ISkillUsageStore``): named procedures an agent keeps and
reuses, recalled by the shared hybrid ranker, with a usage log that the dream's skill passes read.

Invariants:
- Every argument is validated before the store is touched (``skills.inputs``): a refused call writes nothing.
- A skill is identified by ``(agent, name)``. ``save`` creates, updates (the text, see-also and metadata:
  metadata keys merge into the stored ones, ``see_also`` None keeps the stored list) or, for an archived name,
  brings it back as a new skill (created now). Saving exactly what is stored writes nothing ("unchanged").
- Every write is one store transaction with a compare-and-set on the version it read, so two writers never
  lose each other's work: without ``expected_version`` a lost race is retried on the new state; with it, a
  mismatch is ``Conflict``. Each write records a version row; any version can be restored (``restore``).
- Archive, never delete: ``archive`` hides a skill (restorable); the purge removes it only after the archive
  retention (``purge_archived``, run by the dream's archive purge and the serve loop's hourly job).
- With an embedder, a save embeds the skill's text (name, summary, content) before its transaction and keeps
  the vector with its model id; a failing embedder never fails a save. A search embeds, in one batch, the
  live skills whose vector is missing or of another model, and stores them (only onto the version they were
  made from), so a model change or an embedder outage heals on the next search.
- An agent holds at most ``max_skills_per_agent`` live skills: creating (or restoring) one past it is refused.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from reverie.clock import Clock
from reverie.core import filters, validate
from reverie.core.skill_signals import is_sparse
from reverie.embed.base import Embedder, embed_queries
from reverie.errors import Conflict, EmbeddingError, NotFound, ValidationError
from reverie.skills import inputs
from reverie.skills.changes import SkillChanges, SkillDraft, apply_changes
from reverie.skills.rank import SkillHit, lexical_scores, rank, semantic_scores
from reverie.skills.usage import AtRisk, SkillUsageLog
from reverie.storage.base import Store
from reverie.types import CoUsage, Page, Skill, SkillSaved, SkillUsage, SkillVersion

log = logging.getLogger("reverie.skills")
PURGE_EVERY = timedelta(hours=1)
_ATTEMPTS = 5  # a save without expected_version retries a lost compare-and-set this often


@dataclass(frozen=True, slots=True)
class SkillsConfig:
    """The knobs of the skill store; the engine fills them from ``[skills]`` (and recall, memory, embedding)."""

    max_skills_per_agent: int = 1000
    max_content_chars: int = 50_000
    search_limit: int = 10
    sparse_chars: int = 200
    sparse_days: float = 7.0
    usage_window_days: float = 30.0
    co_usage_pairs: int = 10
    archive_retention_days: float = 90.0  # archived skills are purged this long after (memory's retention)
    log_retention_days: float = 90.0  # usage rows older are purged (0: kept forever)
    semantic_weight: float = 0.35  # recall's weight of the vector signal
    max_input_chars: int = 30_000  # the embedder's input cap


@dataclass(frozen=True, slots=True)
class SkillSearch:
    """A search's hits, best first; ``mode`` "hybrid" or "bm25"; ``notes`` say why a signal was missing."""

    hits: list[SkillHit]
    mode: str
    notes: tuple[str, ...] = ()


def embedding_text(skill: Skill) -> str:
    """What a skill's vector is made from: its name, summary and content."""
    return f"{skill.name}\n{skill.summary}\n\n{skill.content}"


def same_text(a: Skill, b: Skill) -> bool:
    return (a.name, a.summary, a.content) == (b.name, b.summary, b.content)


class SkillStore:
    """Skills over ``store.skills``. Thread-safe as the store is; the usage queries are in ``skills.usage``."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        config: SkillsConfig | None = None,
        *,
        embedder: Embedder | None = None,
        floor: Callable[[str], float | None] | None = None,
    ) -> None:
        """``floor(agent_id)`` is the vector floor of hybrid recall for that agent (None: no floor)."""
        self._store = store
        self._clock = clock
        self.config = config or SkillsConfig()
        self._embedder = embedder
        self._floor = floor or (lambda _agent: None)
        self._last_purge: datetime | None = None
        self.usage_log = SkillUsageLog(
            store, clock, window_days=self.config.usage_window_days, pairs=self.config.co_usage_pairs
        )

    @property
    def store(self) -> Store:
        return self._store

    @property
    def clock(self) -> Clock:
        return self._clock

    # -- writing ---------------------------------------------------------------------------------------
    def save(
        self,
        agent_id: str,
        name: str,
        summary: str,
        content: str,
        *,
        see_also: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        expected_version: int | None = None,
    ) -> SkillSaved:
        """Create or update the skill ``name`` (see the module invariants). ``expected_version``: compare-and-set
        (0: the name must not be live). Raises ``ValidationError``, ``Conflict``."""
        agent_id, name = inputs.agent(agent_id), inputs.name(name)
        summary = inputs.summary(summary)
        content = inputs.content(content, max_chars=self.config.max_content_chars)
        related = None if see_also is None else inputs.see_also(see_also, own=name)
        extra = validate.metadata(metadata)
        expected = inputs.expected_version(expected_version)
        for _ in range(_ATTEMPTS):
            current = self._store.skills.get(agent_id, name)
            draft = self._draft(agent_id, name, summary, content, related, extra, current)
            if current is not None and not current.archived and _same(current, draft):
                if expected is not None and expected != current.version:
                    raise Conflict(f"skill {name!r} is at version {current.version} (expected {expected})")
                return SkillSaved("unchanged", current)
            draft = self.with_vector(draft, current)
            change = "edited" if current is not None and not current.archived else "created"
            try:
                with self._store.transaction():
                    if current is None or current.archived:
                        self.check_room(agent_id)
                    stored = self._store.skills.put(
                        draft, change=change, at=draft.updated_at, expected_version=_cas(current, expected)
                    )
            except Conflict:
                if expected is not None:
                    raise
                continue
            return SkillSaved("updated" if change == "edited" else "created", stored)
        raise Conflict(f"skill {name!r} kept changing under the save; try again")

    def _draft(
        self,
        agent_id: str,
        name: str,
        summary: str,
        content: str,
        see_also: tuple[str, ...] | None,
        metadata: dict[str, Any],
        current: Skill | None,
    ) -> Skill:
        now = self._clock.now()
        if current is None or current.archived:  # a new skill, or a new life for an archived name
            return Skill(agent_id, name, summary, content, now, now, see_also or (), metadata=metadata)
        return replace(
            current,
            summary=summary,
            content=content,
            see_also=current.see_also if see_also is None else see_also,
            metadata={**current.metadata, **metadata},
            updated_at=now,
        )

    def with_vector(self, skill: Skill, current: Skill | None) -> Skill:
        """``skill`` with the vector of its text: the current one when the text did not change (and, with an
        embedder, it is of the configured model), else a fresh one (None without an embedder, or when embedding
        fails: the next search embeds it)."""
        embedder = self._embedder
        current_model = embedder is None or (current is not None and current.vector_model == embedder.model_id)
        if current is not None and same_text(skill, current) and current_model:
            return replace(skill, vector=current.vector, vector_model=current.vector_model)
        if embedder is None:
            return replace(skill, vector=None, vector_model=None)
        try:
            vector = embedder.embed([embedding_text(skill)[: self.config.max_input_chars]])[0]
        except EmbeddingError as exc:
            log.warning("skill %r saved without a vector (the next search embeds it): %s", skill.name, exc)
            return replace(skill, vector=None, vector_model=None)
        return replace(skill, vector=np.asarray(vector, dtype=np.float32).tobytes(), vector_model=embedder.model_id)

    def archive(self, agent_id: str, name: str) -> Skill:
        """Hide the skill from listings and search (restorable until the purge); an archived one is returned
        as it is. Raises ``NotFound``."""
        current = self.get(agent_id, name)
        if current.archived:
            return current
        now = self._clock.now()
        changed = replace(current, archived_at=now, updated_at=now)
        return self._store.skills.put(changed, change="archived", at=now, expected_version=current.version)

    def restore(self, agent_id: str, name: str, version: int | None = None) -> Skill:
        """Without ``version``: bring an archived skill back (a live one is returned as it is). With it: make
        that version's summary, content and see-also current again (as a new version; an archived skill comes
        back too). Raises ``NotFound``, ``ValidationError`` (past ``max_skills_per_agent``), ``Conflict``."""
        current = self.get(agent_id, name)
        now = self._clock.now()
        if version is None:
            if not current.archived:
                return current
            changed, change = replace(current, archived_at=None, updated_at=now), "restored"
        else:
            old = self._store.skills.version(current.agent_id, current.name, inputs.version(version))
            if old is None:
                raise NotFound(f"skill {name!r} has no version {version}")
            changed = replace(
                current, summary=old.summary, content=old.content, see_also=old.see_also, archived_at=None,
                updated_at=now,
            )  # fmt: skip
            changed, change = self.with_vector(changed, current), "reverted"
        with self._store.transaction():
            if current.archived:
                self.check_room(current.agent_id)
            live = None if current.archived else current.version
            return self._store.skills.put(changed, change=change, at=now, expected_version=live or 0)

    def check_room(self, agent_id: str, *, adding: int = 1) -> None:
        """Refuse ``adding`` more live skills past ``max_skills_per_agent``."""
        most = self.config.max_skills_per_agent
        if self._store.skills.count(agent_id) + adding > most:
            raise ValidationError(
                f"agent {agent_id!r} already holds {most:,} skills, the limit (skills.max_skills_per_agent); "
                "archive some or update an existing one",
                field="name",
            )

    # -- reading ---------------------------------------------------------------------------------------
    def get(self, agent_id: str, name: str) -> Skill:
        """The skill, archived or not. Raises ``NotFound`` (a name of another agent reads as unknown)."""
        agent_id, name = inputs.agent(agent_id), inputs.name(name)
        found = self._store.skills.get(agent_id, name)
        if found is None:
            raise NotFound(f"no skill {name!r} for agent {agent_id!r}")
        return found

    def list(
        self, agent_id: str, prefix: str = "", *, include_archived: bool = False, limit: int = 1000
    ) -> builtins.list[Skill]:
        """Skills named ``prefix`` or under ``prefix/`` (every skill for ""), in name order, at most ``limit``
        (1 to 1000); live ones unless ``include_archived``."""
        agent_id, path = inputs.agent(agent_id), inputs.prefix(prefix)
        limit = inputs.limit(limit)
        if not path:
            return self._store.skills.list(agent_id, include_archived=include_archived, limit=limit)
        own = self._store.skills.get(agent_id, path)
        mine = [own] if own is not None and (include_archived or not own.archived) else []
        under = self._store.skills.list(agent_id, path + "/", include_archived=include_archived, limit=limit)
        return (mine + under)[:limit]

    def page(
        self,
        agent_id: str,
        prefix: str = "",
        *,
        include_archived: bool = False,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> Page[Skill]:
        """``list``, a page at a time: at most ``limit`` (1 to 1000, default 100) skills in name order, and the
        ``next_cursor`` of the next page (None on the last). Keyset on the name (unique, never changed by a
        write), so a walk sees every skill that existed for the whole walk exactly once."""
        agent_id, path = inputs.agent(agent_id), inputs.prefix(prefix)
        count = inputs.limit(100 if limit is None else limit)

        def read(after: tuple[Any, str] | None, n: int) -> builtins.list[Skill]:
            # "path" itself sorts before every "path/...", so it leads the first page only.
            own = self._store.skills.get(agent_id, path) if path and after is None else None
            mine = [own] if own is not None and (include_archived or not own.archived) else []
            below = path + "/" if path else ""
            last = None if after is None else after[1]
            return mine + self._store.skills.list(
                agent_id, below, include_archived=include_archived, limit=n - len(mine), after=last
            )

        listing = filters.fingerprint("skills", agent_id, path, include_archived)
        return filters.keyset_page(read, cursor, count, listing, lambda skill: (None, skill.name))

    def history(self, agent_id: str, name: str) -> builtins.list[SkillVersion]:
        """Every version of the skill, oldest first. Raises ``NotFound``."""
        skill = self.get(agent_id, name)
        return self._store.skills.history(skill.agent_id, skill.name)

    def history_page(
        self, agent_id: str, name: str, *, cursor: str | None = None, limit: int | None = None
    ) -> Page[SkillVersion]:
        """``history`` a page at a time (1 to 1000, default 100), oldest first; ``next_cursor`` for the next
        page (None on the last). Keyset on the version number (append-only): a walk sees every version
        exactly once, new ones at its end. Raises ``NotFound``."""
        count = inputs.limit(100 if limit is None else limit)
        skill = self.get(agent_id, name)

        def read(after: tuple[Any, str] | None, n: int) -> builtins.list[SkillVersion]:
            number = None if after is None else after[0]
            if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
                raise ValidationError("cursor is not a cursor of this listing", field="cursor")
            return self._store.skills.history_page(skill.agent_id, skill.name, number, n)

        return filters.keyset_page(
            read,
            cursor,
            count,
            filters.fingerprint("skill-versions", skill.agent_id, skill.name),
            lambda version: (version.version, str(version.version)),
        )

    def search(self, agent_id: str, query: str, *, limit: int | None = None, prefix: str = "") -> SkillSearch:
        """The live skills (named ``prefix`` or under it) that best match ``query``: BM25 over name, summary
        and content fused with vector similarity (``skills.rank``); BM25 alone without an embedder or when it
        fails (the notes say so). Raises ``ValidationError`` (an empty query among others)."""
        agent_id = inputs.agent(agent_id)
        text = validate.query(query)
        if not text.strip():
            raise ValidationError("query is empty", field="query")
        wanted = inputs.limit(self.config.search_limit if limit is None else limit)
        skills = self.list(agent_id, prefix, limit=inputs.MAX_LIST_LIMIT) if prefix else self.live(agent_id)
        lexical = lexical_scores(skills, text)
        semantic, notes = self._semantic(agent_id, skills, text)
        hits = rank(skills, lexical, semantic, semantic_weight=self.config.semantic_weight, limit=wanted)
        return SkillSearch(hits, "bm25" if semantic is None else "hybrid", tuple(notes))

    def live(self, agent_id: str) -> builtins.list[Skill]:
        """Every live skill of the agent (at most ``max_skills_per_agent``), in name order."""
        return self._store.skills.list(inputs.agent(agent_id), limit=self.config.max_skills_per_agent)

    def _semantic(
        self, agent_id: str, skills: builtins.list[Skill], query: str
    ) -> tuple[dict[str, float] | None, builtins.list[str]]:
        embedder = self._embedder
        if embedder is None:
            return None, ["no embedder is configured: BM25 only"]
        try:
            vectors = self._vectors(skills, embedder)
            query_vector = embed_queries(embedder, [query])[0]
        except EmbeddingError as exc:
            log.warning("skill search: embedding failed, BM25 only: %s", exc)
            return None, [f"the embedder failed ({exc}); these results are BM25 only"]
        return semantic_scores(vectors, np.asarray(query_vector), self._floor(agent_id)), []

    def _vectors(self, skills: builtins.list[Skill], embedder: Embedder) -> dict[str, bytes]:
        """The vector of every skill, embedding (in one batch) and storing those missing or of another model."""
        model = embedder.model_id
        out = {s.name: s.vector for s in skills if s.vector is not None and s.vector_model == model}
        stale = [s for s in skills if s.name not in out]
        if stale:
            made = embedder.embed([embedding_text(s)[: self.config.max_input_chars] for s in stale])
            for skill, vector in zip(stale, made, strict=True):
                blob = np.asarray(vector, dtype=np.float32).tobytes()
                out[skill.name] = blob
                self._store.skills.set_vector(
                    skill.agent_id, skill.name, version=skill.version, vector=blob, model=model
                )
        return out

    # -- what the dream's skill passes read ----------------------------------------------------------
    def record_usage(self, agent_id: str, session_id: str, names: Sequence[str]) -> builtins.list[SkillUsage]:
        """Log that a session used these live skills, and move their ``last_used_at`` (``skills.usage``)."""
        return self.usage_log.record(agent_id, session_id, names)

    def usage(
        self,
        agent_id: str,
        *,
        session_id: str | None = None,
        name: str | None = None,
        days: float | None = None,
        limit: int = 100,
    ) -> builtins.list[SkillUsage]:
        """Usage rows of the last ``days`` (default ``usage_window_days``), newest first."""
        return self.usage_log.rows(agent_id, session_id=session_id, name=name, days=days, limit=limit)

    def sessions_using(self, agent_id: str, name: str, *, days: float | None = None) -> builtins.list[str]:
        """The sessions that used the skill in the window (default 30 days), most recent use first."""
        rows = self.usage_log.rows(agent_id, name=name, days=days, limit=inputs.MAX_LIST_LIMIT)
        return builtins.list(dict.fromkeys(r.session_id for r in rows))

    def usage_counts(self, agent_id: str, *, days: float | None = None) -> dict[str, int]:
        """Uses of every live skill in the last ``days`` (default 30), 0 included, in name order."""
        return self.usage_log.counts(agent_id, self.live(agent_id), days=days)

    def co_usage(self, agent_id: str, *, days: float | None = None, limit: int | None = None) -> builtins.list[CoUsage]:
        """The most co-used pairs of live skills (default: the top 10 of the last 30 days)."""
        return self.usage_log.co_usage(agent_id, days=days, limit=limit)

    def at_risk(self, agent_id: str, *, days: float | None = None) -> builtins.list[AtRisk]:
        """Live skills used in sessions with a correction or a poor/fair session summary, with that context."""
        return self.usage_log.at_risk(agent_id, days=days)

    def prefix_clusters(self, agent_id: str, *, min_size: int = 2) -> dict[str, builtins.list[str]]:
        """Live skills grouped by the first segment of their name (``mcp/*``), groups of at least ``min_size``
        members only, in name order."""
        groups: dict[str, builtins.list[str]] = {}
        for skill in self.live(agent_id):
            head, _, rest = skill.name.partition("/")
            if rest:
                groups.setdefault(head, []).append(skill.name)
        return {head: members for head, members in sorted(groups.items()) if len(members) >= max(min_size, 1)}

    def sparse(self, agent_id: str) -> builtins.list[Skill]:
        """Live skills with less than ``sparse_chars`` of content, created more than ``sparse_days`` ago."""
        now, chars, days = self._clock.now(), self.config.sparse_chars, self.config.sparse_days
        return [s for s in self.live(agent_id) if is_sparse(s.content, s.created_at, now, chars=chars, days=days)]

    def apply_changes(
        self, agent_id: str, to_save: Sequence[SkillDraft], to_delete: Sequence[str] = (), *, source: str = "dream"
    ) -> SkillChanges:
        """Save and archive skills all at once, deletions only with replacements, merges carrying the
        earliest ``created_at`` and latest ``last_used_at`` forward (``skills.changes``)."""
        return apply_changes(self, agent_id, to_save, to_delete, source=source)

    # -- the purge -------------------------------------------------------------------------------------
    def purge_archived(self) -> int:
        """Hard-delete skills (every agent's) archived longer than the archive retention; returns how many.
        A non-positive retention keeps them forever."""
        days = self.config.archive_retention_days
        if days <= 0:
            return 0
        return self._store.skills.purge_archived(self._clock.now() - timedelta(days=days))

    def purge_usage(self) -> int:
        """Hard-delete usage rows (every agent's) older than ``log_retention_days`` (0: kept forever)."""
        days = self.config.log_retention_days
        if days <= 0:
            return 0
        return self._store.skills.purge_usage(self._clock.now() - timedelta(days=days))

    def purge_job(self, now: datetime) -> None:
        """Both purges at most once per ``PURGE_EVERY`` of ``now``: a job for the dream's serve loop."""
        if self._last_purge is None or now - self._last_purge >= PURGE_EVERY:
            self._last_purge = now
            skills, usage = self.purge_archived(), self.purge_usage()
            if skills or usage:
                log.info("purged %d archived skills and %d skill-usage rows", skills, usage)


def _same(current: Skill, draft: Skill) -> bool:
    """Whether a save would store nothing new (the times aside)."""
    keys = ("summary", "content", "see_also", "metadata")
    return all(getattr(current, k) == getattr(draft, k) for k in keys)


def _cas(current: Skill | None, expected: int | None) -> int:
    """The version a write must find: the caller's, else the one just read (0: not live)."""
    if expected is not None:
        return expected
    return 0 if current is None or current.archived else current.version
