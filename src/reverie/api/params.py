"""Unknown query parameters are refused (the app-wide ``known_query`` dependency).

A misspelt or guessed parameter name (``?q=`` for ``?query=``, ``?limt=10``) used to be ignored, so the call
answered as if it had not been sent: a search became a browse of every entry. Under ``/api/`` a request whose
query names a parameter its route does not take is answered 422 with the parameters it does take.

Invariants:
- The accepted names are the route's own query parameters and those of its dependencies (aliases as sent).
- Only ``/api/`` routes are checked: the console's pages read their forms themselves.
"""

from __future__ import annotations

from weakref import ReferenceType, ref

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

_CHECKED_PREFIX = "/api/"
# id(route) -> (the route, weakly; its query parameter names). The weak reference is checked, so a new route
# that reuses the id of one whose app is gone is never answered with the old route's names.
_ACCEPTED: dict[int, tuple[ReferenceType[APIRoute], frozenset[str]]] = {}


def query_names(dependant: Dependant) -> frozenset[str]:
    """Every query parameter name ``dependant`` and its sub-dependencies read, by the alias a caller sends."""
    names: set[str] = set()
    pending = [dependant]
    while pending:
        current = pending.pop()
        names.update(field.alias for field in current.query_params)
        pending.extend(current.dependencies)
    return frozenset(names)


async def known_query(request: Request) -> None:
    """422 when the query names a parameter the route does not take (``/api/`` routes only)."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not route.path_format.startswith(_CHECKED_PREFIX):
        return
    cached = _ACCEPTED.get(id(route))
    if cached is not None and cached[0]() is route:
        accepted = cached[1]
    else:
        accepted = query_names(route.dependant)
        _ACCEPTED[id(route)] = (ref(route), accepted)
    unknown = sorted({name for name in request.query_params if name not in accepted})
    if not unknown:
        return
    takes = ", ".join(sorted(accepted)) if accepted else "no query parameters"
    raise RequestValidationError(
        [
            {
                "type": "extra_forbidden",
                "loc": ("query", name),
                "msg": f"unknown query parameter {name!r}; this endpoint takes: {takes}",
                "input": request.query_params.get(name),
            }
            for name in unknown
        ]
    )
