"""The sample the guided tour (``reverie demo``) runs on: ``sample.toml``, written for the purpose."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True, slots=True)
class SampleFact:
    content: str
    category: str
    tags: tuple[str, ...]
    source: str
    importance: float


def load_sample() -> list[SampleFact]:
    data = tomllib.loads(resources.files(__package__).joinpath("sample.toml").read_text(encoding="utf-8"))
    return [
        SampleFact(
            content=item["content"],
            category=item["category"],
            tags=tuple(item.get("tags", ())),
            source=item.get("source", "user"),
            importance=float(item.get("importance", 0.5)),
        )
        for item in data["fact"]
    ]
