"""Per-agent isolation over HTTP, as a property: three agents with their own keys (one read-only key too) and
an admin key run random sequences of saves, reads, edits, deletes, restores, re-scorings, searches and
browses, each with a random key against a random agent's path and a random entry id (their own, another
agent's, or unknown). No request may ever return or change another agent's data: after every step each
agent's entries in the store equal a model built only from what was allowed to happen to them.

Proactive memory joins in with two users: memorizing (agent memories, and user memories shared by every
agent serving that user), retrieving, listing a user's memory and forgetting. User memory is the one thing
shared: a key names only the users it is bound to (one key any user, one a single user, one none: 403
otherwise), an agent reads and writes the memory of a user its key names but forgets only the entries it wrote
(an admin key any), and nothing else of another agent or another user ever comes back. Each user's memories
in the store equal a model of what was allowed too (with their writers), and an agent's key-value copies
(``memory:{id}``) are of its own entries only."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

import reverie
from reverie.types import is_user_agent, user_agent

from ._api import READ_WRITE, client, memory, serving

WORDS = ("lisbon", "porto", "tea", "coffee", "lantern", "postgres", "maya", "hours", "deploy", "friday")
UNKNOWN = "000000000000"
text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)


@dataclass(frozen=True)
class Fact:
    content: str
    archived: bool = False
    importance: float = 0.5
    writer: str | None = None  # a user memory's writtenBy


@dataclass(frozen=True)
class Key:
    secret: str
    agent: str | None  # None: admin
    writes: bool
    users: tuple[str, ...] = ("*",)  # the users it may name


class Isolation(RuleBasedStateMachine):
    rv: ClassVar[reverie.Reverie]
    http: ClassVar[httpx.Client]
    admin: ClassVar[Key]

    @initialize()
    def agents_and_keys(self) -> None:
        run = uuid.uuid4().hex[:8]  # fresh agents for every example: the store is shared
        self.agents = [f"agent-{n}-{run}" for n in range(3)]
        self.model: dict[str, dict[str, Fact]] = {a: {} for a in self.agents}
        self.users = [f"user-{n}-{run}" for n in range(2)]
        self.user_model: dict[str, dict[str, Fact]] = {u: {} for u in self.users}
        self.proactive: set[str] = set()  # ids of proactive entries (memorized), of agents and users alike
        self.keys = [self.admin]
        bindings: list[tuple[str, ...]] = [("*",), (self.users[0],), ()]  # any user, one user, none
        for agent, users in zip(self.agents, bindings, strict=True):
            secret = self.rv.keys.create("rw", agent_id=agent, scopes=READ_WRITE, users=list(users))[1]
            self.keys.append(Key(secret, agent, True, users))
        read_only = self.rv.keys.create("ro", agent_id=self.agents[0], scopes=["memory_read"], users=["*"])[1]
        self.keys.append(Key(read_only, self.agents[0], False))

    # -- helpers ---------------------------------------------------------------------------------------------
    def _request(self, key: Key, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.request(method, path, headers={"Authorization": f"Bearer {key.secret}"}, **kwargs)

    def _allowed(self, key: Key, agent: str, *, write: bool) -> bool:
        return key.agent is None or (key.agent == agent and (key.writes or not write))

    def _names(self, key: Key, user: str | None) -> bool:
        """Whether the key may name ``user`` (None names nobody)."""
        return user is None or key.agent is None or "*" in key.users or user in key.users

    def _owner(self, entry_id: str) -> str | None:
        return next((a for a, facts in self.model.items() if entry_id in facts), None)

    def _pick(self, data: st.DataObject) -> tuple[Key, str, str]:
        key = data.draw(st.sampled_from(self.keys), label="key")
        agent = data.draw(st.sampled_from(self.agents), label="path agent")
        ids = sorted(i for facts in [*self.model.values(), *self.user_model.values()] for i in facts)
        entry_id = data.draw(st.sampled_from([*ids, UNKNOWN]), label="entry")
        return key, agent, entry_id

    def _expect(self, response: httpx.Response, key: Key, agent: str, entry_id: str, *, write: bool) -> bool:
        """Check the status; True when the request was allowed and the entry is the path agent's."""
        if not self._allowed(key, agent, write=write):
            assert response.status_code == 403, response.text
            return False
        if self._owner(entry_id) != agent:
            assert response.status_code == 404, response.text
            for other, facts in [*self.model.items(), *self.user_model.items()]:  # nothing leaks into the message
                if other != agent and entry_id in facts:
                    assert facts[entry_id].content not in response.text
            return False
        assert response.status_code == 200, response.text
        return True

    def _check_entry(self, agent: str, body: dict[str, Any]) -> None:
        assert body["agent_id"] == agent
        fact = self.model[agent][body["id"]]
        assert (body["content"], body["archived"], body["importance"]) == (
            fact.content,
            fact.archived,
            fact.importance,
        )

    # -- rules -----------------------------------------------------------------------------------------------
    @rule(data=st.data(), content=text)
    def save(self, data: st.DataObject, content: str) -> None:
        key = data.draw(st.sampled_from(self.keys), label="key")
        agent = data.draw(st.sampled_from(self.agents), label="path agent")
        response = self._request(key, "POST", memory(agent, "/entries"), json={"content": content, "dedup": False})
        if not self._allowed(key, agent, write=True):
            assert response.status_code == 403, response.text
            return
        assert response.status_code == 201, response.text
        entry = response.json()["entry"]
        self.model[agent][entry["id"]] = Fact(content)
        self._check_entry(agent, entry)

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        key, agent, entry_id = self._pick(data)
        response = self._request(key, "GET", memory(agent, f"/entries/{entry_id}"))
        if self._expect(response, key, agent, entry_id, write=False):
            self._check_entry(agent, response.json())

    @rule(data=st.data(), content=text)
    def edit(self, data: st.DataObject, content: str) -> None:
        key, agent, entry_id = self._pick(data)
        response = self._request(key, "PATCH", memory(agent, f"/entries/{entry_id}"), json={"content": content})
        if self._expect(response, key, agent, entry_id, write=True):
            self.model[agent][entry_id] = replace(self.model[agent][entry_id], content=content)
            self._check_entry(agent, response.json())

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        key, agent, entry_id = self._pick(data)
        response = self._request(key, "DELETE", memory(agent, f"/entries/{entry_id}"))
        if self._expect(response, key, agent, entry_id, write=True):
            self.model[agent][entry_id] = replace(self.model[agent][entry_id], archived=True)
            self._check_entry(agent, response.json())

    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        key, agent, entry_id = self._pick(data)
        response = self._request(key, "POST", memory(agent, f"/entries/{entry_id}/restore"))
        if self._expect(response, key, agent, entry_id, write=True):
            self.model[agent][entry_id] = replace(self.model[agent][entry_id], archived=False)
            self._check_entry(agent, response.json())

    @rule(data=st.data(), importance=st.sampled_from([0.0, 0.25, 0.9, 1.0]))
    def rescore(self, data: st.DataObject, importance: float) -> None:
        key, agent, entry_id = self._pick(data)
        path = memory(agent, f"/entries/{entry_id}/importance")
        response = self._request(key, "PUT", path, json={"importance": importance})
        if self._expect(response, key, agent, entry_id, write=True):
            self.model[agent][entry_id] = replace(self.model[agent][entry_id], importance=importance)
            self._check_entry(agent, response.json())

    @rule(data=st.data(), query=st.sampled_from(WORDS), archived=st.booleans())
    def search(self, data: st.DataObject, query: str, archived: bool) -> None:
        key = data.draw(st.sampled_from(self.keys), label="key")
        agent = data.draw(st.sampled_from(self.agents), label="path agent")
        params = {"query": query, "include_archived": archived, "limit": 50}
        response = self._request(key, "GET", memory(agent, "/search"), params=params)
        if not self._allowed(key, agent, write=False):
            assert response.status_code == 403, response.text
            return
        assert response.status_code == 200, response.text
        for hit in response.json()["hits"]:
            self._check_entry(agent, hit["entry"])
        expected = {
            i for i, f in self.model[agent].items() if query in f.content.split() and (archived or not f.archived)
        }
        assert {h["entry"]["id"] for h in response.json()["hits"]} == expected

    @rule(data=st.data())
    def browse(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(self.keys), label="key")
        agent = data.draw(st.sampled_from(self.agents), label="path agent")
        response = self._request(key, "GET", memory(agent, "/entries"), params={"limit": 1000})
        if not self._allowed(key, agent, write=False):
            assert response.status_code == 403, response.text
            return
        assert response.status_code == 200, response.text
        entries = response.json()["entries"]
        for entry in entries:
            self._check_entry(agent, entry)
        assert {e["id"] for e in entries} == {i for i, f in self.model[agent].items() if not f.archived}

    # -- proactive memory, and the user-level memory it shares ------------------------------------------------
    def _check_proactive(self, agent: str, user: str | None, body: dict[str, Any]) -> None:
        """A proactive entry a request about ``agent`` (and ``user``) returned is the agent's agent-wide one, or
        the named user's user memory: nothing else, and as the model has it."""
        if is_user_agent(body["agent_id"]):
            assert user is not None and body["user_id"] == user
            fact = self.user_model[user][body["id"]]
        else:
            assert (body["agent_id"], body["user_id"]) == (agent, None)
            fact = self.model[agent][body["id"]]
        assert (body["content"], body["archived"]) == (fact.content, fact.archived)

    @rule(data=st.data(), content=text, kind=st.sampled_from(["user", "agent"]), named=st.booleans())
    def memorize(self, data: st.DataObject, content: str, kind: str, named: bool) -> None:
        key = data.draw(st.sampled_from(self.keys), label="key")
        agent = data.draw(st.sampled_from(self.agents), label="path agent")
        user = data.draw(st.sampled_from(self.users), label="user") if kind == "user" and named else None
        params = {} if user is None else {"user_id": user}
        given = {"memories": [{"content": content, "category": "preference", "scope": kind}]}
        response = self._request(key, "POST", memory(agent, "/memorize"), params=params, json=given)
        if not self._allowed(key, agent, write=True) or not self._names(key, user):
            assert response.status_code == 403, response.text
            return
        assert response.status_code == 200, response.text
        [saved] = response.json()["saved"]
        entry = saved["entry"]
        fact = Fact(entry["content"], entry["archived"], entry["importance"])
        if user is not None:  # a user memory: shared, stored under the reserved agent, its first writer kept
            assert (entry["agent_id"], entry["user_id"], saved["scope"]) == (user_agent(user), user, "user")
            earlier = self.user_model[user].get(entry["id"])
            writer = agent if earlier is None else earlier.writer
            assert entry["metadata"]["writtenBy"] == writer
            self.user_model[user][entry["id"]] = replace(fact, writer=writer)
        else:  # the agent's own (a user memory without a user falls back to it)
            assert (entry["agent_id"], entry["user_id"], saved["scope"]) == (agent, None, "agent")
            self.model[agent][entry["id"]] = fact
        self.proactive.add(entry["id"])

    @rule(data=st.data(), query=st.sampled_from(WORDS), named=st.booleans())
    def retrieve(self, data: st.DataObject, query: str, named: bool) -> None:
        key = data.draw(st.sampled_from(self.keys), label="key")
        agent = data.draw(st.sampled_from(self.agents), label="path agent")
        user = data.draw(st.sampled_from(self.users), label="user") if named else None
        params = {} if user is None else {"user_id": user}
        response = self._request(key, "POST", memory(agent, "/retrieve"), params=params, json={"query": query})
        if not self._allowed(key, agent, write=False) or not self._names(key, user):
            assert response.status_code == 403, response.text
            return
        assert response.status_code == 200, response.text
        for hit in response.json()["hits"]:
            self._check_proactive(agent, user, hit["entry"])
            assert not hit["entry"]["archived"]

    @rule(data=st.data())
    def user_memories(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(self.keys), label="key")  # every key here may read memory
        user = data.draw(st.sampled_from(self.users), label="user")
        response = self._request(key, "GET", f"/api/memory/users/{user}/memories", params={"limit": 1000})
        if not self._names(key, user):
            assert response.status_code == 403, response.text
            return
        assert response.status_code == 200, response.text
        entries = response.json()["entries"]
        for entry in entries:
            self._check_proactive("-", user, entry)
        assert {e["id"] for e in entries} == {i for i, f in self.user_model[user].items() if not f.archived}

    @rule(data=st.data(), named=st.booleans())
    def forget(self, data: st.DataObject, named: bool) -> None:
        key, agent, entry_id = self._pick(data)
        user = data.draw(st.sampled_from(self.users), label="user") if named else None
        params = {} if user is None else {"user_id": user}
        response = self._request(key, "DELETE", memory(agent, f"/proactive/{entry_id}"), params=params)
        if not self._allowed(key, agent, write=True) or not self._names(key, user):
            assert response.status_code == 403, response.text
            return
        owned = self.model[agent] if entry_id in self.model[agent] else None
        if owned is None and user is not None and entry_id in self.user_model[user]:
            owned = self.user_model[user]
        if owned is None or entry_id not in self.proactive:
            assert response.status_code == 404, response.text
            for facts in [*self.model.values(), *self.user_model.values()]:
                if entry_id in facts:
                    assert facts[entry_id].content not in response.text
            return
        if user is not None and owned is self.user_model[user] and key.agent not in (None, owned[entry_id].writer):
            assert response.status_code == 403, response.text  # another agent's user memory
            assert f"written by agent {owned[entry_id].writer!r}" in response.text
            return
        assert response.status_code == 200, response.text
        owned[entry_id] = replace(owned[entry_id], archived=True)
        self._check_proactive(agent, user, response.json())

    # -- what the store holds --------------------------------------------------------------------------------
    @invariant()
    def each_agent_holds_exactly_what_its_model_says(self) -> None:
        for agent in getattr(self, "agents", []):
            stored = {e.id: Fact(e.content, e.archived, e.importance) for e in self.rv.store.facts.iter_all(agent)}
            assert stored == self.model[agent], agent
            for item in self.rv.kv.list(agent, "memory:", limit=1000):  # key-value copies of its own entries only
                assert item.key.removeprefix("memory:") in self.model[agent]

    @invariant()
    def each_user_holds_exactly_what_its_model_says(self) -> None:
        users = getattr(self, "users", [])
        stored: dict[str, dict[str, Fact]] = {u: {} for u in users}
        for e in (e for a in self.rv.store.facts.agents() if is_user_agent(a) for e in self.rv.store.facts.iter_all(a)):
            assert e.scope.agent_id == user_agent(e.scope.user_id or "")  # each user's memory under its own id
            if e.scope.user_id in stored:
                stored[e.scope.user_id][e.id] = Fact(e.content, e.archived, e.importance, e.metadata["writtenBy"])
        assert stored == {u: self.user_model[u] for u in users}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[reverie.Reverie]:
    home: Path = tmp_path_factory.mktemp("api-isolation") / "home"
    # No auto-consolidation: it would archive duplicates the model does not predict (tests/integration/
    # test_proactive.py covers it); the graph extraction is left queued, it changes no entry.
    proactive = {"consolidate_every": 1_000_000}
    graph = {"extraction_background": False}
    with reverie.open(
        home, embedding={"provider": "hash", "background": False}, proactive=proactive, graph=graph
    ) as rv:
        yield rv


def test_no_request_returns_or_changes_another_agents_data(engine: reverie.Reverie) -> None:
    admin = Key(engine.keys.create("admin", agent_id=None, scopes=["admin"])[1], None, True)
    with serving(engine) as origin, client(origin) as http:
        Isolation.rv, Isolation.http, Isolation.admin = engine, http, admin
        run_state_machine_as_test(
            Isolation,
            settings=settings(
                max_examples=25,
                stateful_step_count=40,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            ),
        )
