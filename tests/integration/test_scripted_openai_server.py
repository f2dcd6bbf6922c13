"""ScriptedOpenAIServer, the loopback OpenAI-compatible double: chat script, recording, failure injection."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from reverie.embed.hashing import HashEmbedder
from reverie.testing import ChatReply, ScriptedOpenAIServer

MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Where do I live?"}]


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as running:
        yield running


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5.0) as opened:
        yield opened


def chat(client: httpx.Client, server: ScriptedOpenAIServer) -> httpx.Response:
    return client.post(f"{server.url}/chat/completions", json={"model": "gpt-test", "messages": MESSAGES})


def test_url_is_loopback_v1(server: ScriptedOpenAIServer) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    assert server.url.endswith("/v1")
    assert int(server.url.split(":")[2].split("/")[0]) > 0


def test_chat_answers_the_script_in_order(server: ScriptedOpenAIServer, client: httpx.Client) -> None:
    server.script_chat(["You live in Lisbon.", "Still Lisbon."])
    first, second = chat(client, server), chat(client, server)

    assert first.status_code == second.status_code == 200
    assert first.json()["choices"][0]["message"] == {"role": "assistant", "content": "You live in Lisbon."}
    assert second.json()["choices"][0]["message"]["content"] == "Still Lisbon."
    assert first.json()["choices"][0]["finish_reason"] == "stop"
    assert first.json()["object"] == "chat.completion"
    assert first.json()["model"] == "gpt-test"


def test_chat_usage_counts_words(server: ScriptedOpenAIServer, client: httpx.Client) -> None:
    server.script_chat(["You live in Lisbon."])
    usage = chat(client, server).json()["usage"]
    assert usage == {"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11}


def test_chat_answers_500_when_the_script_runs_out(server: ScriptedOpenAIServer, client: httpx.Client) -> None:
    server.script_chat(["only one"])
    assert chat(client, server).status_code == 200

    empty = chat(client, server)
    assert empty.status_code == 500
    assert empty.json()["error"]["message"] == "the chat script is empty"


def test_script_chat_appends(server: ScriptedOpenAIServer, client: httpx.Client) -> None:
    server.script_chat(["a"])
    server.script_chat(["b"])
    answers = [chat(client, server).json()["choices"][0]["message"]["content"] for _ in range(2)]
    assert answers == ["a", "b"]


def test_requests_are_recorded(server: ScriptedOpenAIServer, client: httpx.Client) -> None:
    server.script_chat(["ok"])
    chat(client, server)
    client.post(f"{server.url}/embeddings", json={"model": "e", "input": "one"}, headers={"X-Trace": "t1"})
    client.post(f"{server.url}/nowhere", content=b"not json")

    recorded = server.requests
    assert [request.path for request in recorded] == ["/v1/chat/completions", "/v1/embeddings", "/v1/nowhere"]
    path, headers, body = recorded[0]
    assert (path, body) == ("/v1/chat/completions", {"model": "gpt-test", "messages": MESSAGES})
    assert headers["content-type"] == "application/json"
    assert recorded[1].headers["x-trace"] == "t1"
    assert recorded[2].body is None


def test_embeddings_are_hash_embedder_vectors(client: httpx.Client) -> None:
    with ScriptedOpenAIServer(dim=16) as server:
        answer = client.post(f"{server.url}/embeddings", json={"model": "e", "input": ["a b", "c"]}).json()

    assert [item["index"] for item in answer["data"]] == [0, 1]
    vectors = np.array([item["embedding"] for item in answer["data"]])
    assert vectors.shape == (2, 16)
    assert np.allclose(vectors, HashEmbedder(16).embed(["a b", "c"]), atol=1e-7)
    assert answer["model"] == "e"


def test_bad_requests_answer_400_and_unknown_paths_404(server: ScriptedOpenAIServer, client: httpx.Client) -> None:
    assert client.post(f"{server.url}/embeddings", json={"model": "e", "input": [1, 2]}).status_code == 400
    assert client.post(f"{server.url}/embeddings", json={"input": ["x"]}).status_code == 400
    assert client.post(f"{server.url}/embeddings", content=b"{").status_code == 400
    missing = client.post(f"{server.url}/models", json={})
    assert missing.status_code == 404
    assert "no route" in missing.json()["error"]["message"]


def test_fail_next_applies_once_to_any_path(server: ScriptedOpenAIServer, client: httpx.Client) -> None:
    server.script_chat(["ok"])
    server.fail_next(429, '{"error": {"message": "slow down"}}')

    failed = chat(client, server)
    assert failed.status_code == 429
    assert failed.json() == {"error": {"message": "slow down"}}
    assert chat(client, server).json()["choices"][0]["message"]["content"] == "ok"


def test_delay_next_delays_one_answer(server: ScriptedOpenAIServer, client: httpx.Client) -> None:
    body = {"model": "e", "input": ["x"]}
    server.delay_next(0.3)
    started = time.monotonic()
    assert client.post(f"{server.url}/embeddings", json=body).status_code == 200
    delayed = time.monotonic() - started
    started = time.monotonic()
    assert client.post(f"{server.url}/embeddings", json=body).status_code == 200
    assert delayed >= 0.3
    assert time.monotonic() - started < 0.3


def test_malform_next_kinds(server: ScriptedOpenAIServer, client: httpx.Client) -> None:
    body = {"model": "e", "input": ["one", "two"]}
    server.malform_next("count")
    server.malform_next("dim")
    server.malform_next("json")

    assert len(client.post(f"{server.url}/embeddings", json=body).json()["data"]) == 3
    widths = [len(item["embedding"]) for item in client.post(f"{server.url}/embeddings", json=body).json()["data"]]
    assert widths == [64, 65]
    broken = client.post(f"{server.url}/embeddings", json=body)
    assert broken.status_code == 200
    with pytest.raises(ValueError):
        broken.json()
    assert len(client.post(f"{server.url}/embeddings", json=body).json()["data"]) == 2


def test_malform_next_refuses_unknown_kinds(server: ScriptedOpenAIServer) -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        server.malform_next("slow")  # type: ignore[arg-type]


def test_stops_cleanly_even_with_a_delayed_request_pending(client: httpx.Client) -> None:
    started = time.monotonic()
    with ScriptedOpenAIServer() as server:
        url = server.url
        server.delay_next(30.0)
        with pytest.raises(httpx.ReadTimeout):
            client.post(f"{url}/embeddings", json={"model": "e", "input": ["x"]}, timeout=0.2)
    assert time.monotonic() - started < 5.0
    with pytest.raises(httpx.ConnectError):
        client.post(f"{url}/embeddings", json={"model": "e", "input": ["x"]})
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url


def test_url_before_start_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="not running"):
        _ = ScriptedOpenAIServer().url


def test_chat_reply_scripts_status_headers_body_usage_and_finish(
    server: ScriptedOpenAIServer, client: httpx.Client
) -> None:
    server.script_chat(
        [
            ChatReply(status=429, headers={"Retry-After": "7"}),
            ChatReply(body=b'{"choices": [{"mess'),
            ChatReply("cut", usage=None, finish_reason="length"),
            ChatReply(None, usage={"prompt_tokens": 3}),
        ]
    )
    limited = chat(client, server)
    assert limited.status_code == 429 and limited.headers["retry-after"] == "7"
    assert limited.json()["error"]["message"] == "scripted HTTP 429"
    assert chat(client, server).content == b'{"choices": [{"mess'
    cut = chat(client, server).json()
    assert "usage" not in cut and cut["choices"][0]["finish_reason"] == "length"
    empty = chat(client, server).json()
    assert empty["choices"][0]["message"]["content"] is None and empty["usage"] == {"prompt_tokens": 3}


def test_chat_reply_delay_and_fail_next_headers(server: ScriptedOpenAIServer, client: httpx.Client) -> None:
    server.fail_next(503, headers={"Retry-After": "1", "Content-Type": "text/plain"})
    server.script_chat([ChatReply("slow", delay=0.3)])
    failed = chat(client, server)
    assert failed.status_code == 503 and failed.headers["retry-after"] == "1"
    assert failed.headers["content-type"] == "text/plain"
    started = time.monotonic()
    assert chat(client, server).json()["choices"][0]["message"]["content"] == "slow"
    assert time.monotonic() - started >= 0.3


def test_answer_chat_with_answers_once_the_script_is_empty(server: ScriptedOpenAIServer, client: httpx.Client) -> None:
    seen: list[dict[str, object]] = []

    def handler(body: dict[str, object]) -> str | ChatReply:
        seen.append(body)
        if len(seen) == 2:
            return ChatReply("cut", finish_reason="length")
        if len(seen) == 3:
            raise RuntimeError("no idea")
        return f"handled {len(seen)}"

    server.script_chat(["scripted first"])
    server.answer_chat_with(handler)
    assert chat(client, server).json()["choices"][0]["message"]["content"] == "scripted first"
    assert chat(client, server).json()["choices"][0]["message"]["content"] == "handled 1"
    assert seen == [{"model": "gpt-test", "messages": MESSAGES}]
    assert chat(client, server).json()["choices"][0]["finish_reason"] == "length"
    failed = chat(client, server)
    assert failed.status_code == 500 and "no idea" in failed.json()["error"]["message"]
    server.script_chat(["queued again"])
    assert chat(client, server).json()["choices"][0]["message"]["content"] == "queued again"
    assert len(seen) == 3

    server.answer_chat_with(None)
    assert chat(client, server).json()["error"]["message"] == "the chat script is empty"
