"""API keys over HTTP (admin keys only): list, create (the secret is in this one answer), bind to users, revoke.

Keys are never deleted; a revoked key is refused from the moment it is revoked and stays listed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Response
from pydantic import BaseModel, Field, model_validator

from reverie.api.auth import Engine, admin_access
from reverie.api.errors import COMMON_ERRORS, NOT_FOUND
from reverie.api.filters import CursorQuery
from reverie.api.schemas import RequestModel
from reverie.keys.service import ADMIN, MEMORY_READ, MEMORY_WRITE, public_view
from reverie.types import ApiKey

router = APIRouter(prefix="/api/keys", tags=["keys"], responses=COMMON_ERRORS, dependencies=[Depends(admin_access)])


class KeyOut(BaseModel):
    key_id: str
    name: str
    agent_id: str | None = Field(description="None: an admin key (every agent)")
    scopes: list[str]
    admin: bool
    users: list[str] | None = Field(
        description="the users a request with the key may name: user ids, ['*'] any user, [] none; "
        "null: a key from before user binding, which may name any user until it is bound"
    )
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None

    @model_validator(mode="before")
    @classmethod
    def _public_view(cls, value: Any) -> Any:
        # A key is shown through its one public view (never its hash), as the CLI shows it.
        return public_view(value) if isinstance(value, ApiKey) else value


class KeyIn(RequestModel):
    name: str
    agent_id: str | None = Field(None, description="the one agent the key is for; omit for an admin key")
    scopes: list[str] = Field(description=f"{MEMORY_READ}, {MEMORY_WRITE}; an admin key: {ADMIN}")
    users: list[str] = Field(
        default_factory=list,
        description="the users requests with the key may name (user_id): user ids, or ['*'] for any user; "
        "default none. An admin key reaches every user.",
    )


class BindIn(RequestModel):
    users: list[str] = Field(description="the users the key may name from now on: user ids, ['*'] any, [] none")


class NewKeyOut(BaseModel):
    key: KeyOut
    secret: str = Field(description="shown only here: store it now, it cannot be read back")


@router.get("", response_model=list[KeyOut], summary="List API keys")
def list_keys(
    rv: Engine,
    response: Response,
    limit: Annotated[int | None, Query(ge=1, le=1000, description="page: at most this many keys")] = None,
    cursor: CursorQuery = None,
) -> list[KeyOut]:
    """Every key, revoked ones included, oldest first (never a secret or its hash). With ``limit`` or
    ``cursor``: one page, the next page's cursor in the ``X-Next-Cursor`` header (absent on the last page)."""
    if limit is None and cursor is None:
        return [KeyOut.model_validate(k) for k in rv.keys.list()]
    page = rv.keys.page(cursor=cursor, limit=limit)
    if page.next_cursor is not None:
        response.headers["X-Next-Cursor"] = page.next_cursor
    return [KeyOut.model_validate(k) for k in page.items]


@router.post("", status_code=201, response_model=NewKeyOut, summary="Create an API key")
def create_key(rv: Engine, body: KeyIn) -> NewKeyOut:
    """A new key bound to ``agent_id`` with ``scopes`` and the ``users`` it may name, or an admin key (no agent,
    scope ``admin``, every user)."""
    key, secret = rv.keys.create(body.name, agent_id=body.agent_id, scopes=body.scopes, users=body.users)
    return NewKeyOut(key=key, secret=secret)


@router.patch("/{key_id}", response_model=KeyOut, responses=NOT_FOUND, summary="Bind an API key to users")
def bind_key(rv: Engine, key_id: Annotated[str, Path(max_length=200)], body: BindIn) -> KeyOut:
    """Replace the users the key may name (an agent key; an admin key reaches every user: 422). Takes effect on
    the key's next request."""
    return KeyOut.model_validate(rv.keys.bind(key_id, body.users))


@router.delete("/{key_id}", response_model=KeyOut, responses=NOT_FOUND, summary="Revoke an API key")
def revoke_key(rv: Engine, key_id: Annotated[str, Path(max_length=200)]) -> KeyOut:
    """Refuse the key from now on; returns it as stored."""
    return KeyOut.model_validate(rv.keys.revoke(key_id))
