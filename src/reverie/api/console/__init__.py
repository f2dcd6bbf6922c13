"""The web console (``/console``): what an agent remembers, why it recalled it, and what the dream did, served by
``reverie serve`` in the same process, with the same keys, over the same engine (docs/console.md, ADR 0014).

How it is put together:
- ``/console`` and every ``/console/<page>`` answer the same static *shell* (no data, no key needed): the
  navigation, the sign-in form and an empty ``<main>``. Its script keeps the API key in the browser's session
  storage and loads the page's *fragment* from ``/console/ui/<page>`` with the key in the ``Authorization``
  header, so the key is never in a URL or a cookie.
- ``/console/ui/...`` is a normal API route: the API's authentication middleware refuses it without a live
  key, the API's access checks decide per agent and scope, and the body cap applies. Fragments are HTML
  rendered by Jinja2 with autoescaping: a memory's content is untrusted text.
- ``/console/static/...`` serves the bundled assets (htmx, uPlot, Cytoscape.js, the console's own script and
  styles): nothing comes from a CDN.
- Every console and docs response carries a strict Content-Security-Policy (no inline script or style);
  every state-changing console request needs the CSRF token of the key that signs in (``security``).
"""

from __future__ import annotations

from reverie.api.console.security import PUBLIC_PREFIXES, CsrfGuard, SecurityHeaders, is_public
from reverie.api.console.shell import install

__all__ = ["PUBLIC_PREFIXES", "CsrfGuard", "SecurityHeaders", "install", "is_public"]
