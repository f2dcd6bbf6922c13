"""The child-process bodies of ``reverie bench faults``: the processes it kills and starves.

- ``write_forever`` (a multiprocessing target, forked from a fork server that has already imported Reverie,
  so a round costs a fork, not an interpreter start): open the store and save forever, sending each id on
  ``conn`` only after ``save()`` returned, so every id the parent receives was acknowledged.
- ``python -m reverie.bench.faults_child fill HOME MARGIN``: open the store, cap every file this process may
  write at the largest store file's size plus MARGIN bytes (``RLIMIT_FSIZE``, with ``SIGXFSZ`` ignored, so a
  write past the cap fails with EFBIG as on a full disk), then save until saves fail; one JSON line per event
  on stdout (``{"ack": id}``, ``{"error": ...}``, ``{"read": ...}``).
- ``python -m reverie.bench.faults_child limited LIMIT ARGS...``: the same cap, then ``exec`` of
  ``python -m reverie ARGS`` (an ignored signal and a resource limit survive ``exec``).

Uses Reverie's public API only.
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import sys
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

import reverie
from reverie.errors import StorageError

AGENT = "faults"
WORDS = (
    "lisbon", "coffee", "timezone", "meeting", "python", "garden", "violin", "passport", "dentist", "budget",
    "marathon", "tokyo", "deadline", "recipe", "allergy", "birthday", "invoice", "keyboard", "podcast", "canoe",
)  # fmt: skip
EXTRA = ("Zürich", "café au lait", "東京で会議", "Москва", "🎉 party", "naïve façade", "שלום", "🙂👍")
CATEGORIES = ("user-preferences/location", "work/meetings", "general")
FILL_ERRORS = 3  # failed saves before the full-disk writer stops trying
FILL_SAVES = 100_000  # a cap, should the limit never be reached


def sentence(rng: random.Random, label: str) -> str:
    words = rng.sample(WORDS, k=rng.randint(2, 6))
    if rng.random() < 0.3:
        words.append(rng.choice(EXTRA))
    return f"fact {label}: " + " ".join(words) + "." + " more words" * rng.randint(0, 3)


def save_one(rv: reverie.Reverie, rng: random.Random, label: str) -> str:
    result = rv.memory.save(
        sentence(rng, label),
        category=rng.choice(CATEGORIES),
        tags=rng.sample(WORDS, k=rng.randint(0, 2)),
        scope=reverie.Scope(agent_id=AGENT),
        dedup=False,  # durability, not deduplication: every save is its own entry
    )
    return result.id


def write_forever(home: str, seed: str, conn: Connection, errors: str) -> None:
    """Save until killed; ``conn`` receives each acknowledged id. Errors go to the file ``errors``."""
    with open(errors, "w", encoding="utf-8") as err:
        os.dup2(err.fileno(), 2)
    rng = random.Random(seed)
    try:
        rv = reverie.open(home)  # never closed: the parent kills us
        n = 0
        while True:
            entry_id = save_one(rv, rng, f"{seed}-{n}")
            conn.send_bytes(entry_id.encode())
            n += 1
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(3)


def _emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def cap_file_size(limit: int) -> None:
    """Writes past ``limit`` bytes into any file fail with EFBIG (and raise no signal): a full disk."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))


def fill(home: str, margin: str) -> int:
    """Save until the disk is "full"; report every acknowledged id and every failure."""
    rng = random.Random(margin)
    rv = reverie.open(home, embedding={"background": False})
    sizes = [p.stat().st_size for p in Path(home).glob("reverie.db*") if p.is_file()]
    limit = max(sizes, default=0) + int(margin)
    cap_file_size(limit)
    _emit(limit=limit)
    failures = 0
    for n in range(FILL_SAVES):
        text = f"fill {n} {rng.random()}: " + sentence(rng, str(n)) + " padding" * rng.randint(50, 400)
        try:
            result = rv.memory.save(text, scope=reverie.Scope(agent_id=AGENT), dedup=False)
        except Exception as exc:
            failures += 1
            message = str(exc)
            _emit(error=type(exc).__name__, storage_error=isinstance(exc, StorageError), message=message, text=text)
            if failures >= FILL_ERRORS:
                break
            continue
        _emit(ack=result.id)
    try:
        rv.memory.search("lisbon coffee", scope=reverie.Scope(agent_id=AGENT))
        _emit(read="ok")
    except Exception as exc:
        _emit(read=f"{type(exc).__name__}: {exc}")
    try:
        rv.close()
    except Exception as exc:
        _emit(close=f"{type(exc).__name__}: {exc}")
    return 0


def limited(limit: str, *args: str) -> int:
    """``python -m reverie ARGS`` with every file capped at ``limit`` bytes."""
    cap_file_size(int(limit))
    os.execv(sys.executable, [sys.executable, "-m", "reverie", *args])
    return 1  # pragma: no cover - execv does not return


MODES: dict[str, Callable[..., int]] = {"fill": fill, "limited": limited}

if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    sys.exit(MODES[mode](*rest))
