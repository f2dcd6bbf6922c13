"""The bundled MiniLM embedder: batches embedded in parallel (cut by padded tokens) give the vectors
one-at-a-time embedding gives, in the callers' order, from any number of threads at once; queries get the
same vectors; each onnxruntime session loads at its first use."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

from reverie.embed.base import embed_queries
from reverie.embed.local import DIM, LocalEmbedder

TEXTS = [
    "Maya works from Lisbon",
    "Deploys happen on Tuesdays and Thursdays, never on Fridays",
    "ok",
    "The Lantern backend is written in Python with FastAPI and talks to PostgreSQL through SQLAlchemy",
    "word " * 400,  # past the 256-token limit: truncated, not an error
    "Tomas repaired the old bicycle near the green garden in Oslo last week with Omar",
    "",
] * 5


def test_parallel_batches_match_one_text_at_a_time_in_the_callers_order() -> None:
    embedder = LocalEmbedder(threads=3, batch_size=4)  # several batches, more than one worker
    together = embedder.embed(TEXTS)
    alone = np.stack([embedder.embed([text])[0] for text in TEXTS[:7]])
    assert together.shape == (len(TEXTS), DIM) and together.dtype == np.float32
    np.testing.assert_allclose(together[:7], alone, atol=1e-5)
    np.testing.assert_allclose(together[7:14], together[:7], atol=1e-5)
    norms = np.linalg.norm(together, axis=1)
    np.testing.assert_allclose(norms, np.ones(len(TEXTS)), atol=1e-5)


def test_one_worker_and_many_workers_agree() -> None:
    one = LocalEmbedder(threads=1, batch_size=3).embed(TEXTS[:7])
    many = LocalEmbedder(threads=4, batch_size=2).embed(TEXTS[:7])
    np.testing.assert_allclose(one, many, atol=1e-5)


def test_concurrent_callers_each_get_their_own_vectors() -> None:
    embedder = LocalEmbedder(threads=2, batch_size=4)
    expected = embedder.embed(TEXTS[:7])
    results: dict[int, np.ndarray] = {}

    def call(n: int) -> None:
        texts = TEXTS[n : n + 7]  # a different order per caller
        results[n] = embedder.embed(texts)

    threads = [threading.Thread(target=call, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for n, got in results.items():
        np.testing.assert_allclose(got, np.roll(expected, -n, axis=0), atol=1e-5)


@pytest.mark.parametrize("texts", [[], ["one short query"]])
def test_empty_and_single_calls(texts: list[str]) -> None:
    vectors = LocalEmbedder().embed(texts)
    assert vectors.shape == (len(texts), DIM)


LONG = [
    "We went hiking up the ridge on Saturday, and the view over the valley was worth every step. Next time I"
    " want to start earlier so we can catch the sunrise, maybe with Jonas and his sister if they are free.",
    "Honestly the new job is going well: the team is kind, the code base is old but readable, and my manager"
    " lets me pick what to work on first. The commute is the only hard part, an hour each way by train.",
] * 6 + [f"short note {i}" for i in range(12)]


def test_runs_under_a_token_budget_give_the_one_at_a_time_vectors() -> None:
    """Long and short texts cut into runs by padded tokens (a tiny budget: many runs, several workers) give
    each text the vector it gets alone, where nothing is padded: the path before runs by count gave these."""
    embedder = LocalEmbedder(threads=3, batch_tokens=128)
    together = embedder.embed(LONG)
    alone = np.stack([embedder.embed([text])[0] for text in LONG])
    cosines = (together * alone).sum(axis=1)
    assert cosines.min() >= 0.999
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_queries_get_the_vectors_stored_texts_get() -> None:
    embedder = LocalEmbedder(threads=2)
    stored = embedder.embed(TEXTS[:7])
    queried = embed_queries(embedder, TEXTS[:7])  # the query session, one run at a time
    np.testing.assert_allclose(queried, stored, atol=1e-5)


SESSIONS = """
import gc, sys, tempfile
import onnxruntime
import reverie
from reverie.embed.local import LocalEmbedder

def sessions():
    return sum(isinstance(o, onnxruntime.InferenceSession) for o in gc.get_objects())

if sys.argv[1] == "search":
    with tempfile.TemporaryDirectory() as home, reverie.open(home, embedding={"background": False, "threads": 2}) as rv:
        rv.memory.save("Maya repaired the bicycle in Lisbon")
        assert len(rv.memory.search("who repaired a bicycle", mode="hybrid")) == 1
        print(sessions())
else:
    embedder = LocalEmbedder(threads=2)
    embedder.embed(["one stored text"])
    embedder.embed(["two stored", "texts"])
    print(sessions(), end=" ")
    embedder.embed_queries(["a query"])
    print(sessions())
"""


@pytest.mark.parametrize(("use", "loaded"), [("search", "1"), ("ingest", "1 2")])
def test_each_session_loads_at_its_first_use(use: str, loaded: str) -> None:
    """A one-shot search loads only the query session; a process that only embeds stored texts (one or
    many) only the batch session (~100 MiB and ~0.5 s each). In a child process: sessions are per process."""
    done = subprocess.run([sys.executable, "-c", SESSIONS, use], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == loaded
