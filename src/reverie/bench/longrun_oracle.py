"""The long-run benchmark's scripted "LLM": a consolidator that mixes good proposals with bad ones.

``Consolidator(stream)`` is a chat handler for ``ScriptedOpenAIServer.answer_chat_with``: it reads the user
message the dream service sends (the prompt format below) and answers what a plausible, imperfect model
would. It knows the truth through the stream (``Stream.fact_of``), so every proposal is of a known kind and
counted, and the benchmark can compare what the host's safeguards did with what they were offered.

Prompts, by their first line:

- ``TASK: memory consolidation``: ``## Entries (n)`` blocks (``[i] id=… category=… importance=0.50 …
  reinforced=3× …`` then the content indented four spaces). Answer ``{"toDelete": [...], "toSave": [...]}``.
- ``TASK: merge repair``: ``## Merged text`` (indented), ``## Sources`` (entry blocks), ``## Missing
  specifics`` (``- <exact string>`` lines). Answer ``{"content": "..."}``.
- ``TASK: cluster rewrite``: ``## Entries (n)`` blocks. Answer ``{"content": "..."}``.

What a consolidation answer holds, each kind counted in ``counts``:

- good merges: the shown entries of one fact (two or more) -> one text with every specific of every source
  (checked with the host's own coverage check; the sources joined verbatim when the rendering would not pass);
- bad merges (rate ``bad_merge`` per merge): the same text with one specific dropped (every occurrence);
- chatter prunes: unprotected chatter ids in ``toDelete``;
- protected prunes (rate ``protected_prune`` per entry): shown entries at or above the high-value floor
  (importance >= 0.80 or reinforced >= 5, read from the block) that no merge of the answer uses, in
  ``toDelete``. Never an unprotected durable entry: the benchmark measures the floor, not a model deleting
  facts the floor does not cover;
- invented ids (rate ``invented`` per answer): a random 12-hex id in ``toDelete`` and, when the answer has a
  merge, in one merge's ``sourceIds``;
- blank saves (rate ``blank`` per answer): a ``toSave`` with blank content and the id of a shown entry the
  answer neither deletes nor merges (so the host's counts stay comparable with these);
- malformed answers (rate ``malformed`` per answer): no JSON object ``extract_json_object`` accepts
  (truncated, not JSON, prose only, unfinished reasoning) -- nothing of it may be applied;
- think noise (rate ``think`` per answer, every task): ``<think>…</think>`` and prose around a valid object.

Repairs put the missing strings back (appended as "Also: …"), except at rate ``repair_fail`` where the text
comes back unchanged. Rewrites answer one text holding every specific of the cluster.

Invariants: deterministic for a given seed and sequence of requests (one ``random.Random``, a lock around
each answer); never reads a clock; never proposes deleting an unprotected non-chatter entry.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from reverie.bench.longrun_data import Stream, is_chatter
from reverie.core.coverage import CoverageSource, check_coverage
from reverie.testing.openai_server import ChatReply

__all__ = ["Consolidator", "OracleCounts", "ShownEntry", "parse_entries"]

_HEADER = re.compile(r"^\[(\d+)\] (.*)$")
_FIELD = re.compile(r"(\w+)=(\S+)")
_INDENT = "    "


@dataclass(frozen=True, slots=True)
class ShownEntry:
    """One entry block of a prompt: what the model is told about it."""

    id: str
    category: str
    importance: float
    reinforced: int
    content: str

    def protected(self, importance: float, reinforcement: int) -> bool:
        return self.importance >= importance or self.reinforced >= reinforcement


@dataclass(slots=True)
class OracleCounts:
    """What the consolidator was asked and what it proposed (ids, merges and answers, as named)."""

    consolidation_calls: int = 0
    repair_calls: int = 0
    rewrite_calls: int = 0
    unknown_calls: int = 0
    entries_shown: int = 0
    good_merges: int = 0
    bad_merges: int = 0
    merge_fallbacks: int = 0  # good merges written as the joined sources (the rendering would not pass)
    chatter_prunes: int = 0
    protected_prunes: int = 0
    invented_ids: int = 0
    blank_saves: int = 0
    malformed: int = 0
    think_noise: int = 0
    repairs_restored: int = 0
    repairs_unchanged: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def parse_entries(text: str) -> list[ShownEntry]:
    """The entry blocks of ``text`` (a header line ``[i] id=… …``, then content lines indented four spaces),
    in order. Blocks without an id are skipped; numbers that do not parse read as 0."""
    entries: list[ShownEntry] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        header = _HEADER.match(lines[i])
        i += 1
        if header is None:
            continue
        fields = dict(_FIELD.findall(header.group(2)))
        body: list[str] = []
        while i < len(lines) and (lines[i].startswith(_INDENT) or lines[i] == ""):
            body.append(lines[i][len(_INDENT) :])
            i += 1
        if "id" in fields:
            entries.append(
                ShownEntry(
                    id=fields["id"],
                    category=fields.get("category", ""),
                    importance=_float(fields.get("importance", "0")),
                    reinforced=int(_float(fields.get("reinforced", "0").rstrip("×x"))),
                    content="\n".join(body).strip("\n"),
                )
            )
    return entries


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def _section(text: str, title: str) -> str:
    """The lines under ``## <title>`` up to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(title)}[^\n]*\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    return match.group(1) if match else ""


def _user_text(body: dict[str, Any]) -> str:
    """The last message whose content starts with ``TASK:`` (else the last user message)."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict) and isinstance(m.get("content"), str)]
    for message in reversed(messages):
        if message["content"].lstrip().startswith("TASK:"):
            return str(message["content"])
    users = [m for m in messages if m.get("role") == "user"]
    return str(users[-1]["content"]) if users else ""


class Consolidator:
    """A chat handler (``answer_chat_with``) answering the dream service's prompts; see the module docstring."""

    def __init__(
        self,
        stream: Stream,
        *,
        seed: int = 7,
        bad_merge: float = 0.2,
        malformed: float = 0.1,
        think: float = 0.2,
        protected_prune: float = 0.3,
        invented: float = 0.2,
        blank: float = 0.1,
        repair_fail: float = 0.2,
        protect_importance: float = 0.80,
        protect_reinforcement: int = 5,
    ) -> None:
        self.stream = stream
        self.rates = {
            "bad_merge": bad_merge, "malformed": malformed, "think": think, "protected_prune": protected_prune,
            "invented": invented, "blank": blank, "repair_fail": repair_fail,
        }  # fmt: skip
        self.protect_importance = protect_importance
        self.protect_reinforcement = protect_reinforcement
        self.counts = OracleCounts()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str | ChatReply:
        text = _user_text(body)
        with self._lock:
            task = text.lstrip().split("\n", 1)[0].strip().lower()
            if task.startswith("task: memory consolidation"):
                return self._consolidate(text)
            if task.startswith("task: merge repair"):
                return self._noisy(self._repair(text))
            if task.startswith("task: cluster rewrite"):
                self.counts.rewrite_calls += 1
                return self._noisy({"content": self._rewrite(parse_entries(_section(text, "Entries")))})
            self.counts.unknown_calls += 1
            return json.dumps({"toDelete": [], "toSave": []})

    def _chance(self, rate: str) -> bool:
        return self._rng.random() < self.rates[rate]

    # -- consolidation ---------------------------------------------------------------------------------

    def _consolidate(self, text: str) -> str:
        self.counts.consolidation_calls += 1
        shown = parse_entries(_section(text, "Entries"))
        self.counts.entries_shown += len(shown)
        if self._chance("malformed"):
            self.counts.malformed += 1
            return self._malformed(shown)
        saves = self._merges(shown)
        merged = {source for save in saves for source in save["sourceIds"]}
        deletes = self._prunes(shown, merged)
        if self._chance("invented"):
            invented = f"{self._rng.getrandbits(48):012x}"
            deletes.append(invented)
            self.counts.invented_ids += 1
            if saves:
                self._rng.choice(saves)["sourceIds"].append(invented)
                self.counts.invented_ids += 1
        # Kept apart from the ids the answer already deletes or merges, so each count stays comparable.
        spare = [entry for entry in shown if entry.id not in merged and entry.id not in deletes]
        if spare and self._chance("blank"):
            target = self._rng.choice(spare)
            saves.append({"content": self._rng.choice(("", "   ", "\n")), "category": target.category,
                          "tags": [], "sourceIds": [target.id]})  # fmt: skip
            self.counts.blank_saves += 1
        return self._noisy({"toDelete": deletes, "toSave": saves})

    def _merges(self, shown: Sequence[ShownEntry]) -> list[dict[str, Any]]:
        """One merge per fact shown at least twice: good, or (rate ``bad_merge``) missing one specific."""
        groups: dict[str, list[ShownEntry]] = {}
        for entry in shown:
            key = self.stream.fact_of(entry.content)
            if key is not None:
                groups.setdefault(key, []).append(entry)
        saves: list[dict[str, Any]] = []
        for key, members in groups.items():
            if len(members) < 2:
                continue
            content = self._merged_text(key, members)
            if self._chance("bad_merge") and (dropped := self._drop_one(key, content)) is not None:
                content = dropped
                self.counts.bad_merges += 1
            else:
                self.counts.good_merges += 1
            fact = self.stream.facts[key]
            saves.append(
                {"content": content, "category": fact.category, "tags": list(fact.tags),
                 "sourceIds": [m.id for m in members]}
            )  # fmt: skip
        return saves

    def _merged_text(self, key: str, members: Sequence[ShownEntry]) -> str:
        """The fact's canonical statement (its extension when a source holds the extra), or the sources
        joined verbatim when that would not keep every specific of the sources."""
        fact = self.stream.facts[key]
        with_extra = any(fact.extra in self.stream.specifics_in(key, m.content) for m in members)
        content = fact.extension if with_extra else fact.statement
        sources = [CoverageSource(m.content, m.category) for m in members]
        if check_coverage(sources, content).ok:
            return content
        self.counts.merge_fallbacks += 1
        return "\n\n".join(dict.fromkeys(m.content.strip() for m in members))

    def _drop_one(self, key: str, content: str) -> str | None:
        """``content`` without every occurrence of one of its fact's specifics; None when it holds none."""
        present = self.stream.specifics_in(key, content)
        if not present:
            return None
        specific = self._rng.choice(present)
        pattern = rf"(?<![^\W_]){re.escape(specific)}(?![^\W_])"
        return re.sub(r"[ \t]{2,}", " ", re.sub(pattern, "", content, flags=re.IGNORECASE)).strip()

    def _prunes(self, shown: Sequence[ShownEntry], merged: set[str]) -> list[str]:
        """Unprotected chatter, always; protected entries no merge uses, at rate ``protected_prune``."""
        deletes: list[str] = []
        for entry in shown:
            if entry.id in merged:
                continue
            if entry.protected(self.protect_importance, self.protect_reinforcement):
                if self._chance("protected_prune"):
                    deletes.append(entry.id)
                    self.counts.protected_prunes += 1
            elif is_chatter(entry.content):
                deletes.append(entry.id)
                self.counts.chatter_prunes += 1
        return deletes

    def _malformed(self, shown: Sequence[ShownEntry]) -> str:
        ids = [entry.id for entry in shown[:3]]
        whole = json.dumps({"toDelete": ids, "toSave": []})
        forms = (
            whole[: max(1, len(whole) // 2)],  # cut off mid-object
            "{toDelete: [" + ", ".join(f"'{i}'" for i in ids) + "], toSave: []}",  # not JSON
            "I looked at the entries and nothing needs to change.",  # no object at all
            "<think>Several of these look like duplicates, let me compare them one by one",  # never answers
        )
        return self._rng.choice(forms)

    def _noisy(self, answer: dict[str, Any]) -> str:
        """The answer as JSON, wrapped at rate ``think`` in reasoning and prose (still one valid object)."""
        payload = json.dumps(answer, ensure_ascii=False)
        if not self._chance("think"):
            return payload
        self.counts.think_noise += 1
        return (
            "<think>\nThe user wants the memory tidied. Some entries restate the same fact, some are noise.\n"
            "I must keep every name, number and date when merging.\n</think>\n"
            f"Here is the result:\n```json\n{payload}\n```\nLet me know if anything should change."
        )

    # -- repair and rewrite ----------------------------------------------------------------------------

    def _repair(self, text: str) -> dict[str, Any]:
        self.counts.repair_calls += 1
        merged = "\n".join(line[len(_INDENT) :] for line in _section(text, "Merged text").splitlines()).strip()
        missing = [line[2:].strip() for line in _section(text, "Missing specifics").splitlines()
                   if line.startswith("- ")]  # fmt: skip
        if not missing or self._chance("repair_fail"):
            self.counts.repairs_unchanged += 1
            return {"content": merged}
        self.counts.repairs_restored += 1
        return {"content": f"{merged.rstrip()} Also: {', '.join(missing)}."}

    def _rewrite(self, shown: Sequence[ShownEntry]) -> str:
        """One fact: its merged text; chatter only: the distinct lines joined; otherwise every entry verbatim."""
        keys = {self.stream.fact_of(entry.content) for entry in shown}
        if len(keys) == 1 and (key := next(iter(keys))) is not None:
            return self._merged_text(key, shown)
        return "\n\n".join(dict.fromkeys(entry.content.strip() for entry in shown))
