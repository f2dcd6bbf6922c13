"""The clients of ``reverie bench load``: a seeded mix of an agent fleet's everyday calls, driven by N threads
for a bounded time against a target (the HTTP API, or the library in the same process), with the latency of
every call.

The mix (``MIX``, in percent): searches 45, saves 20, per-turn context builds 20, session turns 8, tool-call
records 7, each for a random agent of the plan and (for the session calls) one of its seeded sessions.

Invariants:
- Every save's text is new (it carries a marker no other text has), so an acknowledged save is exactly one
  answer with an entry id, and the harness can look for it afterwards by id and by its text.
- Queries and context messages are rarely repeated (a fact-set query plus a random word), so the query
  embedding cache hides little: each search embeds its query as a live agent's would.
- A failed call is counted and its message kept (the first few); it never stops the client.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

import httpx

import reverie
from reverie.bench.latency import NAMES, NOUNS, PLACES, synthetic_fact
from reverie.bench.recall import percentile

MIX: Mapping[str, int] = {"search": 45, "save": 20, "context": 20, "turn": 8, "tool_call": 7}
OPS = tuple(MIX)
SAVE_CATEGORY = "load/notes"
TOOLS = ("web_search", "calendar_lookup", "send_email", "read_file", "run_query")
KEPT_ERRORS = 5
FILLER = NAMES + NOUNS + PLACES


class Target(Protocol):
    """What one client calls: the API over HTTP, or the library in-process."""

    def search(self, agent: str, query: str) -> None: ...

    def save(self, agent: str, text: str) -> str: ...  # the id of the entry where the fact now lives

    def context(self, agent: str, session: str, message: str) -> None: ...

    def turn(self, agent: str, session: str, text: str) -> None: ...

    def tool_call(self, agent: str, session: str, tool: str) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Plan:
    """What the clients work on: the seeded agents, their sessions, the queries to draw from."""

    agents: tuple[str, ...]
    sessions: Mapping[str, tuple[str, ...]]
    queries: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Saved:
    """An acknowledged save: the agent, the entry id the target answered, the text sent."""

    agent: str
    entry_id: str
    text: str


@dataclass(frozen=True, slots=True)
class OpStats:
    op: str
    count: int  # calls that succeeded
    errors: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float


@dataclass(frozen=True, slots=True)
class RunResult:
    """One timed run of the mix against one target."""

    target: str  # api or library
    clients: int
    seconds: float  # wall time from the common start to the last call's end
    requests: int  # calls that succeeded
    throughput: float  # succeeded calls per second
    ops: tuple[OpStats, ...]
    errors: int
    first_errors: tuple[str, ...]
    acknowledged_saves: int


@dataclass
class _Tally:
    """One client's record: (op, milliseconds) of each success, and its failures."""

    done: list[tuple[str, float]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    saves: list[Saved] = field(default_factory=list)


def query_of(rng: random.Random, plan: Plan) -> str:
    return f"{rng.choice(plan.queries)} {rng.choice(FILLER)}"


def _one_call(target: Target, op: str, rng: random.Random, plan: Plan, marker: str, tally: _Tally) -> None:
    agent = rng.choice(plan.agents)
    session = rng.choice(plan.sessions[agent])
    if op == "search":
        target.search(agent, query_of(rng, plan))
    elif op == "save":
        text = f"{synthetic_fact(rng)} (note {marker})"
        tally.saves.append(Saved(agent, target.save(agent, text), text))
    elif op == "context":
        target.context(agent, session, query_of(rng, plan))
    elif op == "turn":
        target.turn(agent, session, f"{query_of(rng, plan)}, and {synthetic_fact(rng)}")
    else:
        target.tool_call(agent, session, rng.choice(TOOLS))


def _client(
    index: int, target: Target, plan: Plan, seed: int, start: threading.Barrier, deadline: list[float], tally: _Tally
) -> None:
    rng = random.Random(seed * 1000 + index)
    weights = [MIX[op] for op in OPS]
    start.wait()
    serial = 0
    while time.perf_counter() < deadline[0]:
        op = rng.choices(OPS, weights)[0]
        serial += 1
        began = time.perf_counter()
        try:
            _one_call(target, op, rng, plan, f"c{index}n{serial}x{rng.randrange(16**6):06x}", tally)
        except Exception as exc:  # a failed call is a result to report, never the end of the client
            tally.failed.append((op, f"{op}: {type(exc).__name__}: {str(exc)[:300]}"))
        else:
            tally.done.append((op, (time.perf_counter() - began) * 1000))


def drive(name: str, targets: Sequence[Target], plan: Plan, seconds: float, seed: int) -> tuple[RunResult, list[Saved]]:
    """Run the mix on one thread per target for ``seconds``; every target is closed after. Returns the result
    and the acknowledged saves."""
    tallies = [_Tally() for _ in targets]
    start = threading.Barrier(len(targets) + 1)
    deadline = [0.0]
    threads = [
        threading.Thread(target=_client, args=(i, t, plan, seed, start, deadline, tallies[i]), name=f"load-{i}")
        for i, t in enumerate(targets)
    ]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    deadline[0] = began + seconds
    start.wait()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    for target in targets:
        target.close()
    return _result(name, len(targets), wall, tallies), [s for t in tallies for s in t.saves]


def _result(name: str, clients: int, wall: float, tallies: Sequence[_Tally]) -> RunResult:
    done = [item for t in tallies for item in t.done]
    failed = [item for t in tallies for item in t.failed]
    ops = []
    for op in OPS:
        times = [ms for o, ms in done if o == op]
        ops.append(
            OpStats(
                op, len(times), sum(1 for o, _ in failed if o == op), round(percentile(times, 50), 1),
                round(percentile(times, 95), 1), round(percentile(times, 99), 1), round(max(times, default=0.0), 1),
            )
        )  # fmt: skip
    saves = sum(len(t.saves) for t in tallies)
    return RunResult(
        target=name, clients=clients, seconds=round(wall, 2), requests=len(done),
        throughput=round(len(done) / wall, 1) if wall > 0 else 0.0, ops=tuple(ops), errors=len(failed),
        first_errors=tuple(message for _, message in failed[:KEPT_ERRORS]), acknowledged_saves=saves,
    )  # fmt: skip


# -- targets ---------------------------------------------------------------------------------------------
class ApiError(Exception):
    """An answer that was not a success."""


class ApiTarget:
    """One client of the HTTP API: its own connection (kept alive), the admin key as a Bearer token."""

    def __init__(self, origin: str, secret: str, timeout: float = 120.0) -> None:
        self._http = httpx.Client(base_url=origin, headers={"Authorization": f"Bearer {secret}"}, timeout=timeout)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._http.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise ApiError(f"{response.status_code} {response.text[:300]}")
        return response.json()

    @staticmethod
    def _agent(agent: str, rest: str) -> str:
        return f"/api/memory/agents/{quote(agent, safe='')}{rest}"

    def search(self, agent: str, query: str) -> None:
        self._call("GET", self._agent(agent, "/search"), params={"query": query, "limit": 10})

    def save(self, agent: str, text: str) -> str:
        answer = self._call("POST", self._agent(agent, "/entries"), json={"content": text, "category": SAVE_CATEGORY})
        return str(answer["entry"]["id"])

    def context(self, agent: str, session: str, message: str) -> None:
        self._call("POST", self._agent(agent, f"/sessions/{session}/context"), json={"message": message})

    def turn(self, agent: str, session: str, text: str) -> None:
        self._call("POST", self._agent(agent, f"/sessions/{session}/turns"), json={"role": "user", "content": text})

    def tool_call(self, agent: str, session: str, tool: str) -> None:
        body = {"tool": tool, "ok": True, "session_id": session, "arguments": {"q": tool}, "duration_ms": 12.5}
        self._call("POST", self._agent(agent, "/tool-calls"), json=body)

    def close(self) -> None:
        self._http.close()


class LibraryTarget:
    """The same calls through an engine opened in this process (shared by every client, as a server's is)."""

    def __init__(self, rv: reverie.Reverie) -> None:
        self._rv = rv

    def search(self, agent: str, query: str) -> None:
        self._rv.memory.search(query, limit=10, scope=reverie.Scope(agent_id=agent))

    def save(self, agent: str, text: str) -> str:
        return self._rv.memory.save(text, category=SAVE_CATEGORY, scope=reverie.Scope(agent_id=agent)).entry.id

    def context(self, agent: str, session: str, message: str) -> None:
        self._rv.context.build(session, message, agent_id=agent)

    def turn(self, agent: str, session: str, text: str) -> None:
        self._rv.conversation.add_turn(session, "user", text, agent_id=agent)

    def tool_call(self, agent: str, session: str, tool: str) -> None:
        self._rv.tool_calls.record(agent, tool, True, session_id=session, arguments={"q": tool}, duration_ms=12.5)

    def close(self) -> None:
        pass


TargetFactory = Callable[[], Target]
