"""API keys through ``rv.keys``: create, authenticate, revoke, scopes; the secret is never stored."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

import reverie
from reverie.clock import FakeClock
from reverie.errors import NotFound, ValidationError
from reverie.keys.service import SCOPES, hash_secret


def _store_bytes(rv: reverie.Reverie) -> bytes:
    db = rv.settings.home / "reverie.db"
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())


def test_create_returns_the_key_and_a_secret_that_authenticates(rv: reverie.Reverie, clock: FakeClock) -> None:
    key, secret = rv.keys.create("support bot", agent_id="bot", scopes=["memory_write", "memory_read"])
    assert re.fullmatch(r"rv_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", secret)
    assert secret.startswith(f"rv_{key.key_id}_")
    assert (key.name, key.agent_id, key.scopes) == ("support bot", "bot", ("memory_read", "memory_write"))
    assert key.created_at == clock.now() and key.revoked_at is None and key.last_used_at is None
    assert key.key_hash == hash_secret(secret)
    found = rv.keys.authenticate(secret)
    assert found is not None and found.key_id == key.key_id
    assert rv.keys.list() == [found]


def test_two_keys_never_share_a_secret(rv: reverie.Reverie) -> None:
    secrets_ = {rv.keys.create(f"k{i}", agent_id="bot", scopes=["memory_read"])[1] for i in range(20)}
    assert len(secrets_) == 20


def test_the_secret_is_never_stored(rv: reverie.Reverie) -> None:
    _, secret = rv.keys.create("ci", agent_id="bot", scopes=["memory_read"])
    _, admin_secret = rv.keys.create("ops", agent_id=None, scopes=["admin"])
    assert rv.keys.authenticate(secret) is not None
    stored = _store_bytes(rv)
    assert hash_secret(secret).encode() in stored  # the hash is there, so we looked in the right place
    for value in (secret, admin_secret):
        token = value[len("rv_") + 12 + 1 :]  # the random part, after rv_<key_id>_
        assert value.encode() not in stored
        assert token.encode() not in stored


def test_a_revoked_key_is_refused(rv: reverie.Reverie, clock: FakeClock) -> None:
    key, secret = rv.keys.create("ci", agent_id="bot", scopes=["memory_read"])
    clock.advance(minutes=5)
    revoked = rv.keys.revoke(key.key_id)
    assert revoked.revoked_at == clock.now()
    assert rv.keys.authenticate(secret) is None
    assert rv.keys.allows(revoked, "memory_read", "bot") is False
    clock.advance(minutes=5)
    assert rv.keys.revoke(key.key_id).revoked_at == revoked.revoked_at  # revoking again changes nothing
    assert rv.keys.has_keys() is False
    assert [k.key_id for k in rv.keys.list()] == [key.key_id]  # kept, for the audit trail


def test_revoking_an_unknown_key_is_not_found(rv: reverie.Reverie) -> None:
    with pytest.raises(NotFound):
        rv.keys.revoke("ffffffffffff")
    with pytest.raises(ValidationError):
        rv.keys.revoke("")


@pytest.mark.parametrize(
    "mangle",
    [
        lambda s: "",
        lambda s: "rv_",
        lambda s: s[:-1],
        lambda s: s + "A",
        lambda s: s[:-1] + ("A" if s[-1] != "A" else "B"),
        lambda s: s.upper(),
        lambda s: "xx" + s[2:],
        lambda s: s.replace("_", "-", 1),
        lambda s: " " + s,
        lambda s: s + "\n",
        lambda s: s[:16] + "x" * 10_000,
        lambda s: "rv_ffffffffffff_" + s[16:],
    ],
)
def test_malformed_or_wrong_secrets_are_refused(rv: reverie.Reverie, mangle: Callable[[str], str]) -> None:
    _, secret = rv.keys.create("ci", agent_id="bot", scopes=["memory_read"])
    assert rv.keys.authenticate(mangle(secret)) is None
    assert rv.keys.authenticate(secret) is not None


def test_a_secret_that_is_not_a_string_is_refused(rv: reverie.Reverie) -> None:
    rv.keys.create("ci", agent_id="bot", scopes=["memory_read"])
    assert rv.keys.authenticate(None) is None  # type: ignore[arg-type]
    assert rv.keys.authenticate(b"rv_") is None  # type: ignore[arg-type]


def test_last_used_at_is_written_at_most_once_a_minute(rv: reverie.Reverie, clock: FakeClock) -> None:
    key, secret = rv.keys.create("ci", agent_id="bot", scopes=["memory_read"])
    first = rv.keys.authenticate(secret)
    assert first is not None and first.last_used_at == clock.now()
    used = clock.now()
    clock.advance(seconds=59)
    assert rv.keys.authenticate(secret) is not None
    assert rv.keys.get(key.key_id).last_used_at == used
    clock.advance(seconds=1)
    again = rv.keys.authenticate(secret)
    assert again is not None and again.last_used_at == used + timedelta(seconds=60)
    assert rv.keys.get(key.key_id).last_used_at == again.last_used_at


def test_allows_admin_everything_and_a_scoped_key_its_own_agent(rv: reverie.Reverie) -> None:
    admin, _ = rv.keys.create("ops", agent_id=None, scopes=["admin"])
    reader, _ = rv.keys.create("reader", agent_id="bot", scopes=["memory_read"])
    writer, _ = rv.keys.create("writer", agent_id="bot", scopes=["memory_read", "memory_write"])
    for scope in SCOPES:
        assert rv.keys.allows(admin, scope, "bot") and rv.keys.allows(admin, scope, "anyone")
    assert rv.keys.allows(reader, "memory_read", "bot")
    assert not rv.keys.allows(reader, "memory_write", "bot")
    assert not rv.keys.allows(reader, "memory_read", "other-bot")
    assert rv.keys.allows(writer, "memory_write", "bot")
    assert not rv.keys.allows(writer, "admin", "bot")
    with pytest.raises(ValidationError) as raised:
        rv.keys.allows(reader, "delete_everything", "bot")
    assert raised.value.field == "scope"
    with pytest.raises(ValidationError):
        rv.keys.allows(reader, "memory_read", "")


@pytest.mark.parametrize(
    ("name", "agent_id", "scopes", "field"),
    [
        ("ops", None, ["memory_read"], "scopes"),  # every agent needs admin
        ("ops", "bot", ["admin"], "agent_id"),  # admin is for every agent
        ("ci", "bot", [], "scopes"),
        ("ci", "bot", ["memory_read", "root"], "scopes"),
        ("ci", "bot", "memory_read", "scopes"),  # a string is not a list of scopes
        ("", "bot", ["memory_read"], "name"),
        ("ci", " bot", ["memory_read"], "agent_id"),
    ],
)
def test_create_validates_its_arguments_and_writes_nothing(
    rv: reverie.Reverie, name: str, agent_id: str | None, scopes: object, field: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        rv.keys.create(name, agent_id=agent_id, scopes=scopes)  # type: ignore[arg-type]
    assert raised.value.field == field
    assert rv.keys.list() == []


def test_has_keys_counts_live_keys(rv: reverie.Reverie) -> None:
    assert rv.keys.has_keys() is False
    key, _ = rv.keys.create("ci", agent_id="bot", scopes=["memory_read"])
    assert rv.keys.has_keys() is True
    rv.keys.revoke(key.key_id)
    assert rv.keys.has_keys() is False


def test_keys_are_shared_by_every_engine_on_the_store(rv: reverie.Reverie, clock: FakeClock) -> None:
    _, secret = rv.keys.create("ci", agent_id="bot", scopes=["memory_read"])
    with reverie.open(rv.settings.home, clock=clock, embedding={"provider": "none"}) as other:
        found = other.keys.authenticate(secret)
        assert found is not None
        other.keys.revoke(found.key_id)
    assert rv.keys.authenticate(secret) is None
