"""The external vector backend over HTTP, against a real loopback vector service: search through it, the
store's vector log pushed to it (saves, edits, purges), a misbehaving service that cannot widen what a
caller sees, transport failures raised from ``rv.memory.search``, and start-up configuration errors."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

import reverie
from _template import new_store_file
from reverie import Scope
from reverie.clock import FakeClock
from reverie.errors import ConfigError, VectorBackendError
from reverie.memory.longterm import LongTermMemory
from reverie.recall.http_backend import MAX_RESPONSE_BYTES, HttpVectorBackend
from reverie.recall.hybrid import VECTOR_OVERFETCH, HybridSearch
from reverie.recall.index import VectorIndex
from reverie.testing import LoopbackVectorServer

HASH = {"provider": "hash", "background": False}
# These tests pin the exact requests a backend sees; the semantic deduplication check (its own tests)
# would add a search per fresh entry.
NO_DEDUP = {"dedupe_enabled": False}
LOGGER = "reverie.recall.http"


def ids(results: list[reverie.SearchHit]) -> list[str]:
    return [h.entry.id for h in results]


def http(url: str) -> dict[str, str]:
    return {"vector_backend": "http", "vector_store_url": url}


@pytest.fixture
def server() -> Iterator[LoopbackVectorServer]:
    with LoopbackVectorServer() as running:
        yield running


@pytest.fixture
def rvh(
    tmp_path: Path, clock: FakeClock, server: LoopbackVectorServer, sqlite_template: Path
) -> Iterator[reverie.Reverie]:
    new_store_file(sqlite_template, tmp_path / "home" / "reverie.db", clock.now())
    with reverie.open(
        tmp_path / "home", clock=clock, embedding=HASH, memory=NO_DEDUP, recall=http(server.url)
    ) as engine:
        yield engine


def backend_of(rv: reverie.Reverie) -> HttpVectorBackend:
    index = rv.recall.index
    assert isinstance(index, HttpVectorBackend)
    return index


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released): connecting to it is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def composed(rv: reverie.Reverie, clock: FakeClock, backend: HttpVectorBackend) -> LongTermMemory:
    """Long-term memory over the engine's store and embedder with a backend built with test-sized limits
    (the engine always uses the contract's 10 s / 30 s / 64 MiB)."""
    return LongTermMemory(rv.store, clock, recall=HybridSearch(rv.store, rv.embedder, vectors=backend))


# -- search through the service ----------------------------------------------------------------------------


def test_vector_search_runs_through_the_service(rvh: reverie.Reverie, server: LoopbackVectorServer) -> None:
    harbour = rvh.memory.save("the harbour master logs every ship").id
    cake = rvh.memory.save("a recipe for lemon cake").id
    assert rvh.embed_pending() == 2
    found = rvh.memory.search("harbour ship logs", mode="vector")
    assert ids(found) == [harbour] and found.mode == "vector"
    assert rvh.memory.search("harbour ship logs")[0].entry.id == harbour  # hybrid too
    assert set(server.vectors) == {harbour, cake}
    stored = server.vectors[harbour]
    assert stored.payload == "" and stored.metadata == {"agent_id": "default", "model": "hash-256"}
    search = server.calls("search")[0]
    assert search["filter"] == {"agent_id": "default", "model": "hash-256"}
    assert search["limit"] == rvh.settings.recall.candidates * VECTOR_OVERFETCH and len(search["embedding"]) == 256
    # No memory text ever leaves Reverie.
    sent = json.dumps([r.body for r in server.requests])
    assert "harbour" not in sent and "lemon" not in sent


def test_the_first_search_pushes_the_agents_snapshot_once(rvh: reverie.Reverie, server: LoopbackVectorServer) -> None:
    for n in range(3):
        rvh.memory.save(f"tide table number {n}")
    rvh.embed_pending()
    rvh.memory.search("tide table", mode="vector")
    assert len(server.calls("insert")) == 3
    server.clear_requests()
    rvh.memory.search("tide table", mode="vector")
    assert [r.path for r in server.requests] == ["/search"]  # nothing changed: nothing pushed


def test_the_base_url_is_used_verbatim_with_a_trailing_slash_stripped(
    tmp_path: Path, server: LoopbackVectorServer
) -> None:
    with reverie.open(tmp_path / "slash", embedding=HASH, memory=NO_DEDUP, recall=http(server.url + "/")) as rv:
        saved = rv.memory.save("a trailing slash on the url").id
        rv.embed_pending()
        assert ids(rv.memory.search("trailing slash", mode="vector")) == [saved]
    assert {r.path for r in server.requests} == {"/insert", "/search"}  # under /collections/memories


def test_get_embeddings_round_trips_the_stored_vectors(rvh: reverie.Reverie) -> None:
    saved = rvh.memory.save("round trip of a vector").id
    rvh.embed_pending()
    backend = backend_of(rvh)
    backend.sync("default")
    got = backend.get_embeddings([saved, "0123456789ab"])
    assert list(got) == [saved]
    blob = dict(rvh.store.vectors.snapshot("default", "hash-256").vectors)[saved]
    assert blob is not None
    assert np.array_equal(got[saved], np.frombuffer(blob, dtype=np.float32))
    assert backend.get_embeddings([]) == {}


# -- keeping the service in step ---------------------------------------------------------------------------


def test_an_edit_pushes_a_delete_and_the_reembedded_entry_is_inserted_again(
    rvh: reverie.Reverie, server: LoopbackVectorServer
) -> None:
    saved = rvh.memory.save("coffee grinder settings for espresso").id
    rvh.embed_pending()
    assert ids(rvh.memory.search("espresso grinder", mode="vector")) == [saved]
    before = server.vectors[saved].embedding
    rvh.memory.edit(saved, content="train timetable for the weekend")
    server.clear_requests()
    assert ids(rvh.memory.search("espresso grinder", mode="vector")) == []
    assert server.calls("delete") == [{"id": saved}] and saved not in server.vectors
    rvh.embed_pending()
    assert ids(rvh.memory.search("weekend timetable", mode="vector")) == [saved]
    assert [body["id"] for body in server.calls("insert")] == [saved]
    assert server.vectors[saved].embedding != before


def test_a_purge_pushes_a_delete(rvh: reverie.Reverie, server: LoopbackVectorServer, clock: FakeClock) -> None:
    kept = rvh.memory.save("sailing knots and ropes").id
    gone = rvh.memory.save("sailing knots and ropes, again").id
    rvh.embed_pending()
    rvh.memory.archive(gone)
    assert ids(rvh.memory.search("sailing knots", mode="vector")) == [kept]
    assert gone in server.vectors  # archived entries stay in the service; hydration hides them
    clock.advance(days=91)
    assert rvh.purge().purged == (gone,)
    assert ids(rvh.memory.search("sailing knots", mode="vector", include_archived=True)) == [kept]
    assert {"id": gone} in server.calls("delete") and set(server.vectors) == {kept}


def test_a_failed_push_is_replayed_by_the_next_search(rvh: reverie.Reverie, server: LoopbackVectorServer) -> None:
    saved = rvh.memory.save("lanterns along the pier").id
    rvh.embed_pending()
    server.fail_next(500, endpoint="insert")
    with pytest.raises(VectorBackendError, match="500"):
        rvh.memory.search("lanterns pier", mode="vector")
    assert ids(rvh.memory.search("lanterns pier", mode="vector")) == [saved]
    assert saved in server.vectors


# -- a service that misbehaves cannot widen what a caller sees ----------------------------------------------


def test_a_service_that_ignores_the_filter_cannot_leak_other_agents_users_or_archived_entries(
    rvh: reverie.Reverie, server: LoopbackVectorServer
) -> None:
    server.ignore_filter = True
    mine = rvh.memory.save("quarterly budget review notes", category="work/finance").id
    theirs = rvh.memory.save("quarterly budget review notes", scope=Scope(agent_id="other")).id
    private = rvh.memory.save("quarterly budget review notes", scope=Scope(user_id="u1")).id
    old = rvh.memory.save("quarterly budget review notes, old").id
    rvh.memory.archive(old)
    rvh.embed_pending()
    # The other agent searches first, so its vector is in the service too.
    other = Scope(agent_id="other")
    assert ids(rvh.memory.search("budget review", mode="vector", scope=other)) == [theirs]
    assert rvh.embedder is not None
    query = rvh.embedder.embed(["budget review"])[0]
    candidates = {i for i, _ in backend_of(rvh).search("default", query, 50)}
    assert candidates == {mine, theirs, private, old}  # the service did answer all of them
    assert ids(rvh.memory.search("budget review", mode="vector")) == [mine]
    assert ids(rvh.memory.search("budget review")) == [mine]
    as_u1 = rvh.memory.search("budget review", mode="vector", scope=Scope(user_id="u1"))
    assert set(ids(as_u1)) == {mine, private}
    assert ids(rvh.memory.search("budget review", mode="vector", scope=Scope(user_id="u2"))) == [mine]
    assert set(ids(rvh.memory.search("budget review", mode="vector", include_archived=True))) == {mine, old}
    assert ids(rvh.memory.search("budget review", mode="vector", category="work")) == [mine]
    assert ids(rvh.memory.search("budget review", mode="vector", category="home")) == []
    assert ids(rvh.memory.search("budget review", mode="vector", scope=other)) == [theirs]


def test_a_service_that_honours_the_filter_answers_only_the_agents_ids(
    rvh: reverie.Reverie, server: LoopbackVectorServer
) -> None:
    mine = rvh.memory.save("orchard apples harvest").id
    rvh.memory.save("orchard apples harvest", scope=Scope(agent_id="other"))
    rvh.embed_pending()
    rvh.memory.search("apples", mode="vector", scope=Scope(agent_id="other"))
    assert [v.metadata["agent_id"] for v in server.vectors.values()] == ["other"]  # pushed per agent, lazily
    assert rvh.embedder is not None
    query = rvh.embedder.embed(["orchard apples"])[0]
    assert [i for i, _ in backend_of(rvh).search("default", query, 50)] == [mine]
    assert len(server.vectors) == 2


MALFORMED = ["../etc", "DROP TABLE", "abcdef1234567", "ABCDEF123456", "abcdef12345", "", "0123456789ag"]


def test_injected_foreign_malformed_and_unknown_ids_are_dropped_and_the_rest_survive(
    rvh: reverie.Reverie, server: LoopbackVectorServer, caplog: pytest.LogCaptureFixture
) -> None:
    mine = rvh.memory.save("the lighthouse keeper logs the tides").id
    also = rvh.memory.save("the lighthouse keeper logs the weather").id
    foreign = rvh.memory.save("the lighthouse keeper logs the tides", scope=Scope(agent_id="other")).id
    rvh.embed_pending()
    server.inject_ids = [
        *MALFORMED,
        foreign,  # a real id of another agent
        "0123456789ab",  # well formed, unknown
        {"id": "fedcba987654", "score": "high"},
        {"id": "fedcba987655", "score": None},
        {"id": 12},
        {"score": 0.5},
    ]
    caplog.set_level(logging.WARNING, logger=LOGGER)
    found = rvh.memory.search("lighthouse keeper tides", mode="vector")
    assert ids(found)[0] == mine and set(ids(found)) == {mine, also}
    assert all(0 <= h.score <= 1 for h in found)
    assert set(ids(rvh.memory.search("lighthouse keeper tides"))) == {mine, also}
    warned = "\n".join(r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING)
    for bad in MALFORMED:
        assert repr(bad) in warned
    assert "fedcba987654" in warned and "fedcba987655" in warned and "12" in warned
    assert foreign not in warned and "0123456789ab" not in warned  # dropped quietly by hydration


# -- transport failures surface from rv.memory.search --------------------------------------------------------


def test_a_refused_connection_raises_from_search_and_bm25_still_works(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/vectors"
    with reverie.open(tmp_path / "refused", embedding=HASH, memory=NO_DEDUP, recall=http(url)) as rv:
        saved = rv.memory.save("the ferry leaves at noon").id
        rv.embed_pending()
        with pytest.raises(VectorBackendError, match="ConnectError"):
            rv.memory.search("ferry noon", mode="vector")
        with pytest.raises(VectorBackendError):  # hybrid recall does not swallow it
            rv.memory.search("ferry noon")
        assert ids(rv.memory.search("ferry noon", mode="bm25")) == [saved]
        assert isinstance(VectorBackendError("x"), reverie.ReverieError)


@pytest.mark.parametrize("status", [500, 503, 404, 302])
def test_a_non_2xx_answer_raises_from_search_and_the_next_search_recovers(
    rvh: reverie.Reverie, server: LoopbackVectorServer, status: int
) -> None:
    saved = rvh.memory.save("the ferry leaves at noon").id
    rvh.embed_pending()
    server.fail_next(status, '{"error": "boom"}', endpoint="search")
    with pytest.raises(VectorBackendError, match=f"HTTP {status}: .*boom"):
        rvh.memory.search("ferry noon")
    assert ids(rvh.memory.search("ferry noon", mode="vector")) == [saved]


@pytest.mark.parametrize(
    "body",
    ["not json at all", '{"results": "many"}', "[]", '{"results": [', "", "[" * 100_000, b"\xff\xfe".decode("latin-1")],
)
def test_an_unparseable_answer_raises_from_search(
    rvh: reverie.Reverie, server: LoopbackVectorServer, body: str
) -> None:
    rvh.memory.save("the ferry leaves at noon")
    rvh.embed_pending()
    server.fail_next(200, body, endpoint="search")
    with pytest.raises(VectorBackendError):
        rvh.memory.search("ferry noon", mode="vector")


def test_an_answer_over_the_64_mib_cap_raises_from_search(rvh: reverie.Reverie, server: LoopbackVectorServer) -> None:
    rvh.memory.save("the ferry leaves at noon")
    rvh.embed_pending()
    server.oversize_next(MAX_RESPONSE_BYTES + 1, endpoint="search")
    with pytest.raises(VectorBackendError, match="cap"):
        rvh.memory.search("ferry noon", mode="vector")


@pytest.mark.parametrize("declare_length", [True, False])
def test_an_oversized_answer_is_refused_while_streaming(
    rvh: reverie.Reverie, server: LoopbackVectorServer, clock: FakeClock, declare_length: bool
) -> None:
    saved = rvh.memory.save("the ferry leaves at noon").id
    rvh.embed_pending()
    with HttpVectorBackend(rvh.store, server.url, "hash-256", 256, max_response_bytes=64 * 1024) as backend:
        memory = composed(rvh, clock, backend)
        assert ids(memory.search("ferry noon", mode="vector")) == [saved]
        server.oversize_next(64 * 1024 + 1, declare_length=declare_length, endpoint="search")
        with pytest.raises(VectorBackendError, match="65536-byte cap"):
            memory.search("ferry noon", mode="vector")
        server.oversize_next(64 * 1024, declare_length=declare_length, endpoint="search")  # at the cap: fine
        assert ids(memory.search("ferry noon", mode="vector")) == []


def test_a_slow_service_times_out(rvh: reverie.Reverie, server: LoopbackVectorServer, clock: FakeClock) -> None:
    saved = rvh.memory.save("the ferry leaves at noon").id
    rvh.embed_pending()
    with HttpVectorBackend(rvh.store, server.url, "hash-256", 256, timeout=0.3) as backend:
        memory = composed(rvh, clock, backend)
        assert ids(memory.search("ferry noon", mode="vector")) == [saved]
        server.delay_next(10, endpoint="search")
        started = time.monotonic()
        with pytest.raises(VectorBackendError, match="timed out"):
            memory.search("ferry noon")
        assert time.monotonic() - started < 5
        assert ids(memory.search("ferry noon", mode="vector")) == [saved]


# -- configuration ---------------------------------------------------------------------------------------


def test_http_without_a_url_fails_at_start_up_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"recall\.vector_store_url"):
        reverie.open(tmp_path / "nourl", embedding=HASH, recall={"vector_backend": "http"})


@pytest.mark.parametrize("name", ["qdrant", "sqlite", "HTTP", ""])
def test_an_unknown_backend_is_rejected_by_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match=r"recall\.vector_backend") as refused:
        reverie.open(tmp_path / "unknown", embedding=HASH, recall={"vector_backend": name})
    assert repr(name) in str(refused.value)


def test_a_url_that_is_not_http_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"recall\.vector_store_url.*ftp://"):
        reverie.open(tmp_path / "ftp", embedding=HASH, memory=NO_DEDUP, recall=http("ftp://127.0.0.1/x"))


def test_the_backend_can_be_configured_in_the_settings_file(tmp_path: Path, server: LoopbackVectorServer) -> None:
    home = tmp_path / "toml"
    home.mkdir()
    (home / "reverie.toml").write_text(f'[recall]\nvector_backend = "http"\nvector_store_url = "{server.url}"\n')
    with reverie.open(home, embedding=HASH) as rv:
        assert backend_of(rv).url == server.url
    (home / "reverie.toml").write_text('[recall]\nvector_backend = "faiss"\n')
    with pytest.raises(ConfigError, match="'faiss'"):
        reverie.open(home, embedding=HASH)


def test_closing_the_engine_closes_the_backends_client(tmp_path: Path, server: LoopbackVectorServer) -> None:
    with reverie.open(tmp_path / "close", embedding=HASH, memory=NO_DEDUP, recall=http(server.url)) as rv:
        backend = backend_of(rv)
        assert not backend.closed
    assert backend.closed


def test_the_memory_backend_is_the_default_and_needs_no_service(rv: reverie.Reverie) -> None:
    # "auto": the in-process index on a store that cannot search vectors itself (SQLite).
    assert rv.settings.recall.vector_backend == "auto" and rv.settings.recall.vector_store_url is None
    assert isinstance(rv.recall.index, VectorIndex)


def test_http_without_an_embedder_opens_and_searches_bm25(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/vectors"
    with reverie.open(tmp_path / "none", embedding={"provider": "none"}, recall=http(url)) as rv:
        saved = rv.memory.save("no vectors at all").id
        assert rv.recall.index is None
        assert ids(rv.memory.search("vectors")) == [saved]


# -- the loopback service itself ---------------------------------------------------------------------------


def test_the_service_refuses_unknown_routes_and_bad_bodies(server: LoopbackVectorServer) -> None:
    with httpx.Client(timeout=5.0) as client:
        assert client.post(f"{server.url}/upsert", json={}).status_code == 404
        root = server.url.rsplit("/collections", 1)[0]
        assert client.post(f"{root}/search", json={"embedding": [1.0], "limit": 1}).status_code == 404
        assert client.post(f"{server.url}/insert", content=b"not json").status_code == 400
        assert client.post(f"{server.url}/insert", json={"id": "x", "embedding": []}).status_code == 400
        assert client.post(f"{server.url}/search", json={"embedding": [1.0], "limit": -1}).status_code == 400
        ok = client.post(f"{server.url}/delete", json={"id": "never-inserted"})
        assert ok.status_code == 200
    assert [r.path for r in server.requests] == ["/upsert", "/search", "/insert", "/insert", "/search", "/delete"]


def test_closing_the_service_cuts_a_delayed_answer_short() -> None:
    server = LoopbackVectorServer().start()
    server.delay_next(60)
    with httpx.Client(timeout=0.2) as client, pytest.raises(httpx.ReadTimeout):
        client.post(f"{server.url}/search", json={"embedding": [1.0], "limit": 1, "filter": {}})
    started = time.monotonic()
    server.close()
    assert time.monotonic() - started < 5
    server.close()  # idempotent
    with pytest.raises(RuntimeError):
        _ = server.url


def test_errors_name_the_service_without_the_credentials_in_its_url(tmp_path: Path) -> None:
    url = f"http://user:hunter2@127.0.0.1:{closed_port()}/vectors"
    with reverie.open(tmp_path / "creds", embedding=HASH, memory=NO_DEDUP, recall=http(url)) as rv:
        rv.memory.save("a secret-free error message")
        rv.embed_pending()
        with pytest.raises(VectorBackendError) as failed:
            rv.memory.search("error message", mode="vector")
    message = str(failed.value)
    assert f"127.0.0.1:{url.rsplit(':', 1)[1]}" in message and "hunter2" not in message and "user" not in message
