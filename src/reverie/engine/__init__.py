"""The composition root: builds every service from ``Settings`` and holds them (``Reverie``, ``open``).

The only package besides the interfaces that reads ``Settings``; nothing below it imports it.
"""

from reverie.engine.root import Reverie, open

__all__ = ["Reverie", "open"]
