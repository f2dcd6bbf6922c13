"""Lazy public names for a package's ``__init__`` (PEP 562), written once for every package that needs them.

``exports(package, table, namespace)`` returns the ``__getattr__`` and ``__dir__`` a package assigns at module
level. ``table`` maps each lazy name to the module that defines it. Invariants: a name outside ``table``
raises ``AttributeError`` as a missing attribute would; a loaded name is stored in the package's namespace,
so the next access is a plain attribute and ``__getattr__`` is not called again; ``dir()`` lists every name
of ``table`` whether loaded or not. The package keeps a ``TYPE_CHECKING`` block mirroring ``table`` for mypy.

It lives in ``reverie.types`` because that is the lowest layer: every package may import it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def exports(
    package: str, table: Mapping[str, str], namespace: MutableMapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``(__getattr__, __dir__)`` pair of ``package``, loading ``table``'s names into ``namespace``."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__
