"""The fuzz family of ``reverie bench faults``: generated requests against a real ``reverie serve`` and
generated calls through the agent tools.

The store is seeded first (entries, sessions, key-value items, skills, graph entities and keys for two agents),
so plausible ids name real things. Four fifths of the inputs are HTTP requests: an operation of the server's
own ``/openapi.json``, its path and query parameters and its body drawn by ``faults_gen.Generator`` (plausible,
partly hostile or wholly hostile; sometimes the wrong method, content type or key). The rest are calls of
``ToolRegistry.call`` in this process, on the same store, with generated arguments for every tool.

A failure is: an answer with a 5xx status, a dropped connection or a request without an answer within
``REQUEST_SECONDS``; a tool call that raises or answers ``kind: internal``; a server that died. The admin key
the fuzz uses is never among the generated key ids, so it cannot revoke itself.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

import reverie
from reverie.bench.faults_common import FamilyResult, Progress, ServeProcess, Target, serving, short
from reverie.bench.faults_gen import Generator, json_bytes, query_text
from reverie.tools import ToolContext, ToolRegistry
from reverie.tools.specs import SPECS

REQUEST_SECONDS = 60.0
URL_VALUE_CHARS = 2_000  # a URL stays under the client's own length limit (64 KiB)
TOOL_SHARE = 5  # one input in five is a tool call
PLAUSIBLE_SHARE = 0.4  # requests valid-looking throughout
DEEP_SHARE = 0.25  # of those, and of tool calls: one field nested past the depth limits
METHODS = ("get", "post", "put", "patch", "delete")
AGENTS = ("default", "a", "b")
LONG = "Step 1: open the client. Step 2: write the message. Step 3: check the recipient. Step 4: press send."


def fuzz(target: Target, inputs: int, rng: random.Random, workdir: Path, progress: Progress) -> FamilyResult:
    result = FamilyResult("fuzz")
    target.write_settings()
    pools, secrets = _seed(target)
    tool_inputs = inputs // TOOL_SHARE
    with serving(target.home, workdir / "fuzz-serve.log") as server:
        schema = httpx.get(f"{server.origin}/openapi.json", timeout=30).json()
        statuses = _fuzz_api(
            server, schema, inputs - tool_inputs, Generator(rng, _components(schema), pools), secrets, result, progress
        )
        result.check(server.proc.poll() is None, "reverie serve died during the fuzz")
    kinds = _fuzz_tools(target, tool_inputs, Generator(rng, {}, pools), result)
    shown = ", ".join(f"{code or 'unsent'} ×{count}" for code, count in sorted(statuses.items()))
    result.note(f"HTTP answers: {shown}")
    result.note("tool results: " + ", ".join(f"{kind} ×{count}" for kind, count in sorted(kinds.items())))
    return result


def _components(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    components = schema.get("components", {})
    return components.get("schemas", {}) if isinstance(components, Mapping) else {}


def _seed(target: Target) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Things to find: entries, a session, kv items, skills, entities and relations, for three agents; the
    pools of real values by parameter name, and the secrets (admin, agent a, agent a read-only)."""
    pools: dict[str, list[str]] = {
        "agent_id": list(AGENTS),
        "session_id": ["s1", "s2"],
        "user_id": ["u1"],
        "key": ["note", "k1"],
        "version": ["1", "2"],
        "namespace": ["session/s1"],
        "name": [spec.name for spec in SPECS],
    }
    with target.open() as rv:
        secrets = {
            "admin": rv.keys.create("fuzz-admin", agent_id=None, scopes=["admin"])[1],
            "agent": rv.keys.create("fuzz-a", agent_id="a", scopes=["memory_read", "memory_write"])[1],
            "reader": rv.keys.create("fuzz-a-read", agent_id="a", scopes=["memory_read"])[1],
        }
        keys = [k.key_id for k in rv.keys.list() if k.name != "fuzz-admin"]
        pools["key_id"] = keys
        for agent in AGENTS:
            scope = reverie.Scope(agent_id=agent)
            for n in range(5):
                saved = rv.memory.save(f"{agent} keeps Lisbon hours, note {n}", scope=scope, dedup=False)
                pools.setdefault("entry_id", []).append(saved.id)
            rv.conversation.add_turn("s1", "user", "hi, I moved to Porto", create=True, agent_id=agent)
            rv.kv.set(agent, "k1", {"theme": "dark"})
            rv.skills.save(agent, "email/send", "Send an email", LONG)
            alice = rv.graph.add_entity(agent, "person", "Alice").entity.entity_id
            rv.graph.add_entity(agent, "city", "Porto")
            rel = rv.graph.add_relation(agent, "Alice", "lives_in", "Porto")
            pools.setdefault("entity_id", []).append(alice)
            pools.setdefault("relation_id", []).append(rel.triple.relation.relation_id)
            feedback = rv.feedback.record(agent, "correction", "s1", comment="it missed Porto")
            pools.setdefault("feedback_id", []).append(feedback.feedback_id)
        pools["name"].append("email/send")
    return pools, secrets


# -- the API ---------------------------------------------------------------------------------------------------
def _operations(schema: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    paths = schema.get("paths", {})
    return [(m.upper(), p, op) for p, item in paths.items() for m, op in item.items() if m in METHODS]


def _fuzz_api(
    server: ServeProcess,
    schema: Mapping[str, Any],
    count: int,
    gen: Generator,
    secrets: Mapping[str, str],
    result: FamilyResult,
    progress: Progress,
) -> Counter[int]:
    operations = _operations(schema)
    statuses: Counter[int] = Counter()
    with httpx.Client(base_url=server.origin, timeout=REQUEST_SECONDS) as client:
        for n in range(1, count + 1):
            method, path, op = gen.rng.choice(operations)
            method, url, headers, body = _request(gen, method, path, op, secrets)
            try:
                response = client.request(method, url, headers=headers, content=body)
            except httpx.LocalProtocolError:  # the client itself refused to send it: nothing reached the server
                statuses[0] += 1
                continue
            except httpx.TimeoutException:
                result.check(False, f"{method} {short(url, 100)}: no answer within {REQUEST_SECONDS:g} s")
                continue
            except httpx.TransportError as exc:
                result.check(False, f"{method} {short(url, 100)}: connection dropped ({type(exc).__name__})")
                continue
            statuses[response.status_code] += 1
            result.check(
                response.status_code < 500,
                f"{method} {short(url, 100)} -> {response.status_code}: {short(response.text, 160)}",
            )
            if n % 2000 == 0:
                progress(f"fuzz: {n} of {count} requests")
    return statuses


def _request(
    gen: Generator, method: str, path: str, op: Mapping[str, Any], secrets: Mapping[str, str]
) -> tuple[str, str, dict[str, str], bytes | None]:
    """One request for ``op``: plausible (``PLAUSIBLE_SHARE``: valid-looking throughout, so it reaches the
    route; some with one field nested past the depth limits), otherwise hostile in some or all of its parts."""
    rng = gen.rng
    plausible = rng.random() < PLAUSIBLE_SHARE
    query: list[tuple[str, str]] = []
    for param in op.get("parameters", []):
        name, where = str(param.get("name")), param.get("in")
        hostility = 0.0 if plausible else rng.choice((0.0, 0.2, 0.5))
        if where == "path":
            value = query_text(gen.value(param.get("schema"), name, hostility=hostility))[:URL_VALUE_CHARS]
            path = path.replace("{" + name + "}", _segment(rng, value, plausible))
        elif where == "query" and (param.get("required") or rng.random() < 0.5):
            value = query_text(gen.value(param.get("schema"), name, hostility=hostility))[:URL_VALUE_CHARS]
            query.append((name, value))
    if not plausible and rng.random() < 0.1:
        query.append((gen.hostile_string()[:50], query_text(gen.hostile(shallow=True))[:URL_VALUE_CHARS]))
    url = path + ("?" + "&".join(f"{_quote(k)}={_quote(v)}" for k, v in query) if query else "")
    secret = secrets["admin"] if plausible else _secret(rng, secrets)
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    body: bytes | None = None
    content = op.get("requestBody", {}).get("content", {})
    if content or (not plausible and rng.random() < 0.05):
        body_schema = content.get("application/json", {}).get("schema", {}) if content else {}
        if plausible:
            value = gen.value(body_schema, hostility=0.0)
            value = gen.deepen(value) if rng.random() < DEEP_SHARE else value
            body, headers["Content-Type"] = json_bytes(value), "application/json"
        else:
            value = gen.value(body_schema, hostility=rng.choice((0.05, 0.2, 0.5, 1.0)))
            body, headers["Content-Type"] = gen.body(value)
    if not plausible and rng.random() < 0.03:
        method = rng.choice([m.upper() for m in METHODS])
    return method, url, headers, body


def _segment(rng: random.Random, value: str, plausible: bool) -> str:
    """A path segment: percent-encoded (slashes too) almost always, raw now and then."""
    if (
        not plausible
        and rng.random() < 0.05
        and value.isascii()
        and value.isprintable()
        and "?" not in value
        and "#" not in value
    ):
        return value or "x"
    return _quote(value) or "%20"


def _quote(value: str) -> str:
    return quote(value.encode("utf-8", errors="surrogatepass"), safe="")


def _secret(rng: random.Random, secrets: Mapping[str, str]) -> str:
    roll = rng.random()
    if roll < 0.85:
        return secrets["admin"]
    if roll < 0.92:
        return secrets["agent"]
    if roll < 0.96:
        return secrets["reader"]
    return rng.choice(("", "rv_000000000000_" + "A" * 43, "not-a-key", "Bearer", "x" * 500))


# -- the tools -------------------------------------------------------------------------------------------------
def _fuzz_tools(target: Target, count: int, gen: Generator, result: FamilyResult) -> Counter[str]:
    kinds: Counter[str] = Counter()
    with target.open() as rv:
        registry = ToolRegistry(rv)
        names = [spec.name for spec in SPECS]
        for _ in range(count):
            name = gen.rng.choice(names) if gen.rng.random() < 0.97 else gen.hostile_string()[:60]
            spec = registry.spec(name)
            arguments = _arguments(gen, spec.input_schema if spec else {})
            ctx = _context(gen.rng)
            try:
                answer = registry.call(name, arguments, ctx)
            except Exception as exc:
                kinds["raised"] += 1
                result.check(False, f"tool {short(name, 40)} raised {type(exc).__name__}: {short(str(exc))}")
                continue
            kind = str(answer.data.get("error", {}).get("kind", "error")) if answer.is_error else "ok"
            kinds[kind] += 1
            result.check(kind != "internal", f"tool {short(name, 40)}: internal error: {short(answer.text)}")
    return kinds


def _arguments(gen: Generator, schema: Mapping[str, Any]) -> Any:
    roll = gen.rng.random()
    if roll < 0.05:
        return gen.hostile()  # not an object at all
    if roll < 0.08:
        return None
    arguments = gen.object(schema, hostility=gen.rng.choice((0.0, 0.1, 0.3, 0.6)))
    return gen.deepen(arguments) if gen.rng.random() < DEEP_SHARE else arguments


def _context(rng: random.Random) -> ToolContext:
    agent = rng.choice(AGENTS)
    session = rng.choice((None, "s1", "s2"))
    user: Sequence[str | None] = (None, None, "u1")
    return ToolContext(agent_id=agent, user_id=rng.choice(user), session_id=session)
