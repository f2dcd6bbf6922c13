"""The composition root: builds the store and every service from Settings. The only module (with the
interfaces) that reads Settings or the environment."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any

from reverie.clock import Clock, SystemClock
from reverie.memory.longterm import LongTermConfig, LongTermMemory
from reverie.settings import Settings, home_from_env, load_settings
from reverie.storage import is_database_file, is_url, open_store, store_url
from reverie.storage.base import Store, StoreOptions
from reverie.types import HealthReport, PurgeReport, StoreStats


class Reverie:
    """An open memory engine. Use ``reverie.open(...)`` to make one; close it (or use ``with``) when done.

    Attributes:
        memory: long-term memory (save, search, browse, archive, restore, history, ...).
        settings: the settings it was built from.
        store: the storage backend (for tools that need it; services are the usual way in).
    """

    def __init__(self, settings: Settings, *, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        s = settings.store
        url = s.url or store_url(settings.home)
        self.store: Store = open_store(
            url,
            now=self.clock.now(),
            options=StoreOptions(
                busy_timeout_ms=s.busy_timeout_ms,
                lock_wait_seconds=s.lock_wait_seconds,
                synchronous=s.synchronous,
            ),
        )
        m = settings.memory
        self.memory = LongTermMemory(
            self.store,
            self.clock,
            LongTermConfig(
                max_content_chars=m.max_content_chars,
                default_category=m.default_category,
                default_importance=m.default_importance,
                default_tier=m.default_tier,
                search_limit=m.search_limit,
                browse_limit=m.browse_limit,
                archive_retention_days=m.archive_retention_days,
                protect_importance=m.pruning_protection_importance,
                protect_reinforcement=m.pruning_protection_reinforcement_count,
            ),
        )

    @property
    def url(self) -> str:
        return self.store.url

    # -- maintenance -----------------------------------------------------------------------------------
    def stats(self) -> StoreStats:
        return self.store.stats()

    def check(self, *, repair: bool = False) -> HealthReport:
        return self.store.check(repair=repair)

    def backup(self, destination: str | Path) -> Path:
        path = Path(destination).expanduser().resolve()
        self.store.backup(path)
        return path

    def restore_backup(self, source: str | Path) -> Path:
        """Replace the store's contents with a backup. The current contents are first saved to
        ``<home>/backups/pre-restore-<time>.db`` (returned), so a restore never loses anything."""
        stamp = self.clock.now().strftime("%Y%m%dT%H%M%S%fZ")
        safety = self.settings.home / "backups" / f"pre-restore-{stamp}.db"
        self.store.backup(safety)
        self.store.restore_backup(Path(source).expanduser())
        return safety

    def vacuum(self) -> None:
        self.store.vacuum()

    def purge(self, *, agent_id: str | None = None) -> PurgeReport:
        return self.memory.purge(agent_id=agent_id)

    # -- lifecycle -------------------------------------------------------------------------------------
    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Reverie:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def open(target: str | Path | None = None, *, clock: Clock | None = None, **overrides: Any) -> Reverie:  # noqa: A001
    """Open a Reverie store.

    Args:
        target: a data directory (the store is ``<dir>/reverie.db`` and settings ``<dir>/reverie.toml``),
            a ``.db`` file, or a store URL (``sqlite:////abs/path.db``). None: ``REVERIE_HOME`` or
            ``~/.reverie``.
        clock: where time comes from (a ``FakeClock`` in tests); the system clock by default.
        **overrides: settings sections as dicts, e.g. ``memory={"max_content_chars": 5000}``.

    Raises:
        ConfigError: unreadable or invalid settings, or an unknown URL scheme.
        StorageError: the store cannot be opened.
    """
    overrides = dict(overrides)
    if target is None or not (is_url(target) or is_database_file(Path(target).expanduser())):
        home = home_from_env(target)
    else:
        # A URL keeps the default home; a database file's directory is its home (settings beside it).
        home = home_from_env(None) if is_url(target) else Path(target).expanduser().resolve().parent
        overrides["store"] = {**(overrides.get("store") or {}), "url": store_url(target)}
    home.mkdir(parents=True, exist_ok=True)
    return Reverie(load_settings(home, overrides), clock=clock)
