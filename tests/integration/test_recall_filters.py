"""A filter on search never hides a match beyond the candidate depth: with a filter, BM25 candidates come from
the store's full-text search (the filter in its query) and the vector index is asked deeper until enough
candidates pass, so the three rare entries among 400 equally good matches are all found in every mode."""

from __future__ import annotations

import pytest

import reverie
from reverie.types import EntryFilter


@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid"])
def test_a_narrow_filter_finds_matches_past_the_candidate_depth(rv: reverie.Reverie, mode: str) -> None:
    items = [{"content": f"descale the kettle every month, note {n}", "tags": ["common"]} for n in range(400)]
    rare = [{"content": f"descale the kettle every month, note {n}", "tags": ["rare"]} for n in range(400, 403)]
    saved = rv.memory.save_many([*items, *rare], dedup=False)
    rv.embed_pending()
    wanted = {r.id for r in saved[-3:]}
    narrow = EntryFilter(tags_any=("rare",))
    hits = rv.memory.search("descale kettle", mode=mode, limit=10, filter=narrow, min_similarity=0.0)
    assert {h.entry.id for h in hits} == wanted, [h.matched_by for h in hits]
    unfiltered = rv.memory.search("descale kettle", mode=mode, limit=10, min_similarity=0.0)
    assert len(unfiltered) == 10
