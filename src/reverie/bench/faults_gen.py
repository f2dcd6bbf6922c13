"""Seeded generation of hostile input for the fuzz family of ``reverie bench faults``.

``Generator`` makes values from a JSON Schema (OpenAPI's or an agent tool's), usually plausible, often with
one part replaced by something hostile, sometimes hostile as a whole: random JSON shapes, deep nesting, huge
strings, NUL characters, lone surrogates, wrong types, unknown fields, numbers at and past every limit, bad
ids, categories and limits. ``body`` serialises a value the ways a client may (JSON, JSON with lone
surrogates as raw bytes, ``NaN``, truncated JSON, not JSON at all). Everything comes from one
``random.Random``, so a seed replays a run.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

MAX_DEPTH = 6  # of a schema-shaped value; hostile nesting goes far deeper on purpose
HOSTILE_STRINGS = (
    "", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "\ufeff", "\u202egnp.exe", "é" * 3, "🙂" * 50,
    "../../etc/passwd", "..", ".", "/", "a/b", "%00", "%2e%2e%2f", "' OR 1=1 --", "\"; DROP TABLE facts; --",
    "<script>alert(1)</script>", "${jndi:ldap://127.0.0.1/x}", "{{7*7}}", "\r\n\r\nHTTP/1.1 200 OK", "\t",
    "null", "true", "-1", "0", "1e309", "NaN", "Infinity", "9" * 40, "__proto__", "constructor",
    "_reverie_internal", "default", "admin", "*", "?", "#", "&", "=", "\\", "COM1", "con", "\u0085",
)  # fmt: skip
HOSTILE_NUMBERS: tuple[int | float, ...] = (
    -1, 0, 1, -(2**31), 2**31 - 1, 2**53 + 1, 2**63, -(2**63) - 1, 10**30, 1e308, -1e308, 5e-324, 0.5, -0.0,
    1.0000001, 101, 1001, 10_001, 1_000_001,
)  # fmt: skip
KEYS = ("content", "id", "query", "limit", "category", "tags", "", "\x00", "__class__", "extra", "a" * 300)


class Generator:
    """Values for schemas, plausible or hostile, from one seeded RNG. ``pools`` maps a parameter or property
    name (``agent_id``, ``entry_id``, ``key``, ...) to real values of the seeded store, so plausible values
    often name things that exist."""

    def __init__(self, rng: random.Random, components: Mapping[str, Any], pools: Mapping[str, Sequence[str]]):
        self.rng = rng
        self.components = components
        self.pools = pools

    # -- schema-shaped values ------------------------------------------------------------------------------
    def value(self, schema: Mapping[str, Any] | None, name: str = "", depth: int = 0, hostility: float = 0.15) -> Any:
        """A value for ``schema``; each part is hostile with probability ``hostility``."""
        if self.rng.random() < hostility:
            return self.hostile()
        schema = self._resolve(schema or {})
        pool = self.pools.get(name)
        if pool and self.rng.random() < 0.6:
            return self.rng.choice(list(pool))
        if "enum" in schema and schema["enum"]:
            return self.rng.choice(list(schema["enum"]))
        if "const" in schema:
            return schema["const"]
        for key in ("anyOf", "oneOf"):
            if schema.get(key):
                return self.value(self.rng.choice(list(schema[key])), name, depth, hostility)
        if schema.get("allOf"):
            return self.value(schema["allOf"][0], name, depth, hostility)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = self.rng.choice(kind)
        return self._typed(
            str(kind or self.rng.choice(("string", "integer", "object"))), schema, name, depth, hostility
        )

    def _typed(self, kind: str, schema: Mapping[str, Any], name: str, depth: int, hostility: float) -> Any:
        if kind == "string":
            return self._string(schema)
        if kind in ("integer", "number"):
            return self._number(schema, integer=kind == "integer")
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "null":
            return None
        if kind == "array":
            if depth >= MAX_DEPTH:
                return []
            items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {}
            return [self.value(items, name, depth + 1, hostility) for _ in range(self.rng.choice((0, 1, 2, 3, 8)))]
        if kind == "object":
            return self.object(schema, depth, hostility)
        return self.hostile()

    def object(self, schema: Mapping[str, Any], depth: int = 0, hostility: float = 0.15) -> dict[str, Any]:
        schema = self._resolve(schema)
        props = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        out: dict[str, Any] = {}
        if depth >= MAX_DEPTH:
            return out
        for key, sub in props.items():
            if key in required and self.rng.random() < 0.95 or self.rng.random() < 0.5:
                out[key] = self.value(sub, key, depth + 1, hostility)
        if not props and self.rng.random() < 0.5:  # a free-form object (metadata, properties, arguments)
            out.update(
                {self._key(): self.hostile(shallow=self.rng.random() < 0.5) for _ in range(self.rng.randint(1, 4))}
            )
        if self.rng.random() < hostility:
            out[self._key()] = self.hostile(shallow=True)  # an unknown field
        return out

    def _string(self, schema: Mapping[str, Any]) -> str:
        low, high = int(schema.get("minLength", 0)), int(schema.get("maxLength", 80))
        roll = self.rng.random()
        if roll < 0.1:
            return "x" * (high + 1)  # one past the limit
        if roll < 0.2 and low > 0:
            return "x" * (low - 1)  # one short
        if schema.get("pattern"):  # ids, keys, categories: a value of the usual alphabet
            return self.rng.choice(("general", "work/meetings", "user-preferences/timezone", "note", "k-1", "a"))
        words = ("lisbon", "coffee", "meeting", "garden", "user-preferences/timezone", "général", "東京")
        text = " ".join(self.rng.choice(words) for _ in range(self.rng.randint(1, 6)))
        return text[: max(high, 1)] if text else "x"

    def _number(self, schema: Mapping[str, Any], *, integer: bool) -> int | float:
        bounds = [schema.get(k) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")]
        edges = [b + d for b in bounds if isinstance(b, int | float) for d in (-1, 0, 1)]
        pick = self.rng.choice([*edges, *HOSTILE_NUMBERS] if edges else HOSTILE_NUMBERS)
        if integer and isinstance(pick, float) and self.rng.random() < 0.7:
            return int(pick) if abs(pick) < 1e300 else 2**70
        return pick

    def _resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        seen = 0
        while "$ref" in schema and seen < 20:
            name = str(schema["$ref"]).rsplit("/", 1)[-1]
            schema = self.components.get(name, {})
            seen += 1
        return schema

    # -- hostile values ---------------------------------------------------------------------------------------
    def hostile(self, *, shallow: bool = False) -> Any:
        """Anything at all: a hostile string or number, a wrong type, a big or deep shape."""
        roll = self.rng.random()
        if roll < 0.3:
            return self.hostile_string()
        if roll < 0.45:
            return self.rng.choice(HOSTILE_NUMBERS)
        if roll < 0.55:
            return self.rng.choice((None, True, False, [], {}, [None], {"": None}))
        if shallow or roll < 0.75:
            return self.random_json(self.rng.randint(1, 4))
        # Just past the 64-level limit, past pydantic's serialiser (~255), near json's recursion (~1000);
        # deeper still only as raw bytes (``body``).
        return self.nested(self.rng.choice((65, 300, 900)))

    def deepen(self, value: Any) -> Any:
        """``value`` with one field (an object's, or inside an object field) nested past every depth limit
        that matters (see ``hostile``): the rest stays plausible, so the request reaches the route."""
        deep = self.nested(self.rng.choice((65, 300, 900)))
        if not isinstance(value, dict) or not value:
            return deep
        objects = [k for k, v in value.items() if isinstance(v, dict)]  # free-form fields: metadata, properties
        key = self.rng.choice(objects or list(value))
        inner = value[key]
        return {**value, key: {**inner, self._key(): deep} if isinstance(inner, dict) else deep}

    def hostile_string(self) -> str:
        roll = self.rng.random()
        if roll < 0.6:
            return self.rng.choice(HOSTILE_STRINGS)
        if roll < 0.8:
            return self.rng.choice(("x", "é", "\x00", "🙂", "a b ")) * self.rng.choice((1_000, 20_001, 100_000))
        return "".join(chr(self._code_point()) for _ in range(self.rng.randint(1, 40)))

    def _code_point(self) -> int:
        """Any code point: ASCII, the rest of the BMP, a lone surrogate, or beyond the BMP."""
        low, high = self.rng.choice(((0, 0x7F), (0x80, 0xD7FF), (0xD800, 0xDFFF), (0xE000, 0x10FFFF)))
        return self.rng.randint(low, high)

    def random_json(self, depth: int) -> Any:
        if depth <= 0:
            return self.rng.choice((self.hostile_string(), self.rng.choice(HOSTILE_NUMBERS), None, True))
        if self.rng.random() < 0.5:
            return [self.random_json(depth - 1) for _ in range(self.rng.randint(0, 4))]
        return {self._key(): self.random_json(depth - 1) for _ in range(self.rng.randint(0, 4))}

    def nested(self, depth: int) -> Any:
        value: Any = self.rng.choice(("deep", 1, None))
        for _ in range(depth):
            value = [value] if self.rng.random() < 0.5 else {"a": value}
        return value

    def _key(self) -> str:
        return self.rng.choice(KEYS) if self.rng.random() < 0.7 else self.hostile_string()[:100]

    # -- serialising ------------------------------------------------------------------------------------------
    def body(self, value: Any) -> tuple[bytes, str]:
        """``value`` as a request body, and its content type: usually JSON, sometimes broken on purpose."""
        roll = self.rng.random()
        if roll < 0.75:
            return json_bytes(value), "application/json"
        if roll < 0.82:
            return json_bytes(value, ascii_only=False), "application/json"  # lone surrogates as raw bytes
        if roll < 0.86:
            depth = self.rng.choice((1_000, 10_000, 100_000))
            return b"[" * depth + b"]" * depth, "application/json"
        if roll < 0.90:
            text = json_bytes(value)
            return text[: self.rng.randint(0, max(len(text) - 1, 0))], "application/json"  # cut off
        if roll < 0.94:
            return self.rng.randbytes(self.rng.randint(0, 300)), "application/json"
        if roll < 0.97:
            return json_bytes(value), self.rng.choice(("text/plain", "application/x-www-form-urlencoded"))
        return b'{"content": NaN, "limit": Infinity, "importance": -Infinity}', "application/json"


def json_bytes(value: Any, *, ascii_only: bool = True) -> bytes:
    """``value`` as JSON (``NaN`` allowed); without ``ascii_only``, lone surrogates go out as raw bytes."""
    text = json.dumps(value, ensure_ascii=ascii_only, allow_nan=True)
    return text.encode("utf-8", errors="surrogatepass")


def query_text(value: Any) -> str:
    """A generated value as a query-string parameter."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return json.dumps(value, allow_nan=True)
