"""The bundled MiniLM embedder: batches embedded in parallel give the vectors one-at-a-time embedding
gives, in the callers' order, from any number of threads at once."""

from __future__ import annotations

import threading

import numpy as np
import pytest

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
