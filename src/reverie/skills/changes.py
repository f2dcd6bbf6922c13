"""Applying a set of skill changes at once: what the dream's skill passes (seed 001's Pass 2 to 4) do with an
LLM's ``{"toSave": [...], "toDelete": [...]}`` answer, after validating it.

Invariants (seed 001, "Skill consolidation"):
- Replacement before retirement: deletions are refused unless replacements are saved in the same call
  (``toDelete`` with an empty ``toSave`` is a directive violation: ``ValidationError``, nothing applied).
  "Delete" is archive; a skill both saved and deleted is saved (updated), not archived.
- A saved skill that names ``source_names`` carries forward the earliest ``created_at`` and the latest
  ``last_used_at`` of its sources (and of the live skill it replaces, when it keeps a name), and records
  ``merged_from`` / ``merged_at`` in its metadata; each archived source records ``merged_into``.
- All or nothing: everything is validated first (names, texts, sources and deletions must be live skills
  of the agent), vectors are made before the transaction, and every write happens in one transaction with
  a compare-and-set on the version read, so a bad or racing change applies nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from reverie.clock import Clock
from reverie.errors import NotFound, ValidationError
from reverie.skills import inputs
from reverie.storage.base import Store
from reverie.types import Skill, SkillSaved


class _Config(Protocol):
    @property
    def max_content_chars(self) -> int: ...


class SkillStore(Protocol):
    """What applying changes needs of the skill service (``skills.service.SkillStore``, which calls it)."""

    @property
    def config(self) -> _Config: ...

    @property
    def store(self) -> Store: ...

    @property
    def clock(self) -> Clock: ...

    def with_vector(self, skill: Skill, current: Skill | None) -> Skill: ...

    def check_room(self, agent_id: str, *, adding: int = 1) -> None: ...


@dataclass(frozen=True, slots=True)
class SkillDraft:
    """A skill to save: its text, related names, and the live skills it replaces (merged into it)."""

    name: str
    summary: str
    content: str
    see_also: tuple[str, ...] = ()
    source_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SkillChanges:
    """What ``apply_changes`` did: the saves (created or updated) and the skills it archived."""

    saved: tuple[SkillSaved, ...]
    archived: tuple[Skill, ...]


def _clean(skills: SkillStore, draft: SkillDraft) -> SkillDraft:
    name = inputs.name(draft.name)
    return SkillDraft(
        name=name,
        summary=inputs.summary(draft.summary),
        content=inputs.content(draft.content, max_chars=skills.config.max_content_chars),
        see_also=inputs.see_also(draft.see_also, own=name),
        source_names=inputs.skill_names(draft.source_names, field="source_names"),
    )


def _live(skills: SkillStore, agent_id: str, names: Sequence[str], field: str) -> dict[str, Skill]:
    found: dict[str, Skill] = {}
    for name in names:
        skill = skills.store.skills.get(agent_id, name)
        if skill is None or skill.archived:
            raise NotFound(f"{field}: no live skill {name!r} for agent {agent_id!r}")
        found[name] = skill
    return found


def _merged(
    skills: SkillStore, agent_id: str, draft: SkillDraft, current: Skill | None, sources: dict[str, Skill], source: str
) -> Skill:
    """The skill a draft becomes: times carried forward from what it replaces, metadata recording the merge."""
    now = skills.clock.now()
    kept = current if current is not None and not current.archived else None
    olds = [kept] if kept is not None else []
    olds += [sources[n] for n in draft.source_names if n != draft.name]
    created = min((o.created_at for o in olds), default=now)
    used = [o.last_used_at for o in olds if o.last_used_at is not None]
    metadata = dict(kept.metadata) if kept is not None else {}
    metadata["source"] = source
    merged_from = sorted({n for n in draft.source_names if n != draft.name})
    if merged_from:
        metadata.update(merged_from=merged_from, merged_at=now.isoformat())
    return Skill(
        agent_id=agent_id,
        name=draft.name,
        summary=draft.summary,
        content=draft.content,
        created_at=created,
        updated_at=now,
        see_also=draft.see_also or (kept.see_also if kept is not None else ()),
        last_used_at=max(used, default=None),
        metadata=metadata,
    )


def apply_changes(
    skills: SkillStore,
    agent_id: str,
    to_save: Sequence[SkillDraft],
    to_delete: Sequence[str] = (),
    *,
    source: str = "dream",
) -> SkillChanges:
    """Save ``to_save`` and archive ``to_delete`` for ``agent_id``, all or nothing (see the module
    invariants). Raises ``ValidationError``, ``NotFound``, ``Conflict``."""
    agent_id = inputs.agent(agent_id)
    drafts = [_clean(skills, d) for d in to_save]
    doomed = inputs.skill_names(to_delete, field="to_delete")
    if doomed and not drafts:
        raise ValidationError("deletions need replacement skills saved in the same change", field="to_delete")
    names = [d.name for d in drafts]
    if len(set(names)) != len(names):
        raise ValidationError("a skill name is saved twice in one change", field="to_save")
    sources = _live(skills, agent_id, sorted({n for d in drafts for n in d.source_names}), "source_names")
    deleted = _live(skills, agent_id, [n for n in doomed if n not in names], "to_delete")
    currents = {d.name: skills.store.skills.get(agent_id, d.name) for d in drafts}
    planned = []
    for draft in drafts:
        current = currents[draft.name]
        merged = _merged(skills, agent_id, draft, current, sources, source)
        planned.append((skills.with_vector(merged, current), current))
    now = skills.clock.now()
    into = {n: d.name for d in drafts for n in d.source_names if n != d.name}
    saved: list[SkillSaved] = []
    archived: list[Skill] = []
    with skills.store.transaction():
        for skill, current in planned:
            live = current is not None and not current.archived
            stored = skills.store.skills.put(
                skill, change="merged" if skill.metadata.get("merged_from") else ("edited" if live else "created"),
                at=now, expected_version=current.version if live and current is not None else 0,
            )  # fmt: skip
            saved.append(SkillSaved("updated" if live else "created", stored))
        for name, old in deleted.items():
            metadata = {**old.metadata, "merged_into": into[name]} if name in into else old.metadata
            gone = replace(old, archived_at=now, updated_at=now, metadata=metadata)
            change = "merged" if name in into else "archived"
            archived.append(skills.store.skills.put(gone, change=change, at=now, expected_version=old.version))
        skills.check_room(agent_id, adding=0)  # the saves and archives together stay within the limit
    return SkillChanges(tuple(saved), tuple(archived))
