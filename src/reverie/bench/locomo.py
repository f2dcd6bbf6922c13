"""LoCoMo (Maharana et al., ACL 2024): loading, cleaning and scoring, as pure functions.

The scoring protocol is the shared bench README's: one memory per turn; for each question, the top k
memories of that conversation's scope are mapped back to their ``dia_id``s, and

- turn recall@k = |E ∩ top-k| / |E| (E: the question's cleaned evidence ids), averaged over questions;
- session recall@k = the same over the unique session numbers of E and of the top k.

Evidence is dirty in the released file: ``"D8:6; D9:17"`` and ``"D9:1 D4:4"`` hold several ids, ``"D:11:26"``
means ``D11:26``, ``"D30:05"`` means ``D30:5``, ``"D"`` means nothing, and some ids name no turn of the
conversation. Cleaning splits, normalises and drops those; a question left with no evidence is dropped
and counted, so the denominator is always reported. Only ``load_locomo`` reads a file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reverie.errors import ValidationError

CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
USUAL_CATEGORIES = (1, 2, 3, 4)  # what mem0 and most memory papers report
MONTHS = {
    name: number
    for number, name in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
}
_DATE = re.compile(r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*", re.I)
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)")


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    blip_caption: str | None = None


@dataclass(frozen=True, slots=True)
class Session:
    number: int
    date: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]  # cleaned: unique, normalised, all naming turns of the conversation


@dataclass(frozen=True, slots=True)
class DroppedQuestion:
    sample_id: str
    question: str
    category: int
    raw_evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Cleaning:
    """What cleaning did: ids rewritten into canonical form, ids dropped, questions dropped."""

    ids_fixed: int
    ids_dropped: tuple[str, ...]  # "<sample_id>:<token>", in file order
    questions_dropped: tuple[DroppedQuestion, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    cleaning: Cleaning  # what cleaning this conversation's evidence did

    @property
    def turn_count(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


@dataclass(frozen=True, slots=True)
class LoCoMo:
    conversations: tuple[Conversation, ...]

    @property
    def cleaning(self) -> Cleaning:
        return merge_cleaning(self.conversations)


def merge_cleaning(conversations: Iterable[Conversation]) -> Cleaning:
    """The cleaning of several conversations together."""
    done = list(conversations)
    return Cleaning(
        ids_fixed=sum(c.cleaning.ids_fixed for c in done),
        ids_dropped=tuple(i for c in done for i in c.cleaning.ids_dropped),
        questions_dropped=tuple(q for c in done for q in c.cleaning.questions_dropped),
    )


@dataclass(frozen=True, slots=True)
class CleanEvidence:
    ids: tuple[str, ...]
    fixed: int  # tokens that were rewritten (D:11:26, D30:05)
    dropped: tuple[str, ...]  # tokens that are no id, or name no turn


# -- parsing ---------------------------------------------------------------------------------------------
def parse_session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> 2023-05-08 13:56 UTC (the dataset gives no time zone)."""
    match = _DATE.fullmatch(text)
    if match is None:
        raise ValueError(f"not a LoCoMo session date: {text!r}")
    hour, minute, half, day, month_name, year = match.groups()
    month = MONTHS.get(month_name.lower())
    if month is None:
        raise ValueError(f"unknown month {month_name!r} in {text!r}")
    h = int(hour)
    if not 1 <= h <= 12:
        raise ValueError(f"hour {h} is not a 12-hour clock hour in {text!r}")
    h = h % 12 + (12 if half.lower() == "p" else 0)
    return datetime(int(year), month, int(day), h, int(minute), tzinfo=UTC)


def split_evidence(raw: Iterable[str]) -> list[str]:
    """Every token of the evidence list: items are split on ``;`` and on whitespace."""
    return [token for item in raw for token in re.split(r"[;\s]+", item) if token]


def normalise_dia_id(token: str) -> str | None:
    """``D11:26`` as is; ``D:11:26`` -> ``D11:26``; ``D30:05`` -> ``D30:5``; None for what is no id (``D``)."""
    match = _DIA_ID.fullmatch(token.strip())
    if match is None:
        return None
    return f"D{int(match.group(1))}:{int(match.group(2))}"


def clean_evidence(raw: Iterable[str], known: frozenset[str] | set[str]) -> CleanEvidence:
    """Split, normalise, de-duplicate (first occurrence wins) and keep only ids in ``known``."""
    ids: list[str] = []
    dropped: list[str] = []
    fixed = 0
    for token in split_evidence(raw):
        dia_id = normalise_dia_id(token)
        if dia_id is None or dia_id not in known:
            dropped.append(token)
            continue
        if dia_id != token:
            fixed += 1
        if dia_id not in ids:
            ids.append(dia_id)
    return CleanEvidence(tuple(ids), fixed, tuple(dropped))


def session_of(dia_id: str) -> int:
    """The session number of a canonical dia_id: ``D12:3`` -> 12."""
    return int(dia_id[1:].split(":", 1)[0])


def turn_text(turn: Turn) -> str:
    """The memory text of a turn: ``<speaker> said, "<text>"`` and `` and shared <caption>`` for an image."""
    out = f'{turn.speaker} said, "{turn.text}"'
    return f"{out} and shared {turn.blip_caption}" if turn.blip_caption else out


def _sessions(conversation: Mapping[str, Any], sample_id: str) -> tuple[Session, ...]:
    sessions = []
    for key, turns in conversation.items():
        match = _SESSION_KEY.fullmatch(key)
        if match is None:
            continue
        number = int(match.group(1))
        date_text = conversation.get(f"{key}_date_time")
        if not isinstance(date_text, str) or not isinstance(turns, list):
            raise ValueError(f"{sample_id}: {key} has no date or no list of turns")
        parsed = tuple(
            Turn(
                dia_id=str(t["dia_id"]),
                speaker=str(t["speaker"]),
                text=str(t["text"]),
                blip_caption=t.get("blip_caption") or None,
            )
            for t in turns
        )
        sessions.append(Session(number, parse_session_date(date_text), parsed))
    return tuple(sorted(sessions, key=lambda s: s.number))


def parse_conversation(sample: Mapping[str, Any]) -> Conversation:
    """One sample of the file: its sessions (by number) and its questions with cleaned evidence."""
    sample_id = str(sample.get("sample_id", "?"))
    conversation = sample["conversation"]
    sessions = _sessions(conversation, sample_id)
    known = frozenset(t.dia_id for s in sessions for t in s.turns)
    questions: list[Question] = []
    dropped_questions: list[DroppedQuestion] = []
    ids_dropped: list[str] = []
    fixed = 0
    for qa in sample["qa"]:
        raw = tuple(str(e) for e in qa.get("evidence") or ())
        clean = clean_evidence(raw, known)
        fixed += clean.fixed
        ids_dropped.extend(f"{sample_id}:{token}" for token in clean.dropped)
        category = int(qa["category"])
        if clean.ids:
            questions.append(Question(str(qa["question"]), category, clean.ids))
        else:
            dropped_questions.append(DroppedQuestion(sample_id, str(qa["question"]), category, raw))
    return Conversation(
        sample_id=sample_id,
        speaker_a=str(conversation.get("speaker_a", "")),
        speaker_b=str(conversation.get("speaker_b", "")),
        sessions=sessions,
        questions=tuple(questions),
        cleaning=Cleaning(fixed, tuple(ids_dropped), tuple(dropped_questions)),
    )


def parse_locomo(data: object) -> LoCoMo:
    """The whole file, already decoded from JSON. Raises ``ValueError`` (with the sample) on a bad shape."""
    if not isinstance(data, list):
        raise ValueError("a LoCoMo file holds a JSON list of samples")
    conversations: list[Conversation] = []
    for position, sample in enumerate(data):
        try:
            conversations.append(parse_conversation(sample))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"sample {position} is not LoCoMo-shaped: {type(exc).__name__}: {exc}") from None
    return LoCoMo(tuple(conversations))


def load_locomo(path: str | Path) -> LoCoMo:
    """Read and clean a LoCoMo JSON file. Raises ``ValidationError`` (field ``dataset``) when the file is
    missing, is not JSON, or is not LoCoMo-shaped."""
    try:
        data = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
        return parse_locomo(data)
    except (OSError, ValueError) as exc:
        raise ValidationError(f"cannot read the LoCoMo dataset {str(path)!r}: {exc}", field="dataset") from None


# -- scoring ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class QuestionScore:
    category: int
    turn: dict[int, float]  # k -> recall
    session: dict[int, float]


@dataclass(frozen=True, slots=True)
class Row:
    """Mean recalls of one group of questions. The values are None when the group is empty (n = 0)."""

    label: str
    n: int
    turn: dict[int, float | None]
    session: dict[int, float | None]


def turn_recall(evidence: Sequence[str], ranked: Sequence[str], k: int) -> float:
    """|E ∩ top-k| / |E| over dia_ids."""
    wanted = set(evidence)
    if not wanted:
        raise ValueError("a question without evidence cannot be scored")
    return len(wanted & set(ranked[:k])) / len(wanted)


def session_recall(evidence: Sequence[str], ranked: Sequence[str], k: int) -> float:
    """|S(E) ∩ S(top-k)| / |S(E)|, S mapping dia_ids to their unique session numbers."""
    wanted = {session_of(d) for d in evidence}
    if not wanted:
        raise ValueError("a question without evidence cannot be scored")
    return len(wanted & {session_of(d) for d in ranked[:k]}) / len(wanted)


def score_question(question: Question, ranked: Sequence[str], ks: Sequence[int]) -> QuestionScore:
    """Recall of one question at each k; ``ranked`` is the retrieved dia_ids, best first."""
    return QuestionScore(
        category=question.category,
        turn={k: turn_recall(question.evidence, ranked, k) for k in ks},
        session={k: session_recall(question.evidence, ranked, k) for k in ks},
    )


def _row(label: str, scores: Sequence[QuestionScore], ks: Sequence[int]) -> Row:
    n = len(scores)

    def mean(values: Iterable[float]) -> float | None:
        return sum(values) / n if n else None

    return Row(
        label=label,
        n=n,
        turn={k: mean(s.turn[k] for s in scores) for k in ks},
        session={k: mean(s.session[k] for s in scores) for k in ks},
    )


def summarise(scores: Sequence[QuestionScore], ks: Sequence[int]) -> tuple[Row, ...]:
    """One row per category (1-5), then ``1-4`` (the usual protocol) and ``1-5`` (everything)."""
    rows = [_row(f"{c} {name}", [s for s in scores if s.category == c], ks) for c, name in CATEGORIES.items()]
    rows.append(_row("1-4", [s for s in scores if s.category in USUAL_CATEGORIES], ks))
    rows.append(_row("1-5", list(scores), ks))
    return tuple(rows)
