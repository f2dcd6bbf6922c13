"""How memory ages: importance decay (seed 000), the retention score and reads (seed 003), confidence
(seed 003). Pure: every "now" is an argument; datetimes are timezone-aware.

These are three distinct signals, kept apart on purpose (docs: DESIGN.md):
- *importance* decays on time since the last reinforcement (``last_seen_at``), after a grace period, down
  to a floor; it is the salience the dream passes and the purge floor read.
- *retention* is what the forget sweep reads: it falls with age, rises with reads, and never changes
  search ranking.
- *confidence* says how well supported an entry is; it affects ranking only when a caller weighs it in.

Invariants:
- Importance decay is calendar-time based: a pass applies only the post-grace time not yet applied
  (``decayed_through``), so one pass or many passes over the same span give the same score. Decay never
  raises a score, never takes a score above the floor below it, and leaves a score at or below the floor
  alone. A clock that moves backwards changes nothing.
- Retention is in [0, 1]. Pinned entries score 1 and semantic and procedural entries never fade. Reads only
  ever raise the score.
- Confidence is in [0, ``ceiling``] (0.95): 0 without support, rising with supporting sessions, falling
  with the age of the last support and with contradictions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType

from reverie.types import Tier

_SECONDS_PER_DAY = 86_400.0

TIER_NAMES = ("working", "episodic", "semantic", "procedural")
# Seed 003: "Semantic ... Procedural ... They do not decay."
_DURABLE_TIERS = frozenset({"semantic", "procedural"})


def _days_between(start: datetime, end: datetime) -> float:
    """Calendar days from ``start`` to ``end``; negative when the clock ran backwards."""
    return (end - start).total_seconds() / _SECONDS_PER_DAY


def _halved(days: float, half_life_days: float) -> float:
    """The factor ``0.5 ** (days / half_life)`` for non-negative ``days``."""
    return math.pow(0.5, max(days, 0.0) / half_life_days)


def tier_name(tier: Tier | str) -> str:
    """The canonical lower-case tier name; raises ValueError for anything that is not one of the four."""
    name = str(tier).strip().lower()
    if name not in TIER_NAMES:
        raise ValueError(f"unknown tier {tier!r}; expected one of {', '.join(TIER_NAMES)}")
    return name


# --------------------------------------------------------------------------------------------------
# Importance decay (seed 000, "Importance decay shape")


@dataclass(frozen=True, slots=True)
class ImportanceDecay:
    """Seed 000's defaults: untouched for ``grace_days`` after the last reinforcement, then halved every
    ``half_life_days`` down to ``floor``. ``half_life_days <= 0`` disables decay."""

    grace_days: float = 30.0
    half_life_days: float = 45.0
    floor: float = 0.10

    def __post_init__(self) -> None:
        if self.grace_days < 0:
            raise ValueError("grace_days must not be negative")
        if not 0.0 <= self.floor < 1.0:
            raise ValueError("floor must be in [0, 1)")

    @property
    def enabled(self) -> bool:
        return self.half_life_days > 0


DEFAULT_IMPORTANCE_DECAY = ImportanceDecay()


@dataclass(frozen=True, slots=True)
class DecayStep:
    """The result of one decay pass: the new importance and how far decay has now been applied.

    Store both; pass ``decayed_through`` back into the next pass. ``None`` means no decay applied yet.
    """

    importance: float
    decayed_through: datetime | None


def decay_importance(
    importance: float,
    *,
    last_seen_at: datetime,
    decayed_through: datetime | None,
    now: datetime,
    params: ImportanceDecay = DEFAULT_IMPORTANCE_DECAY,
) -> DecayStep:
    """One importance-decay pass at ``now``.

    Decay runs from ``max(last_seen_at + grace, decayed_through)`` to ``now``, so:
    - time already applied by an earlier pass is never applied twice, and because
      ``0.5^(a/T) · 0.5^(b/T) == 0.5^((a+b)/T)`` (and the floor clamp composes), any cadence of passes over
      the same calendar span yields the same score (within float rounding);
    - a reinforcement (``last_seen_at`` moving forward) restarts the grace period;
    - a score above the floor never drops below it; a score at or below it (a user set 0.05) is left alone;
    - ``now`` at or before that start (still in grace, or a clock that moved backwards) changes nothing;
    - disabled decay (``half_life_days <= 0``) returns the inputs unchanged. Re-enabling it later applies
      the calendar time since ``decayed_through``, as a pass that had not run for a while would.
    """
    unchanged = DecayStep(importance, decayed_through)
    if not params.enabled:
        return unchanged
    start = last_seen_at + timedelta(days=params.grace_days)
    if decayed_through is not None and decayed_through > start:
        start = decayed_through
    if now <= start:
        return unchanged
    if importance <= params.floor:
        # Advancing the mark anyway means a later manual raise is not decayed for time before it.
        return DecayStep(importance, now)
    decayed = importance * _halved(_days_between(start, now), params.half_life_days)
    return DecayStep(max(params.floor, decayed), now)


def days_to_floor(importance: float, params: ImportanceDecay = DEFAULT_IMPORTANCE_DECAY) -> float:
    """Days from the last reinforcement until ``importance`` reaches the floor (seed 000's table: 0.95 →
    ~176, 0.70 → ~156, 0.50 → ~134, 0.30 → ~101 with the defaults).

    0 for a score already at or below the floor; ``math.inf`` when decay is disabled or the floor is 0.
    """
    if importance <= params.floor:
        return 0.0
    if not params.enabled or params.floor <= 0:
        return math.inf
    return params.grace_days + params.half_life_days * math.log2(importance / params.floor)


# --------------------------------------------------------------------------------------------------
# Retention (seed 003, "The retention score")


@dataclass(frozen=True, slots=True)
class RetentionParams:
    """Seed 003's forget-sweep curve.

    - ``default_half_life_days``: the shared curve (about 35 days) used by episodic entries, the only tier
      that ages by default.
    - ``tier_half_life_days``: ``[decay.half_life_days]``, e.g. ``{"working": 7, "episodic": 365}``. Only a
      configured tier uses its own half-life; configuring ``working`` makes working entries age too. A
      value ``<= 0`` stops that tier from ageing. Semantic and procedural entries do not decay, so naming
      them is a configuration error (ValueError), not a silent no-op.
    - ``read_boost``: what one read adds to the read strength, which fades with the tier's half-life and is
      capped at ``max_read_strength``.
    - ``cold_below``: a score strictly below this is cold (0.20).
    """

    default_half_life_days: float = 35.0
    tier_half_life_days: Mapping[str, float] = field(default_factory=dict, hash=False)
    read_boost: float = 0.2
    max_read_strength: float = 1.0
    cold_below: float = 0.20

    def __post_init__(self) -> None:
        configured = {tier_name(tier): float(days) for tier, days in self.tier_half_life_days.items()}
        durable = sorted(_DURABLE_TIERS & configured.keys())
        if durable:
            raise ValueError(f"{', '.join(durable)} entries do not decay; remove their half-life")
        if self.read_boost < 0 or self.max_read_strength < 0:
            raise ValueError("read_boost and max_read_strength must not be negative")
        # A private copy: the caller's dict can change without changing these parameters.
        object.__setattr__(self, "tier_half_life_days", MappingProxyType(configured))

    def half_life_days(self, tier: Tier | str) -> float | None:
        """The half-life this tier ages with, or None when it does not age."""
        name = tier_name(tier)
        if name in _DURABLE_TIERS:
            return None
        if name in self.tier_half_life_days:
            days = self.tier_half_life_days[name]
        elif name == "episodic":
            days = self.default_half_life_days
        else:
            return None  # working: ends with its session unless a half-life is configured
        return days if days > 0 else None


DEFAULT_RETENTION = RetentionParams()


@dataclass(frozen=True, slots=True)
class ReadState:
    """The read accumulator, storable as two columns: ``strength`` as it stood at ``at``.

    Its value at a later time is ``strength`` halved every half-life since ``at`` (see ``read_strength``).
    """

    strength: float
    at: datetime


def _read_half_life(tier: Tier | str, params: RetentionParams) -> float:
    # Reads fade on the tier's own curve; a tier that does not age still needs a curve for its reads.
    for days in (params.half_life_days(tier), params.default_half_life_days):
        if days is not None and days > 0:
            return days
    return 1.0


def read_strength(
    state: ReadState | None, *, now: datetime, tier: Tier | str, params: RetentionParams = DEFAULT_RETENTION
) -> float:
    """What past reads add to the retention score at ``now``: never negative, never more than the stored
    strength (a clock that moved backwards does not grow it)."""
    if state is None:
        return 0.0
    return max(state.strength, 0.0) * _halved(_days_between(state.at, now), _read_half_life(tier, params))


def record_read(
    state: ReadState | None, *, now: datetime, tier: Tier | str, params: RetentionParams = DEFAULT_RETENTION
) -> ReadState:
    """The accumulator after one more read at ``now`` (a search hit, a get, a link followed, an explore).

    The faded strength plus ``read_boost``, capped at ``max_read_strength``; never lower than the faded
    strength. A read stamped earlier than the last one (a clock that moved backwards) keeps the later stamp.
    """
    faded = read_strength(state, now=now, tier=tier, params=params)
    at = now if state is None or now >= state.at else state.at
    strength = min(params.max_read_strength, faded + params.read_boost)
    return ReadState(strength=max(strength, faded), at=at)


def retention_score(
    *,
    tier: Tier | str,
    pinned: bool,
    last_seen_at: datetime,
    reads: ReadState | None,
    flagged_stale: bool,
    now: datetime,
    params: RetentionParams = DEFAULT_RETENTION,
) -> float:
    """The forget-sweep score in [0, 1]; it only drives the sweep and never changes search ranking.

    - pinned: 1 (pinning protects from decay-based removal, and beats a Stale flag: unpin to let it go);
    - flagged Stale or Wrong: 0, the lowest salience, whatever the tier;
    - a tier that does not age (semantic, procedural, working unless configured): 1;
    - otherwise ``0.5^(age / half_life)`` with age from ``last_seen_at`` (which starts at ``created_at``;
      a reinforcement restarts it), plus the faded read strength, capped at 1. Reads only raise it.
    """
    if pinned:
        return 1.0
    if flagged_stale:
        return 0.0
    half_life = params.half_life_days(tier)
    if half_life is None:
        return 1.0
    base = _halved(_days_between(last_seen_at, now), half_life)
    return min(1.0, base + read_strength(reads, now=now, tier=tier, params=params))


def is_cold(score: float, params: RetentionParams = DEFAULT_RETENTION) -> bool:
    """True when the sweep should evict or compact: strictly below ``cold_below`` (0.20)."""
    return score < params.cold_below


# --------------------------------------------------------------------------------------------------
# Confidence (seed 003, "A confidence score per page")


@dataclass(frozen=True, slots=True)
class ConfidenceParams:
    """``confidence = ceiling · support · recency · contradiction_factor^contradictions`` where

    - ``support = s / (s + half_support_sessions)``: half of the ceiling's worth at 2 sessions;
    - ``recency = recency_floor + (1 - recency_floor) · 0.5^(age / recency_half_life_days)``: old support
      still counts for half; ``recency_half_life_days <= 0`` makes recency always 1;
    - each contradiction halves it.
    """

    ceiling: float = 0.95
    half_support_sessions: float = 2.0
    recency_half_life_days: float = 180.0
    recency_floor: float = 0.5
    contradiction_factor: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 < self.ceiling <= 1.0:
            raise ValueError("ceiling must be in (0, 1]")
        if self.half_support_sessions <= 0:
            raise ValueError("half_support_sessions must be positive")
        if not 0.0 <= self.recency_floor <= 1.0 or not 0.0 <= self.contradiction_factor <= 1.0:
            raise ValueError("recency_floor and contradiction_factor must be in [0, 1]")


DEFAULT_CONFIDENCE = ConfidenceParams()


def confidence(
    *,
    supporting_sessions: int,
    last_support_at: datetime | None,
    contradictions: int,
    now: datetime,
    params: ConfidenceParams = DEFAULT_CONFIDENCE,
) -> float:
    """Confidence in [0, ``ceiling``]: 0 with no supporting session; more sessions raise it, an older last
    support and more contradictions lower it (monotone in each). ``last_support_at=None`` with sessions
    counts as support of unknown age (the recency floor); a last support in the future counts as now."""
    if supporting_sessions <= 0:
        return 0.0
    support = supporting_sessions / (supporting_sessions + params.half_support_sessions)
    recency = 1.0
    if last_support_at is None:
        recency = params.recency_floor
    elif params.recency_half_life_days > 0:
        fresh = _halved(_days_between(last_support_at, now), params.recency_half_life_days)
        recency = params.recency_floor + (1.0 - params.recency_floor) * fresh
    penalty = params.contradiction_factor ** max(contradictions, 0)
    return min(params.ceiling, params.ceiling * support * recency * penalty)
