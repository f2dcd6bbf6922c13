"""Child-process bodies for the crash and concurrency tests.

Run as a script (``python _workers.py MODE ...``) so every worker is a real, separate process with its own
SQLite connections. Each worker uses only Reverie's public API.

Modes:
    crash HOME SEED
        Save forever; print each id on stdout (flushed) only after ``save()`` returned. The parent SIGKILLs it.
    writer HOME AGENT SEED SECONDS IDS_FILE ERRORS_FILE
        Save until SECONDS have passed; append each committed id to IDS_FILE (flushed). Every exception is
        written to ERRORS_FILE with its traceback; exit status 1 if there was any.
    reader HOME SEED SECONDS ERRORS_FILE AGENT:IDS_FILE ...
        Search, browse and get until SECONDS have passed. Ids already in an IDS_FILE were committed, so
        ``get`` must find them in that agent's scope. Exceptions as for ``writer``.
"""

from __future__ import annotations

import random
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import reverie

WORDS = [
    "lisbon",
    "coffee",
    "timezone",
    "meeting",
    "python",
    "sqlite",
    "garden",
    "violin",
    "passport",
    "dentist",
    "budget",
    "marathon",
    "tokyo",
    "deadline",
    "recipe",
    "allergy",
    "birthday",
    "invoice",
    "keyboard",
    "podcast",
]
EXTRA_TEXT = ("Zürich", "café au lait", "東京で会議", "Москва", "🎉 party", "naïve façade", "שלום", "🙂👍")
CATEGORIES = ("user-preferences/location", "work/meetings", "general")
MAX_LOGGED_ERRORS = 20


def sentence(rng: random.Random, n: int) -> str:
    words = rng.sample(WORDS, k=rng.randint(2, 6))
    if rng.random() < 0.3:
        words.append(rng.choice(EXTRA_TEXT))
    return f"fact {n}: " + " ".join(words) + "." + " extra words" * rng.randint(0, 3)


def save_one(rv: reverie.Reverie, rng: random.Random, n: int, agent: str) -> str:
    result = rv.memory.save(
        sentence(rng, n),
        category=rng.choice(CATEGORIES),
        tags=rng.sample(WORDS, k=rng.randint(0, 2)),
        scope=reverie.Scope(agent_id=agent),
        dedup=False,  # durability under kills and contention: every save is its own entry
    )
    return result.id


def crash(home: str, seed: str) -> int:
    rng = random.Random(seed)
    rv = reverie.open(home)
    n = 0
    while True:  # the parent kills us; the store is deliberately never closed
        entry_id = save_one(rv, rng, n, "crash-agent")
        sys.stdout.write(entry_id + "\n")
        sys.stdout.flush()
        n += 1


class ErrorLog:
    """Records exceptions with their tracebacks; the parent fails the test on any."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.count = 0

    def record(self, what: str) -> None:
        self.count += 1
        if self.count <= MAX_LOGGED_ERRORS:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(f"--- {what} (error #{self.count})\n{traceback.format_exc()}\n")

    def run(self, what: str, action: Callable[[], object]) -> bool:
        try:
            action()
        except Exception:
            self.record(what)
            return False
        return True


def writer(home: str, agent: str, seed: str, seconds: str, ids_file: str, errors_file: str) -> int:
    rng = random.Random(seed)
    errors = ErrorLog(errors_file)
    deadline = time.monotonic() + float(seconds)
    with reverie.open(home) as rv, open(ids_file, "a", encoding="utf-8") as ids:
        n = 0
        while time.monotonic() < deadline:
            try:
                entry_id = save_one(rv, rng, n, agent)
            except Exception:
                errors.record(f"{agent}: save #{n}")
            else:
                ids.write(entry_id + "\n")
                ids.flush()
            n += 1
    return 1 if errors.count else 0


def committed_ids(path: Path) -> list[str]:
    """Complete lines only: a line without its newline may still be being written."""
    try:
        data = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [line for line in data.split("\n")[:-1] if line]


def reader_step(rv: reverie.Reverie, rng: random.Random, files: list[tuple[str, Path]]) -> None:
    agent, ids_path = rng.choice(files)
    scope = reverie.Scope(agent_id=agent)
    kind = rng.randrange(4)
    if kind == 0:
        query = " ".join(rng.sample(WORDS, k=rng.randint(1, 3)))
        hits = rv.memory.search(query, limit=rng.randint(1, 50), scope=scope)
        assert all(h.entry.scope.agent_id == agent for h in hits), "search leaked another agent's entry"
    elif kind == 1:
        rv.memory.search(rng.choice(EXTRA_TEXT), category=rng.choice(CATEGORIES), scope=scope)
    elif kind == 2:
        page = rv.memory.browse(category=rng.choice((None, *CATEGORIES)), limit=rng.randint(1, 100), scope=scope)
        assert all(e.scope.agent_id == agent for e in page.entries), "browse leaked another agent's entry"
    else:
        ids = committed_ids(ids_path)
        for entry_id in ids[-5:]:
            entry = rv.memory.get(entry_id, scope=scope)  # committed before we read the file: must exist
            assert entry.id == entry_id and entry.scope.agent_id == agent


def reader(home: str, seed: str, seconds: str, errors_file: str, *agent_files: str) -> int:
    rng = random.Random(seed)
    errors = ErrorLog(errors_file)
    files = [(spec.split(":", 1)[0], Path(spec.split(":", 1)[1])) for spec in agent_files]
    deadline = time.monotonic() + float(seconds)
    steps = 0
    with reverie.open(home) as rv:
        while time.monotonic() < deadline:
            errors.run(f"reader step #{steps}", lambda: reader_step(rv, rng, files))
            steps += 1
    print(f"reader steps: {steps}", flush=True)
    return 1 if errors.count else 0


MODES: dict[str, Callable[..., int]] = {"crash": crash, "writer": writer, "reader": reader}

if __name__ == "__main__":
    sys.exit(MODES[sys.argv[1]](*sys.argv[2:]))
