"""LLM calls made while a request of an agent's route runs are that agent's (the usage log's ``agent_id``).

``AgentRoute`` is the route class of every router with ``{agent_id}`` in its path: it runs the whole request
inside ``reverie.llm.usage.agent_context(agent_id)``. The context variable is copied into the threadpool
where the (sync) route runs, so compaction, a manual dream or a tool call are attributed, whoever the key.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from contextlib import nullcontext
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from reverie.core import validate
from reverie.errors import ValidationError
from reverie.llm.usage import agent_context

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class AgentRoute(APIRoute):
    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()

        async def attributed(request: Request) -> Response:
            agent = request.path_params.get("agent_id")
            try:
                valid = validate.identifier(agent, name="agent_id")
            except ValidationError:  # the route answers 403 or 422 for it; no LLM call will run
                context: Any = nullcontext()
            else:
                context = agent_context(valid)
            with context:
                return await handler(request)

        return attributed
