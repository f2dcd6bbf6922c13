"""Settings validate into the services' config dataclasses by name, and each default is declared once: a
config built from default settings is the config's own default."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from reverie.engine import configs
from reverie.graph.extraction import ExtractionConfig
from reverie.memory.dedup import DedupConfig
from reverie.settings import Section, Settings, config_from
from reverie.storage.base import StoreOptions

# The fields no setting of the config's own section gives by its name: derived, or passed from another section.
BUILDERS: list[tuple[Callable[[Settings], Any], frozenset[str]]] = [
    (configs.aging_config, frozenset()),
    (configs.dedup_config, frozenset()),
    (configs.longterm_config, frozenset()),
    (lambda s: configs.working_config(s, 0.5), frozenset()),
    (configs.conversation_config, frozenset()),
    (configs.lint_config, frozenset()),
    (lambda s: configs.recall_config(s, 0.5, None), frozenset({"model_min_similarity"})),
    (configs.dream_config, frozenset()),
    (configs.consolidation_config, frozenset()),
    (configs.audit_config, frozenset()),
    (configs.context_config, frozenset()),
    (configs.kv_config, frozenset()),
    (configs.graph_pass_config, frozenset()),
    (configs.curation_config, frozenset()),
    (configs.graph_config, frozenset()),
    (configs.extraction_config, frozenset()),
    (configs.proactive_config, frozenset()),
    (configs.skills_config, frozenset()),
]


@pytest.fixture
def defaults(monkeypatch: pytest.MonkeyPatch) -> Settings:
    for key in [k for k in os.environ if k.startswith("REVERIE_")]:
        monkeypatch.delenv(key)
    return Settings(embedding={"provider": "hash"})


@pytest.mark.parametrize("build,derived", BUILDERS)
def test_default_settings_build_the_default_config(
    defaults: Settings, build: Callable[[Settings], Any], derived: frozenset[str]
) -> None:
    built = build(defaults)
    own = type(built)()
    differ = [f.name for f in dataclasses.fields(built) if getattr(built, f.name) != getattr(own, f.name)]
    assert set(differ) <= derived, f"{type(built).__name__}: {differ} differ from the dataclass defaults"


def test_a_section_field_takes_its_config_default(defaults: Settings) -> None:
    assert defaults.memory.dedupe_lexical_similarity_threshold == DedupConfig().lexical_similarity_threshold
    assert config_from(StoreOptions, defaults.store) == StoreOptions()


def test_config_from_picks_by_name_under_a_prefix_then_plain() -> None:
    settings = Settings(memory={"dedupe_enabled": False, "on_contradiction": "keep_both"})
    dedup = config_from(DedupConfig, settings.memory, prefix="dedupe_")
    assert dedup.enabled is False and dedup.on_contradiction == "keep_both"  # prefixed, then plain
    assert dedup.candidates == DedupConfig().candidates  # no such setting: the config's own default
    extraction = config_from(ExtractionConfig, settings.graph, prefix="extraction_", batch_size=3)
    assert extraction.max_entities == settings.graph.extraction_max_entities and extraction.batch_size == 3


def test_a_value_given_and_held_by_the_section_is_refused() -> None:
    with pytest.raises(TypeError, match="cannot also be given"):
        config_from(DedupConfig, Settings().memory, prefix="dedupe_", enabled=True)


def test_lists_arrive_as_tuples() -> None:
    class _Lists(Section):
        groups: list[list[str]] = [["a", "b"]]

    @dataclasses.dataclass(frozen=True)
    class _Config:
        groups: tuple[tuple[str, ...], ...] = ()

    assert config_from(_Config, _Lists()).groups == (("a", "b"),)


def test_every_section_is_a_section() -> None:
    for field in Settings.model_fields.values():
        model = field.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            assert issubclass(model, Section)
