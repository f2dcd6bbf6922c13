"""Prompts Reverie ships as package data, each overridable by a file of the same name in the data directory.

Invariant: ``read_prompt`` never raises and never returns an empty prompt. An override that is missing,
unreadable, not UTF-8 or blank leaves the shipped default in force (a bad file is logged), so a broken
edit can degrade a prompt's wording but never switch a pass off.
"""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

log = logging.getLogger("reverie.prompts")

MEMORY_RULES = "memory-rules.md"  # the expansion prompt (seed 000's save_memory enrichment)
GRAPH_EXTRACT = "graph-extract.md"  # the knowledge graph's extraction prompt (memory.graph_extraction)
AUTO_MEMORIZE = "auto-memorize.md"  # proactive memory's extraction prompt (memory.proactive)


def default_prompt(name: str) -> str:
    """The shipped text of prompt ``name`` (``MEMORY_RULES``...)."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def read_prompt(name: str, home: Path | None) -> str:
    """Prompt ``name``: ``<home>/<name>`` when that file exists and holds text, else the shipped default.
    Meant to be called on every run, so an edited file takes effect without a restart."""
    if home is not None:
        path = home / name
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("prompt override %s is unreadable (%s); using the built-in prompt", path, exc)
            text = ""
        else:
            if not text.strip():
                log.warning("prompt override %s is empty; using the built-in prompt", path)
        if text.strip():
            return text
    return default_prompt(name)
