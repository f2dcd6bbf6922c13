"""Preference inference's host rules (seed 001, Pass 5; seed 000, "Pass 2 — Preference inference"), pure.

Invariants:
- The sentiment thresholds are the host's, applied to what the model reports: very irritated needs 1
  occurrence, mildly frustrated 2, a minor suggestion (or a sentiment that is missing or unknown) 3. Below
  its threshold a preference is refused, whatever the model thinks of it.
- An inferred preference lives under ``user-preferences/inferred``: a model category below it is kept, any
  other category becomes ``user-preferences/inferred`` (a model cannot file an inference as a stated fact).
- ``touches_sensitive`` is a deterministic keyword check (security, credentials, financial decisions): such a
  preference needs the user's permission before the agent acts on it, whether or not the model flagged it.
"""

from __future__ import annotations

import re

from reverie.core import validate
from reverie.errors import ValidationError

VERY_IRRITATED = "very_irritated"
MILDLY_FRUSTRATED = "mildly_frustrated"
MINOR = "minor"
THRESHOLDS: dict[str, int] = {VERY_IRRITATED: 1, MILDLY_FRUSTRATED: 2, MINOR: 3}
INFERRED_CATEGORY = "user-preferences/inferred"
INFERRED_TAG = "inferred"

# Word stems: "password" matches "passwords", "financ" matches "finance" and "financial".
_SENSITIVE = re.compile(
    r"\b(?:"
    r"passwords?|passphrases?|passcodes?|credentials?|secrets?|api[ -]?keys?|access[ -]tokens?|"
    r"auth(?:entication|entications|orization|orisation)?|"
    r"ssh[ -]keys?|private[ -]keys?|2fa|mfa|otp|logins?|secur\w*|encrypt\w*|"
    r"financ\w*|bank\w*|payments?|pay|paying|credit[ -]cards?|debit|invest\w*|money|budgets?|"
    r"purchas\w*|buy|buying|transfers?|invoices?|tax(?:es)?|salary|crypto\w*|wallets?|stocks?"
    r")\b",
    re.IGNORECASE,
)


def sentiment(raw: object) -> str:
    """The canonical sentiment of a model's label (``"Very irritated"`` -> ``very_irritated``); anything
    unknown (or missing) is ``minor``, the strictest threshold."""
    if not isinstance(raw, str):
        return MINOR
    key = re.sub(r"[\s-]+", "_", raw.strip().lower())
    return key if key in THRESHOLDS else MINOR


def required_occurrences(label: object) -> int:
    """How many occurrences a preference of this sentiment needs before it is written."""
    return THRESHOLDS[sentiment(label)]


def occurrences(value: object) -> int:
    """The model's occurrence count as a whole number: an int, an integral float or a string of digits;
    anything else (a fraction, a negative, text, a bool) is 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value > 0 else 0


def meets_threshold(label: object, count: object) -> bool:
    """Whether ``count`` occurrences reach the threshold of the sentiment ``label``."""
    return occurrences(count) >= required_occurrences(label)


def inferred_category(raw: object) -> str:
    """``raw`` when it is a valid category under ``user-preferences/inferred/``, else that category itself."""
    if not isinstance(raw, str):
        return INFERRED_CATEGORY
    try:
        value = validate.category(raw.strip().lower(), default=INFERRED_CATEGORY)
    except ValidationError:
        return INFERRED_CATEGORY
    return value if value.startswith(INFERRED_CATEGORY + "/") else INFERRED_CATEGORY


def touches_sensitive(*texts: str) -> bool:
    """Whether any text speaks of security, credentials or financial decisions."""
    return any(_SENSITIVE.search(text) for text in texts)
