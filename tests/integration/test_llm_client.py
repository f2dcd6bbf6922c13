"""OpenAIChat against the real loopback chat-completions server: answers, usage and cost, JSON answers,
retries, timeouts, the busy signal, the ledger, and the engine wiring. Every failure is a clear LLMError."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

import reverie
from reverie import ConfigError, LLMError
from reverie.clock import FakeClock
from reverie.errors import ValidationError
from reverie.llm import LLM, Message, OpenAIChat, Prices, UsageLedger, UsageRecord
from reverie.testing import ChatReply, ScriptedOpenAIServer

MESSAGES = [Message.system("You are terse."), Message.user("Where do I live?")]
FACTS_JSON = '{"facts": [{"text": "The user lives in Lisbon", "confidence": 0.9}]}'


class Fact(BaseModel):
    text: str
    confidence: float = Field(ge=0, le=1)


class Facts(BaseModel):
    facts: list[Fact]


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as running:
        yield running


@pytest.fixture
def make_chat(server: ScriptedOpenAIServer) -> Iterator[Callable[..., OpenAIChat]]:
    """Clients of the loopback server with fast back-off, closed at the end."""
    made: list[OpenAIChat] = []

    def make(**options: object) -> OpenAIChat:
        settings: dict[str, object] = {"backoff_seconds": 0.01, "max_backoff_seconds": 2.0, "timeout": 5.0}
        chat = OpenAIChat(server.url, "gpt-test", **{**settings, **options})
        made.append(chat)
        return chat

    yield make
    for chat in made:
        chat.close()


@pytest.fixture
def chat(make_chat: Callable[..., OpenAIChat]) -> OpenAIChat:
    return make_chat(max_retries=2, prices=Prices(input_per_mtok=1000.0, output_per_mtok=2000.0))


def chat_requests(server: ScriptedOpenAIServer) -> int:
    return sum(request.path == "/v1/chat/completions" for request in server.requests)


def wait_until(condition: Callable[[], object], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


# -- answers, usage, cost ----------------------------------------------------------------------------------
def test_a_normal_answer_with_usage_and_cost(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    server.script_chat(["You live in Lisbon."])
    completion = chat.complete(MESSAGES, max_tokens=50, temperature=0.2, purpose="test")

    assert completion.text == "You live in Lisbon."
    assert completion.model == "gpt-test"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (7, 4)
    assert completion.usage.total_tokens == 11
    assert completion.cost == pytest.approx((7 * 1000 + 4 * 2000) / 1_000_000)
    assert completion.attempts == 1 and completion.finish_reason == "stop"
    assert completion.latency_seconds > 0
    body = server.requests[0].body
    assert body == {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Where do I live?"}],
        "stream": False,
        "max_tokens": 50,
        "temperature": 0.2,
    }
    assert "authorization" not in server.requests[0].headers


def test_optional_arguments_are_left_out_and_the_key_is_sent(
    server: ScriptedOpenAIServer, make_chat: Callable[..., OpenAIChat]
) -> None:
    server.script_chat(["ok"])
    make_chat(api_key="sk-test").complete(MESSAGES)
    request = server.requests[0]
    assert set(request.body) == {"model", "messages", "stream"}
    assert request.headers["authorization"] == "Bearer sk-test"


def test_missing_usage_is_none_and_costs_nothing(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    server.script_chat([ChatReply("no usage", usage=None), ChatReply("half", usage={"prompt_tokens": 10})])
    bare, half = chat.complete(MESSAGES), chat.complete(MESSAGES)
    assert bare.usage.prompt_tokens is None and bare.usage.completion_tokens is None
    assert bare.usage.total_tokens is None and bare.cost == 0
    assert (half.usage.prompt_tokens, half.usage.completion_tokens) == (10, None)
    assert half.cost == pytest.approx(10 * 1000 / 1_000_000)


def test_no_prices_means_zero_cost(server: ScriptedOpenAIServer, make_chat: Callable[..., OpenAIChat]) -> None:
    server.script_chat(["free"])
    assert make_chat().complete(MESSAGES).cost == 0


def test_it_is_an_llm(chat: OpenAIChat) -> None:
    assert isinstance(chat, LLM)
    assert chat.model_id == "openai:gpt-test"


# -- JSON answers ------------------------------------------------------------------------------------------
def test_think_preamble_prose_and_json_validate_into_the_schema(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    answer = f"<think>The user said Lisbon. Output {{facts}}.</think>\nHere you go:\n```json\n{FACTS_JSON}\n```\nDone."
    server.script_chat([answer])
    facts, completion = chat.complete_json(MESSAGES, Facts, purpose="extract")
    assert facts == Facts(facts=[Fact(text="The user lives in Lisbon", confidence=0.9)])
    assert completion.text == answer


def test_garbage_is_a_clear_error_with_an_excerpt(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    server.script_chat(["I'm sorry, I can't produce that."])
    with pytest.raises(LLMError) as caught:
        chat.complete_json(MESSAGES, Facts)
    assert caught.value.reason == "no_object"
    assert "no JSON object" in str(caught.value)
    assert "I'm sorry, I can't produce that." in str(caught.value)
    assert chat_requests(server) == 1  # a bad answer is the caller's to retry, not the transport's


def test_truncated_json_is_an_error(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    cut = FACTS_JSON[:40]
    server.script_chat([ChatReply(cut, finish_reason="length")])
    with pytest.raises(LLMError) as caught:
        chat.complete_json(MESSAGES, Facts)
    assert caught.value.reason == "truncated"
    assert "cut off" in str(caught.value) and "max_tokens" in str(caught.value)
    assert cut in str(caught.value)


def test_an_unfinished_think_block_is_an_error(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    server.script_chat(["<think>Let me consider " + FACTS_JSON])
    with pytest.raises(LLMError, match="inside a <think> block") as caught:
        chat.complete_json(MESSAGES, Facts)
    assert caught.value.reason == "unfinished_reasoning"


def test_json_failing_the_schema_names_the_field(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    server.script_chat(['{"facts": [{"text": "Lisbon", "confidence": 7}]}', '{"fact": []}'])
    with pytest.raises(LLMError) as bad_value:
        chat.complete_json(MESSAGES, Facts)
    assert bad_value.value.reason == "schema"
    assert "Facts" in str(bad_value.value) and "facts.0.confidence" in str(bad_value.value)
    with pytest.raises(LLMError, match="facts: Field required"):
        chat.complete_json(MESSAGES, Facts)


def test_a_failed_json_call_returns_nothing_and_records_the_spent_tokens(
    server: ScriptedOpenAIServer, chat: OpenAIChat
) -> None:
    # The partial list a naive parser would apply (one good fact, then a cut) must never reach the caller.
    server.script_chat(['{"facts": [{"text": "a", "confidence": 0.5}, {"text": "b", "conf', FACTS_JSON])
    applied: list[Fact] = []
    with pytest.raises(LLMError):
        facts, _ = chat.complete_json(MESSAGES, Facts)
        applied.extend(facts.facts)
    assert applied == []
    failed = chat.ledger.records()[-1]
    assert not failed.ok and failed.prompt_tokens == 7 and failed.cost > 0
    facts, _ = chat.complete_json(MESSAGES, Facts)  # the client is fine afterwards
    assert facts.facts[0].text == "The user lives in Lisbon"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"<html><body>502 Bad Gateway</body></html>", "not JSON"),
        (b'{"id": "chatcmpl-1", "choices": [{"index": 0, "message": {"role": "assi', "not JSON"),
        (b'{"id": "chatcmpl-1", "choices": []}', "without choices[0].message"),
        (b'{"choices": [{"message": {"role": "assistant", "content": null, "refusal": "No."}}]}', "refused: No."),
    ],
)
def test_a_broken_response_body_is_a_clear_error(
    server: ScriptedOpenAIServer, chat: OpenAIChat, body: bytes, words: str
) -> None:
    server.script_chat([ChatReply(body=body)])
    with pytest.raises(LLMError, match=re.escape(words)) as caught:
        chat.complete(MESSAGES)
    assert caught.value.reason == "response"
    assert chat_requests(server) == 1


# -- retries -----------------------------------------------------------------------------------------------
def test_429_honours_retry_after_then_succeeds(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    server.fail_next(429, '{"error": {"message": "slow down"}}', headers={"Retry-After": "1"})
    server.script_chat(["after the wait"])
    started = time.monotonic()
    completion = chat.complete(MESSAGES)
    assert time.monotonic() - started >= 0.95  # the back-off alone is 0.01 s
    assert completion.text == "after the wait" and completion.attempts == 2
    assert chat_requests(server) == 2


def test_retry_after_ms_is_honoured_and_retry_after_is_capped(
    server: ScriptedOpenAIServer, make_chat: Callable[..., OpenAIChat]
) -> None:
    chat = make_chat(max_backoff_seconds=0.3)
    server.fail_next(429, headers={"retry-after-ms": "250"})
    server.fail_next(429, headers={"Retry-After": "3600"})
    server.script_chat(["ok"])
    started = time.monotonic()
    assert chat.complete(MESSAGES).attempts == 3
    assert 0.25 + 0.3 - 0.05 <= time.monotonic() - started < 3


def test_500_every_time_gives_up_after_max_retries(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    for _ in range(3):
        server.fail_next(500, '{"error": {"message": "the GPU caught fire"}}')
    server.script_chat(["never reached"])
    with pytest.raises(LLMError) as caught:
        chat.complete(MESSAGES)
    assert caught.value.status == 500 and caught.value.reason == "http"
    assert "HTTP 500: the GPU caught fire" in str(caught.value)
    assert "after 3 attempts" in str(caught.value)
    assert chat_requests(server) == 3  # the first request and max_retries=2 retries


def test_5xx_then_success_is_retried(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    server.script_chat([ChatReply(status=503), ChatReply(status=502), "third time"])
    completion = chat.complete(MESSAGES)
    assert completion.text == "third time" and completion.attempts == 3


def test_a_400_is_not_retried(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    server.fail_next(400, '{"error": {"message": "model \'gpt-test\' not found"}}')
    server.script_chat(["unused"])
    with pytest.raises(LLMError, match="HTTP 400: model 'gpt-test' not found") as caught:
        chat.complete(MESSAGES)
    assert caught.value.status == 400
    assert chat_requests(server) == 1


def test_ollama_and_fastapi_error_shapes_are_read(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    server.fail_next(404, '{"error": "model \\"llama9\\" not found, try pulling it first"}')
    server.fail_next(422, '{"detail": "messages: field required"}')
    with pytest.raises(LLMError, match='HTTP 404: model "llama9" not found'):
        chat.complete(MESSAGES)
    with pytest.raises(LLMError, match="HTTP 422: messages: field required"):
        chat.complete(MESSAGES)


def test_a_timeout_is_an_error(server: ScriptedOpenAIServer, make_chat: Callable[..., OpenAIChat]) -> None:
    chat = make_chat(timeout=0.2, max_retries=0)
    server.delay_next(10)
    server.script_chat(["too late"])
    started = time.monotonic()
    with pytest.raises(LLMError, match="timed out") as caught:
        chat.complete(MESSAGES)
    assert time.monotonic() - started < 3
    assert caught.value.reason == "timeout" and caught.value.status is None


def test_a_timeout_is_retried(server: ScriptedOpenAIServer, make_chat: Callable[..., OpenAIChat]) -> None:
    chat = make_chat(timeout=0.3, max_retries=1)
    server.script_chat([ChatReply("slow", delay=10), "fast"])
    assert chat.complete(MESSAGES).text == "fast"


def test_a_refused_connection_is_retried_then_an_error() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with OpenAIChat(f"http://127.0.0.1:{port}/v1", "m", max_retries=2, backoff_seconds=0.01) as chat:
        with pytest.raises(LLMError, match="ConnectError") as caught:
            chat.complete(MESSAGES)
        assert caught.value.reason == "connection"
        assert chat.ledger.records()[0].attempts == 3


def test_close_interrupts_a_back_off_wait(server: ScriptedOpenAIServer, make_chat: Callable[..., OpenAIChat]) -> None:
    chat = make_chat(max_backoff_seconds=30.0)
    server.fail_next(429, headers={"Retry-After": "30"})
    errors: list[LLMError] = []

    def call() -> None:
        try:
            chat.complete(MESSAGES)
        except LLMError as exc:
            errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    wait_until(lambda: chat_requests(server) == 1)
    started = time.monotonic()
    chat.close()
    caller.join(5)
    assert not caller.is_alive() and time.monotonic() - started < 3
    assert errors[0].reason == "closed"
    with pytest.raises(LLMError, match="closed"):
        chat.complete(MESSAGES)


# -- the busy signal ---------------------------------------------------------------------------------------
def test_busy_while_a_foreground_call_is_in_flight(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    server.script_chat([ChatReply("user turn", delay=0.5)])
    answers: list[str] = []

    def user_turn() -> None:
        with chat.foreground():
            answers.append(chat.complete(MESSAGES).text)

    assert not chat.busy
    turn = threading.Thread(target=user_turn)
    turn.start()
    wait_until(lambda: chat_requests(server) == 1)
    assert chat.busy
    turn.join(5)
    assert answers == ["user turn"]
    assert not chat.busy


def test_background_calls_do_not_make_it_busy(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    server.script_chat([ChatReply("dreaming", delay=0.3)])
    background = threading.Thread(target=chat.complete, args=(MESSAGES,))
    background.start()
    wait_until(lambda: chat_requests(server) == 1)
    assert not chat.busy
    background.join(5)


def test_foreground_scopes_nest_and_end_on_errors(chat: OpenAIChat) -> None:
    with pytest.raises(RuntimeError), chat.foreground():
        with chat.foreground():
            assert chat.busy
        assert chat.busy
        raise RuntimeError("the turn failed")
    assert not chat.busy


# -- the ledger --------------------------------------------------------------------------------------------
def test_the_ledger_records_every_call_including_failures(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    seen: list[UsageRecord] = []
    chat.ledger.add_listener(seen.append)
    server.script_chat(["plain", FACTS_JSON, "not json", ChatReply(status=400)])
    chat.complete(MESSAGES, purpose="answer")
    chat.complete_json(MESSAGES, Facts, purpose="extract")
    with pytest.raises(LLMError):
        chat.complete_json(MESSAGES, Facts, purpose="extract")
    with pytest.raises(LLMError):
        chat.complete(MESSAGES, purpose="answer")

    records = chat.ledger.records()
    assert seen == records
    assert [(r.purpose, r.ok) for r in records] == [
        ("answer", True),
        ("extract", True),
        ("extract", False),
        ("answer", False),
    ]
    assert all(r.model == "gpt-test" and r.latency_seconds > 0 and r.attempts == 1 for r in records)
    assert "no JSON object" in (records[2].error or "") and "HTTP 400" in (records[3].error or "")
    assert records[3].prompt_tokens is None and records[3].cost == 0
    totals = chat.ledger.totals()
    assert (totals.calls, totals.failed) == (4, 2)
    assert totals.prompt_tokens == sum(r.prompt_tokens or 0 for r in records)
    assert totals.cost == pytest.approx(sum(r.cost for r in records))
    assert (totals.by_purpose["extract"].calls, totals.by_purpose["extract"].failed) == (2, 1)


def test_a_broken_listener_does_not_fail_the_call(
    server: ScriptedOpenAIServer, chat: OpenAIChat, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(record: UsageRecord) -> None:
        raise RuntimeError("status page down")

    chat.ledger.add_listener(broken)
    server.script_chat(["fine"])
    assert chat.complete(MESSAGES).text == "fine"
    assert "usage listener" in caplog.text
    chat.ledger.remove_listener(broken)


def test_concurrent_calls_share_one_client(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    server.script_chat([f"answer {i}" for i in range(8)])
    texts: list[str] = []
    lock = threading.Lock()

    def call() -> None:
        text = chat.complete(MESSAGES).text
        with lock:
            texts.append(text)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(texts) == sorted(f"answer {i}" for i in range(8))
    assert chat.ledger.totals().calls == 8


def test_the_ledger_keeps_bounded_records_but_full_totals() -> None:
    ledger = UsageLedger(clock=FakeClock(), max_records=2)
    for n in range(5):
        ledger.record(
            purpose="p", model="m", prompt_tokens=n, completion_tokens=1, cost=0.5, latency_seconds=0.1, attempts=1
        )
    assert [r.prompt_tokens for r in ledger.records()] == [3, 4]
    assert (ledger.totals().calls, ledger.totals().prompt_tokens, ledger.totals().cost) == (5, 10, 2.5)


# -- arguments ---------------------------------------------------------------------------------------------
def test_bad_arguments_are_refused_before_anything_is_sent(server: ScriptedOpenAIServer, chat: OpenAIChat) -> None:
    with pytest.raises(ValidationError, match="role"):
        Message("robot", "beep")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="messages"):
        chat.complete([])
    with pytest.raises(ValidationError, match="max_tokens"):
        chat.complete(MESSAGES, max_tokens=0)
    with pytest.raises(ValidationError, match="temperature"):
        chat.complete(MESSAGES, temperature=3)
    assert server.requests == [] and chat.ledger.records() == []


# -- the engine --------------------------------------------------------------------------------------------
def test_the_engine_has_no_llm_by_default(tmp_path: Path) -> None:
    with reverie.open(tmp_path, embedding={"provider": "none"}) as rv:
        assert rv.llm is None


def test_the_engine_builds_and_closes_the_configured_llm(tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    clock = FakeClock()
    server.script_chat(["hello"])
    llm_settings = {"provider": "openai", "endpoint": server.url, "model": "m", "price_input_per_mtok": 1e6}
    with reverie.open(tmp_path, clock=clock, embedding={"provider": "none"}, llm=llm_settings) as rv:
        assert isinstance(rv.llm, OpenAIChat) and rv.llm.model_id == "openai:m"
        assert rv.llm.complete(MESSAGES).text == "hello"
        record = rv.llm.ledger.records()[0]
        assert record.at == clock.now() and record.cost == 7
    with pytest.raises(LLMError, match="closed"):
        rv.llm.complete(MESSAGES)


@pytest.mark.parametrize(
    ("llm", "words"),
    [
        ({"provider": "openai"}, "llm.endpoint and llm.model"),
        ({"provider": "openai", "endpoint": "http://127.0.0.1:1/v1"}, "llm.endpoint and llm.model"),
        ({"provider": "openai", "endpoint": "127.0.0.1:1", "model": "m"}, "llm.endpoint"),
        ({"provider": "anthropic"}, "llm.provider"),
        ({"max_retries": -1}, "llm.max_retries"),
    ],
)
def test_bad_llm_settings_fail_at_start_up_by_name(tmp_path: Path, llm: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        reverie.open(tmp_path, embedding={"provider": "none"}, llm=llm)
