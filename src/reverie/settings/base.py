"""What every settings section shares, and ``config_from``: a section validated into a service's config value.

Invariants:
- A section is frozen and refuses unknown keys; its defaults are validated like given values (so a default
  read from a service's config dataclass takes the section's type: ``30`` becomes ``30.0`` for a float key).
- A setting that feeds a service's config dataclass has one default: the dataclass's. The section's field
  reads it (``Field(_WORKING.max_ttl_minutes, gt=0, ...)``) and adds only what users see: the range, the
  choices, the description.
- ``config_from`` maps by name, never by hand: a config field takes the section key of its own name (under
  the section's prefix for a sub-config, e.g. ``[memory] dedupe_*`` for ``DedupConfig``). What is not a key
  of the section (a value from another section, a value derived from two) is given by keyword, once, by the
  engine; giving a value the section also holds is an error, so a setting cannot be silently shadowed.
- A config holds no list: a list setting (kept a list in Settings, as users wrote it) arrives as a tuple, a
  list of lists as a tuple of tuples.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C", bound="DataclassInstance")


class Section(BaseModel):
    """One table of ``reverie.toml`` (``[memory]``, ``[recall]``, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


def config_from(config: type[C], section: BaseModel, *, prefix: str = "", **given: Any) -> C:
    """``config`` (a dataclass) built from ``section``: each field takes the key ``prefix + name`` of the
    section if it has one, else the key ``name``, else the ``given`` value, else the field's own default.
    ``given`` naming a field the section already supplies is a ``TypeError``."""
    keys = type(section).model_fields
    values: dict[str, Any] = {}
    for item in fields(config):
        key = next((k for k in (prefix + item.name, item.name) if k in keys), None)
        if key is None:
            continue
        if item.name in given:
            raise TypeError(f"{config.__name__}.{item.name} is the setting {key!r}; it cannot also be given")
        values[item.name] = _frozen(getattr(section, key))
    return config(**values, **given)


def _frozen(value: Any) -> Any:
    return tuple(_frozen(item) for item in value) if isinstance(value, list) else value
