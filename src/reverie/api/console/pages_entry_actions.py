"""What the entry page's buttons do: the access check and the edit form, each through the
same engine service the API's route calls, with the same checks.

Invariants:
- The route has already passed ``write_access`` (``memory_write`` on the path's agent); here every change
  also passes ``require_change`` on the entry as it is, exactly as the API's user-memory routes do.
- A form's fields are read as the API reads its JSON body and then handed to the services, whose validation
  decides: a rejected edit raises the service's ``ValidationError`` (a 422 the shell shows in ``#flash``)
  before anything is written, so it changes nothing — the importance is checked before the text is edited.
"""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import Request

from reverie import Reverie
from reverie.api.auth import require_change
from reverie.core import validate
from reverie.errors import ValidationError
from reverie.types import MemoryEntry, Scope


def check_change(request: Request, rv: Reverie, entry_id: str, scope: Scope) -> None:
    """403 unless the caller's key may change the entry (``require_change``). An id the scope does not see
    passes here: the service then answers 404 (or 422 for a malformed id), as the API does."""
    for entry in rv.explorer.entries([entry_id], scope):  # read-only: not counted as a read of the entry
        require_change(request, entry)


def _importance(raw: str | None) -> float | None:
    """The form's importance as the API's ``ImportanceIn`` reads it (a number 0..1); None when left empty."""
    if raw is None or not raw.strip():
        return None
    try:
        number = float(raw)
    except ValueError:
        raise ValidationError("importance must be a number between 0 and 1", field="importance") from None
    return validate.unit_interval(number, name="importance")


def _tags(raw: str | None) -> list[str] | None:
    """Comma-separated tags (the form's one text field) as the list the API's ``EditIn.tags`` carries."""
    return None if raw is None else [tag for tag in (part.strip() for part in raw.split(",")) if tag]


def apply_edit(rv: Reverie, entry_id: str, form: Mapping[str, str], scope: Scope) -> MemoryEntry:
    """The edit form through ``memory.edit`` (content, category, tags: as ``PATCH /entries/{id}``) and, when
    the importance changed, ``memory.set_importance`` (as ``PUT /entries/{id}/importance``). Fields the form
    leaves out stay; an empty content or a bad category is the service's 422."""
    importance = _importance(form.get("importance"))  # first: a bad number must stop the edit before any write
    changed = rv.memory.edit(
        entry_id,
        content=form.get("content"),
        category=form.get("category"),
        tags=_tags(form.get("tags")),
        scope=scope,
    )
    if importance is not None and importance != changed.importance:
        changed = rv.memory.set_importance(entry_id, importance, scope=scope)
    return changed


def form_text(values: Mapping[str, object]) -> dict[str, str]:
    """The text fields of a submitted form (an uploaded file, which no entry form has, is dropped)."""
    return {name: value for name, value in values.items() if isinstance(value, str)}
