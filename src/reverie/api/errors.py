"""How the HTTP API answers a failure: one JSON shape for every error, and the map from Reverie's errors to
HTTP statuses.

Invariants:
- Client input never produces a 5xx: a rejected argument is 422 naming the field (a body nested too deeply to
  decode too: ``field`` is ``body``), an unknown (or another agent's) id 404, a collision 409, a body over the
  limit 413. A 5xx means the server or what it depends on
  failed: 502 the LLM or the external vector backend, 503 a busy store, an unreachable database (with
  ``Retry-After``) or a failing embedder, 507 a full disk, 500 anything else, which is logged with its
  traceback. A 503 or 507 is an answer like any other: logged in one line, the connection kept.
- Error bodies are ASCII JSON (``\\uXXXX`` escapes), so even text a client sent with a lone surrogate in it
  can be echoed back without failing to encode.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response

from reverie.core.validate import MAX_JSON_DEPTH
from reverie.errors import (
    OTHER_KIND,
    Conflict,
    EmbeddingError,
    LLMError,
    NotFound,
    ReverieError,
    StorageFull,
    StoreBusy,
    StoreUnavailable,
    ValidationError,
    VectorBackendError,
    error_kind,
)

log = logging.getLogger("reverie.api")


class ErrorDetail(BaseModel):
    """One problem a request validation found: where (``loc``) and what (``msg``)."""

    loc: list[str | int]
    msg: str
    type: str


class ErrorBody(BaseModel):
    """Every error the API answers. ``error`` is a short machine-readable kind (``validation``,
    ``unauthorized``, ``forbidden``, ``not_found``, ``conflict``, ``too_large``, ``llm``, ``busy``,
    ``unavailable``, ``storage_full``, …);
    ``field`` names the offending input when one is to blame."""

    error: str
    message: str
    field: str | None = None
    details: list[ErrorDetail] = Field(default_factory=list)


# The statuses every route may answer besides its success, documented in the OpenAPI schema.
COMMON_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "no API key, or not a live one"},
    403: {"model": ErrorBody, "description": "the key lacks the scope, or the path names another agent"},
    413: {"model": ErrorBody, "description": "the request body is over the size limit"},
    422: {"model": ErrorBody, "description": "a parameter or the body was rejected (``field`` says which)"},
    500: {"model": ErrorBody, "description": "a server fault (logged)"},
    502: {"model": ErrorBody, "description": "the LLM or the external vector backend failed"},
    503: {
        "model": ErrorBody,
        "description": "the store is busy, the database cannot be reached (``unavailable``, with a ``Retry-After``"
        " header in seconds) or the embedder failed; retry",
    },
    507: {
        "model": ErrorBody,
        "description": "the disk holding the store is full (``storage_full``): nothing was written; free space, then"
        " retry",
    },
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "no such id visible to this agent (another agent's ids alike)"}
}
CONFLICT: dict[int | str, dict[str, Any]] = {409: {"model": ErrorBody, "description": "the id is taken"}}


class Forbidden(Exception):
    """The caller's key may not do this: a 403."""


class AsciiJSONResponse(JSONResponse):
    """JSON with every non-ASCII character escaped: always encodable, whatever text it echoes."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def error_response(
    status: int, kind: str, message: str, *, field: str | None = None, details: list[ErrorDetail] | None = None
) -> Response:
    body = ErrorBody(error=kind, message=message, field=field, details=details or [])
    return AsciiJSONResponse(body.model_dump(mode="json"), status_code=status)


# Reverie's errors by HTTP status, most specific first (StoreBusy, StoreUnavailable and StorageFull are
# StorageErrors); the kind each answers is ``reverie.errors.error_kind``'s, which the CLI's ``--json`` errors share.
_STATUSES: tuple[tuple[type[ReverieError], int], ...] = (
    (ValidationError, 422),
    (NotFound, 404),
    (Conflict, 409),
    (LLMError, 502),
    (VectorBackendError, 502),
    (StoreBusy, 503),
    (StoreUnavailable, 503),
    (StorageFull, 507),
    (EmbeddingError, 503),
)


def reverie_response(exc: ReverieError, method: str, path: str) -> Response:
    """The answer for one of Reverie's errors raised while serving ``method path`` (the route handlers' and the
    authentication's, which runs before them)."""
    for kind_of, status in _STATUSES:
        if isinstance(exc, kind_of):
            field = exc.field if isinstance(exc, ValidationError) else None
            response = error_response(status, error_kind(exc), str(exc), field=field)
            if isinstance(exc, StoreUnavailable | StorageFull):
                # The operator must act (start the database, free space): one line, never a traceback.
                log.warning("%s %s: %s", method, path, exc)
            if isinstance(exc, StoreUnavailable):
                response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
            return response
    # StorageError, ConfigError, ModelMismatch: the server is not in a state to answer.
    log.error("%s %s failed: %s", method, path, exc, exc_info=exc)
    return error_response(500, OTHER_KIND, f"the server could not complete the request: {type(exc).__name__}")


def _reverie_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ReverieError)
    return reverie_response(exc, request.method, request.url.path)


def _loc(loc: Any) -> list[str | int]:
    return [part if isinstance(part, int) else str(part) for part in loc]


def _request_validation(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    details = [
        ErrorDetail(loc=_loc(e.get("loc", ())), msg=str(e.get("msg", "")), type=str(e.get("type", "")))
        for e in exc.errors()
    ]
    first = details[0] if details else None
    # ("body", "content") -> "content"; ("query", "limit") -> "limit"; a malformed JSON body -> "body".
    field = None
    if first is not None:
        names = [p for p in first.loc[1:] if isinstance(p, str)]
        field = names[-1] if names else str(first.loc[0]) if first.loc else None
    message = f"{'.'.join(map(str, first.loc))}: {first.msg}" if first else "the request was rejected"
    if first is not None and first.type == "json_invalid":
        message = "the body is not valid JSON"
    return error_response(422, "validation", message, field=field, details=details)


_HTTP_KINDS = {
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
}


def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 400:
        return _unreadable_body(exc.__cause__)
    response = error_response(exc.status_code, _HTTP_KINDS.get(exc.status_code, "http"), str(exc.detail))
    if exc.headers:
        response.headers.update(exc.headers)
    return response


def _unreadable_body(cause: BaseException | None) -> Response:
    """FastAPI's one 400: a body it could not decode. That is client input like any other refused value, so
    the documented 422 ``validation`` naming ``body``, never an undocumented kind."""
    if isinstance(cause, RecursionError):
        # Nesting ~1,000 deep exhausts the JSON decoder's recursion: input past the documented limit, like any
        # shallower too-deep value (which the services refuse with the same 422).
        message = f"the body is nested too deeply: JSON values may nest at most {MAX_JSON_DEPTH} levels"
    elif isinstance(cause, ValueError):  # bytes that are not UTF-8: malformed JSON like any other
        message = "the body is not valid JSON (UTF-8)"
    else:
        message = "the body could not be read as JSON"
    return error_response(422, "validation", message, field="body")


def _forbidden(request: Request, exc: Exception) -> Response:
    return error_response(403, "forbidden", str(exc))


def _server_fault(request: Request, exc: Exception) -> Response:
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return error_response(500, "server", "the server failed to handle the request; the fault was logged")


def install(app: FastAPI) -> None:
    """Register the handlers: Reverie's errors, request validation, HTTP errors, and the catch-all."""
    app.add_exception_handler(ReverieError, _reverie_error)
    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Forbidden, _forbidden)
    app.add_exception_handler(Exception, _server_fault)
