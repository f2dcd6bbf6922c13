"""A new, migrated SQLite store made once per test process, for fixtures to copy instead of migrating their own.

Migrating a new store file costs ~0.2 s (some 40 migrations, a transaction each); copying one costs a few ms.
The copy is the store ``open_store`` would have made at the same moment: the template is made by ``open_store``
itself, and it is only used when the fixture's clock reads the template's moment (the migrations record when
they ran). Anything else falls back to a real creation, so a fixture never gets a store from another time.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

from reverie.clock import FakeClock
from reverie.storage import open_store, store_url

MADE_AT = FakeClock().now()  # what a new FakeClock reads: the moment every copied store was made at


def make_template(directory: Path) -> Path:
    """A new store file in ``directory``, migrated at ``MADE_AT`` and closed (its WAL folded into the file)."""
    path = directory / "template.db"
    open_store(store_url(path), now=MADE_AT).close()
    leftovers = [p.name for p in directory.iterdir() if p != path]
    assert not leftovers, f"the template store left files beside it: {leftovers}"
    return path


def new_store_file(template: Path, target: Path, now: datetime) -> Path:
    """Put a copy of ``template`` at ``target`` (a store file that must not exist yet) when ``now`` is
    ``MADE_AT``; otherwise leave ``target`` missing, so opening it creates and migrates it as usual."""
    assert not target.exists(), target
    if now == MADE_AT:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, target)
    return target
