"""EntryFilter's ``archived`` and ``superseded`` flags: checked as ``pinned`` is, through ``entry_filter`` and the
text form the API and the CLI share (``from_text``), and the rule that True reads past the default visibility."""

from __future__ import annotations

import pytest

from reverie.core.filters import entry_filter, fingerprint, from_text, reaches_retired
from reverie.errors import ValidationError
from reverie.types import EntryFilter


@pytest.mark.parametrize("name", ["archived", "superseded"])
@pytest.mark.parametrize("value", [True, False])
def test_a_flag_is_kept_and_makes_the_filter_non_empty(name: str, value: bool) -> None:
    checked = from_text(**{name: value})  # type: ignore[arg-type]
    assert checked is not None and getattr(checked, name) is value
    assert entry_filter(EntryFilter(**{name: value})) == checked  # type: ignore[arg-type]


def test_unset_flags_filter_nothing() -> None:
    assert from_text(archived=None, superseded=None) is None
    assert entry_filter(EntryFilter(archived=None, superseded=None)) is None


@pytest.mark.parametrize("name", ["archived", "superseded"])
@pytest.mark.parametrize("bad", ["yes", 1, 0, "true"])
def test_a_flag_that_is_not_a_bool_names_its_field(name: str, bad: object) -> None:
    with pytest.raises(ValidationError) as raised:
        entry_filter(EntryFilter(**{name: bad}))  # type: ignore[arg-type]
    assert raised.value.field == name
    assert f"{name} must be true, false or unset" in str(raised.value)


def test_the_flags_combine_with_the_other_fields() -> None:
    checked = from_text(tags_any=["work"], pinned=False, archived=True, superseded=False)
    assert checked == EntryFilter(tags_any=("work",), pinned=False, archived=True, superseded=False)


@pytest.mark.parametrize(
    ("flt", "reaches"),
    [
        (None, False),
        (EntryFilter(), False),
        (EntryFilter(archived=True), True),
        (EntryFilter(superseded=True), True),
        (EntryFilter(archived=False, superseded=True), True),
        (EntryFilter(archived=False), False),
        (EntryFilter(superseded=False), False),
        (EntryFilter(archived=False, superseded=False, pinned=True), False),
    ],
)
def test_only_a_true_flag_reads_past_the_default_visibility(flt: EntryFilter | None, reaches: bool) -> None:
    assert reaches_retired(flt) is reaches


def test_a_cursor_of_another_state_belongs_to_another_listing() -> None:
    # The listing's fingerprint holds the filter: a cursor of "only archived" is refused by "only live".
    assert fingerprint(EntryFilter(archived=True)) != fingerprint(EntryFilter(archived=False))
    assert fingerprint(EntryFilter(superseded=True)) != fingerprint(EntryFilter())
