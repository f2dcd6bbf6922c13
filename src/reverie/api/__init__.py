"""The HTTP API (``reverie serve``): FastAPI over one open engine. See docs/api.md.

``create_app(rv)`` builds the ASGI app (any ASGI server can serve it); ``ApiServer(app)`` runs it with
uvicorn on a background thread (127.0.0.1 and a free port by default); ``serve(app, host=..., port=...)``
runs it in the foreground until SIGINT or SIGTERM.
"""

from reverie.api.app import create_app
from reverie.api.server import ApiServer, serve

__all__ = ["ApiServer", "create_app", "serve"]
