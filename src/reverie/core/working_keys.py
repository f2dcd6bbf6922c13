"""Working-memory key rules (seed 000): namespaces, plain and full keys, the stash root, expiry text. Pure.

A key is a path of ``/``-separated segments. Its first two segments are its namespace: ``session/{id}``,
``patrol/{task}``, ``subagent/{task}``, or ``stash/{run session}`` (written only by the tool-result stash).

Invariants:
- A valid key is at most ``MAX_KEY_CHARS`` characters of ``/``-separated, non-empty segments drawn from
  ``SEGMENT_CHARS``; it has no leading or trailing ``/`` and never contains ``..``.
- A key whose first segment is a namespace root (``ROOTS``) is a *full* key; any other key is *plain* and
  lives under the caller's own namespace. So ``resolve`` is the only place a plain key becomes a full one.
- Every function either returns a clean value or raises ``ValidationError`` naming the field.
"""

from __future__ import annotations

import re

from reverie.errors import ValidationError

CALLER_ROOTS = ("session", "patrol", "subagent")  # the namespaces callers write in
STASH_ROOT = "stash"  # the tool-result stash's; callers read it, never write it
ROOTS = (*CALLER_ROOTS, STASH_ROOT)
MAX_KEY_CHARS = 512
SEGMENT_CHARS = "letters A-Z a-z, digits and - _ . : @ + ="
_SEGMENT = re.compile(r"[A-Za-z0-9_.:@+=-]+")


def segment(value: object, *, field: str) -> str:
    """One path segment (a session id, a task name, a tool-call id)."""
    if isinstance(value, str) and "/" in value:
        raise ValidationError(f"{field} {value[:80]!r} must not contain '/'", field=field)
    return path(value, field=field)


def path(value: object, *, field: str = "key") -> str:
    """A key or namespace path: non-empty segments, no leading or trailing ``/``, no ``..``, the charset."""
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{field} must be a non-empty string", field=field)
    if len(value) > MAX_KEY_CHARS:
        raise ValidationError(f"{field} is {len(value):,} characters; the maximum is {MAX_KEY_CHARS}", field=field)
    if value.startswith("/"):
        raise ValidationError(f"{field} {value[:80]!r} must not start with '/'", field=field)
    if ".." in value:
        raise ValidationError(f"{field} {value[:80]!r} must not contain '..'", field=field)
    for part in value.split("/"):
        if not part:
            raise ValidationError(f"{field} {value[:80]!r} has an empty segment ('//' or a trailing '/')", field=field)
        _check_segment(part, field=field, whole=value)
    return value


def _check_segment(part: str, *, field: str, whole: str) -> None:
    if not _SEGMENT.fullmatch(part):
        raise ValidationError(f"{field} {whole[:80]!r} may use only {SEGMENT_CHARS} in its segments", field=field)
    if not part.strip("."):
        raise ValidationError(f"{field} {whole[:80]!r} has a segment made of dots only", field=field)


def namespace(value: object) -> str:
    """A caller's own namespace: exactly two segments, the first one of ``CALLER_ROOTS``."""
    clean = path(value, field="namespace")
    parts = clean.split("/")
    if len(parts) != 2 or parts[0] not in CALLER_ROOTS:
        roots = ", ".join(f"{r}/{{id}}" for r in CALLER_ROOTS)
        raise ValidationError(f"namespace {clean!r} must be one of {roots} (two segments)", field="namespace")
    return clean


def is_full(key: str) -> bool:
    """Whether a (valid) key names its namespace: its first segment is a root."""
    return key.split("/", 1)[0] in ROOTS


def namespace_of(key: str) -> str:
    """The namespace of a full key: its first two segments."""
    return "/".join(key.split("/", 2)[:2])


def resolve(own: str, key: object) -> str:
    """The full key ``key`` names for a caller in namespace ``own``: a full key as it is (it must name a
    namespace and a name: three segments or more), a plain key under ``own``."""
    clean = path(key)
    if not is_full(clean):
        return path(f"{own}/{clean}")
    if clean.count("/") < 2:
        raise ValidationError(
            f"key {clean!r} starts with a namespace root, so it must be a full key "
            f"(namespace and name, e.g. {clean.split('/')[0]}/<id>/<name>)",
            field="key",
        )
    return clean


def prefix(namespace_path: object) -> str:
    """The key prefix of a namespace parameter (``patrol``, ``subagent/t1``, ``session/abc/drafts``): the
    path with a trailing ``/`` (one given is accepted), its first segment one of ``ROOTS``."""
    if isinstance(namespace_path, str) and namespace_path.endswith("/"):
        namespace_path = namespace_path[:-1]
    clean = path(namespace_path, field="namespace")
    if not is_full(clean):
        raise ValidationError(
            f"namespace {clean!r} must start with one of {', '.join(ROOTS)} (e.g. 'patrol' or 'subagent/t1')",
            field="namespace",
        )
    return clean + "/"


def remaining(seconds: float) -> str:
    """Time left in seed 000's inventory style, cut (never rounded up) to two units: ``45s``, ``4m32s``,
    ``2m01s``, ``4h08m``, ``3d04h``."""
    left = max(0, int(seconds))
    if left < 60:
        return f"{left}s"
    if left < 3600:
        minutes, secs = divmod(left, 60)
        return f"{minutes}m{secs:02d}s"
    if left < 86_400:
        hours, rest = divmod(left, 3600)
        return f"{hours}h{rest // 60:02d}m"
    days, rest = divmod(left, 86_400)
    return f"{days}d{rest // 3600:02d}h"
