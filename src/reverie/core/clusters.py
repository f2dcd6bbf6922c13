"""Near-duplicate candidate clusters for the consolidation pass (seed 001, Pass 1), pure.

The dream shows the model only eligible entries: the ones new or changed since their last review (the
*seeds*) and the members of near-duplicate clusters around them. This module finds those clusters.

- Similarity of two items is cosine when both carry a usable vector of the same length (finite, not all
  zero), else the Jaccard similarity of their token sets, so BM25-only deployments and mixed corpora
  still deduplicate. Items only ever cluster with items of their own ``group``.
- Each seed collects its nearest neighbours (similarity >= threshold, itself excluded) up to
  ``max_size - 1`` of them, by descending similarity with ids as tie-breaks; a seed with no neighbour
  forms no cluster. Overlapping clusters are merged, in seed order, only while the union stays within
  ``max_size``; otherwise both are kept, so **an id may appear in more than one cluster**.
- The search is exact: the result equals the brute-force evaluation of ``similarity`` over every pair.
  Cosine candidates come from chunked float32 matrix products with a rounding margin, then every
  candidate is re-scored with the exact pairwise formula; Jaccard candidates come from a prefix filter
  (a seed of n tokens overlapping an item in at least ceil(t * n) tokens shares one of any
  n - ceil(t * n) + 1 of its tokens with it, so only its rarest ones are probed), then are verified.
- No seeds, no work: an idle cycle returns before looking at a single item.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress
from operator import not_

import numpy as np
import numpy.typing as npt

COSINE = "cosine"
JACCARD = "jaccard"

_SAMPLE = 4096  # pool items whose tokens are counted to rank a seed's tokens by rarity
_TOLERANCE = 1e-9  # float slack of the (conservative) size and prefix bounds; verification is exact
_EXTREME = (1e-30, 1e30)  # vector norms float32 cannot divide by accurately


@dataclass(frozen=True, slots=True)
class Item:
    """One entry as the cluster finder sees it. ``group`` separates what may cluster (the entry's scope);
    ``tokens`` are its content tokens (``core.dedupe.content_tokens``); ``vector`` its embedding (float32,
    unit-normalised by contract, normalised again here) or None. Ids must be unique. The vector takes no
    part in equality or repr."""

    id: str
    group: Hashable
    tokens: frozenset[str]
    vector: npt.NDArray[np.float32] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Cluster:
    """A near-duplicate cluster: the seed first, then its members by descending similarity to the seed
    (members merged in from an overlapping cluster follow, in that cluster's order). ``similarity`` is the
    lowest similarity of a member to the seed that brought it in, ``by`` the measure behind it."""

    ids: tuple[str, ...]
    similarity: float
    by: str


# A neighbour of a seed: (similarity, id, measure, item index).
_Hit = tuple[float, str, str, int]


@dataclass(frozen=True, slots=True)
class Blocks:
    """How the cosine search cuts its matrix work. Results never depend on it (tests use tiny blocks so
    every chunking and pruning path runs): ``rows`` items and ``seeds`` seeds per product block, and
    ``crowd``, the candidates per seed in a block beyond which the block keeps only each seed's best."""

    rows: int = 8192
    seeds: int = 1024
    crowd: int = 16


DEFAULT_BLOCKS = Blocks()


def near_duplicate_clusters(
    items: Sequence[Item],
    seeds: Collection[str],
    *,
    threshold: float = 0.88,
    max_size: int = 3,
    blocks: Blocks = DEFAULT_BLOCKS,
) -> list[Cluster]:
    """The near-duplicate clusters around ``seeds`` (ids of ``items``; unknown ids are ignored), in the
    order of their seeds in ``items``. Every cluster holds a seed, 2 to ``max_size`` ids, all of one group.

    Raises ValueError for a threshold outside (0, 1], a ``max_size`` below 2 or duplicate item ids.
    """
    _validate(threshold, max_size)
    if not seeds:
        return []
    ids = _unique_ids(items)
    wanted = set(seeds)
    seed_rows = [i for i, id_ in enumerate(ids) if id_ in wanted]
    if not seed_rows:
        return []
    found = _neighbours(items, seed_rows, threshold, max_size - 1, blocks)
    candidates = []
    for s in seed_rows:
        hits = found.get(s)
        if hits:
            weakest = hits[-1]
            candidates.append(Cluster((items[s].id, *(hit[1] for hit in hits)), weakest[0], weakest[2]))
    return _merge(candidates, max_size)


def duplicate_pairs(items: Sequence[Item], *, threshold: float = 0.88, blocks: Blocks = DEFAULT_BLOCKS) -> int:
    """How many items have at least one near-duplicate (similarity >= threshold) in their group: the
    numerator of an audit's duplicate rate. Every item is a seed, so this scans all pairs' candidates:
    token sets stay sub-quadratic through the prefix filter, vectors cost a full n x n product in blocks
    (seconds for 20,000 vectors of 384 dimensions).

    Raises ValueError for a threshold outside (0, 1] or duplicate item ids.
    """
    _validate(threshold, 2)
    if len(items) < 2:
        return 0
    _unique_ids(items)
    return len(_neighbours(items, list(range(len(items))), threshold, 1, blocks))


def similarity(a: Item, b: Item) -> tuple[float, str]:
    """The similarity of two items and its measure: ``(cosine, "cosine")`` when both have usable vectors
    of the same length, else ``(jaccard, "jaccard")`` of their token sets (0 when both are empty).
    Symmetric. The cosine is computed with exactly rounded sums, so it does not depend on BLAS."""
    if a.vector is not None and b.vector is not None and a.vector.shape == b.vector.shape:
        left, right = _exact(a.vector), _exact(b.vector)
        if left is not None and right is not None:
            return _cosine(left, right), COSINE
    return _jaccard(a.tokens, b.tokens), JACCARD


# -- arguments ---------------------------------------------------------------------------------------


def _validate(threshold: float, max_size: int) -> None:
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if max_size < 2:
        raise ValueError(f"max_size must be at least 2, got {max_size}")


def _unique_ids(items: Sequence[Item]) -> list[str]:
    ids = [item.id for item in items]
    if len(set(ids)) != len(ids):
        raise ValueError("item ids must be unique")
    return ids


# -- pairwise measures -------------------------------------------------------------------------------


def _exact(vector: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.float64], float] | None:
    """A vector in float64 with its exactly summed squared norm, or None when it is not usable (not 1-D,
    empty, all zero or not finite)."""
    if vector.ndim != 1 or vector.shape[0] == 0:
        return None
    wide = vector.astype(np.float64)
    squared = math.fsum((wide * wide).tolist())
    if not (math.isfinite(squared) and squared > 0.0):
        return None
    return wide, squared


def _cosine(a: tuple[npt.NDArray[np.float64], float], b: tuple[npt.NDArray[np.float64], float]) -> float:
    """Exactly rounded dot over sqrt(|a|^2 |b|^2): symmetric, and 1.0 for a vector with itself (the square
    root of a rounded square is exact), so a threshold of 1 still joins identical vectors."""
    dot = math.fsum((a[0] * b[0]).tolist())
    return max(-1.0, min(1.0, dot / math.sqrt(a[1] * b[1])))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    shared = len(a & b)
    union = len(a) + len(b) - shared
    return shared / union if union else 0.0


# -- search ------------------------------------------------------------------------------------------


def _neighbours(
    items: Sequence[Item], seeds: list[int], threshold: float, limit: int, blocks: Blocks
) -> dict[int, list[_Hit]]:
    """For each seed (an index into ``items``) with a neighbour, its ``limit`` nearest ones by descending
    similarity, ids breaking ties: exactly what brute force over ``similarity`` would return."""
    found: dict[int, list[_Hit]] = defaultdict(list)
    for members, group_seeds in _groups(items, seeds):
        spaces, dim_of = _vector_spaces(items, members)
        for dim, (rows, matrix) in spaces.items():
            here = [s for s in group_seeds if dim_of.get(s) == dim]
            if here:
                _cosine_search(items, rows, matrix, here, threshold, limit, found, blocks)
        pool = _token_pool(members, group_seeds, dim_of, spaces)
        if pool:
            _jaccard_search(items, pool, group_seeds, dim_of, threshold, found)
    out = {}
    for s, hits in found.items():
        hits.sort(key=lambda hit: (-hit[0], hit[1]))
        out[s] = hits[:limit]
    return out


def _groups(items: Sequence[Item], seeds: list[int]) -> list[tuple[list[int], list[int]]]:
    """(members, seeds) of every group holding a seed, members in ``items`` order."""
    seeds_of: dict[Hashable, list[int]] = {}
    for s in seeds:
        seeds_of.setdefault(items[s].group, []).append(s)
    groups = [item.group for item in items]
    if len(seeds_of) == 1:  # the common case, one scope: a comprehension instead of a dictionary per item
        (only,) = seeds_of
        return [([i for i, group in enumerate(groups) if group is only or group == only], seeds_of[only])]
    members_of: dict[Hashable, list[int]] = {group: [] for group in seeds_of}
    for i, group in enumerate(groups):
        members = members_of.get(group)
        if members is not None:
            members.append(i)
    return [(members_of[group], seeds_of[group]) for group in seeds_of]


_Space = tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]  # item indices (ascending), normalised rows


def _vector_spaces(items: Sequence[Item], members: list[int]) -> tuple[dict[int, _Space], dict[int, int]]:
    """The usable vectors of ``members`` stacked by length, rows normalised, and each such member's
    vector length (a member missing from it is compared by tokens)."""
    vectors = [items[i].vector for i in members]
    dims = [0 if v is None or v.ndim != 1 else v.shape[0] for v in vectors]
    by_dim: dict[int, list[int]] = defaultdict(list)  # length -> positions in members
    if len(set(dims)) == 1:
        by_dim[dims[0]] = list(range(len(members)))
    else:
        for k, dim in enumerate(dims):
            by_dim[dim].append(k)
    by_dim.pop(0, None)
    spaces: dict[int, _Space] = {}
    dim_of: dict[int, int] = {}
    for dim, positions in by_dim.items():
        matrix = np.array([vectors[k] for k in positions], dtype=np.float32)
        rows = np.asarray(members, dtype=np.intp)[positions]
        norms = _norms(matrix)
        usable = np.isfinite(norms) & (norms > 0.0)
        if not usable.all():
            matrix, norms, rows = matrix[usable], norms[usable], rows[usable]
        if rows.size:
            _normalise(items, rows, matrix, norms)
            spaces[dim] = (rows, matrix)
            dim_of.update(dict.fromkeys(rows.tolist(), dim))
    return spaces, dim_of


def _norms(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """Row norms: float32 sums where they land in a safe range (then every entry is finite and one is not
    zero, so the row is usable exactly when ``_exact`` says so), float64 sums for the other rows."""
    squares = np.einsum("ij,ij->i", matrix, matrix).astype(np.float64)
    odd = np.flatnonzero(~((squares >= 1e-30) & (squares <= 1e30)))
    if odd.size:
        squares[odd] = np.einsum("ij,ij->i", matrix[odd], matrix[odd], dtype=np.float64)
    roots: npt.NDArray[np.float64] = np.sqrt(squares)
    return roots


def _normalise(
    items: Sequence[Item], rows: npt.NDArray[np.intp], matrix: npt.NDArray[np.float32], norms: npt.NDArray[np.float64]
) -> None:
    """Scale every row of ``matrix`` to unit length in place; norms float32 cannot represent accurately
    are handled in float64 from the item's own vector."""
    low, high = _EXTREME
    extreme = np.flatnonzero((norms < low) | (norms > high))
    safe = np.where((norms < low) | (norms > high), 1.0, norms).astype(np.float32)
    np.divide(matrix, safe[:, None], out=matrix)
    for k in extreme.tolist():
        vector = items[int(rows[k])].vector
        assert vector is not None
        matrix[k] = (vector.astype(np.float64) / norms[k]).astype(np.float32)


def _cosine_search(
    items: Sequence[Item],
    rows: npt.NDArray[np.intp],
    matrix: npt.NDArray[np.float32],
    seeds: list[int],
    threshold: float,
    limit: int,
    found: dict[int, list[_Hit]],
    blocks: Blocks,
) -> None:
    """Cosine neighbours of ``seeds`` (all with a row in ``rows``) appended to ``found``: float32 products
    pick the candidates with a margin ``slack`` bounding their rounding error, each candidate is then
    scored exactly. Candidates below the seed's ``limit``-th best (minus twice the margin) cannot make its
    top ``limit`` and are dropped before scoring."""
    # Rounding of a float32 product of unit rows of length d, normalisation included, stays below about
    # 2 * d * 2**-24; the margin is four times that.
    slack = 1e-5 + 8.0 * matrix.shape[1] * 2.0**-24
    positions = np.searchsorted(rows, np.asarray(seeds, dtype=np.intp))
    for start in range(0, len(seeds), blocks.seeds):
        chunk = positions[start : start + blocks.seeds]
        picked = _cosine_candidates(matrix, chunk, threshold - slack, limit, 2.0 * slack, blocks)
        for k, candidates in enumerate(picked):
            s = seeds[start + k]
            exact_seed = _exact(_vector(items[s]))
            assert exact_seed is not None
            for j in rows[candidates].tolist():
                exact_other = _exact(_vector(items[j]))
                if exact_other is None:
                    continue
                value = _cosine(exact_seed, exact_other)
                if value >= threshold:
                    found[s].append((value, items[j].id, COSINE, j))


def _vector(item: Item) -> npt.NDArray[np.float32]:
    assert item.vector is not None
    return item.vector


def _cosine_candidates(
    matrix: npt.NDArray[np.float32],
    positions: npt.NDArray[np.intp],
    floor: float,
    limit: int,
    margin: float,
    blocks: Blocks,
) -> list[npt.NDArray[np.intp]]:
    """Per query row (``positions`` into ``matrix``), the rows other than itself whose float32 cosine is at
    least ``floor`` and within ``margin`` of its ``limit``-th best: a superset of its true top ``limit``."""
    queries = matrix[positions]
    picked_q: list[npt.NDArray[np.intp]] = []
    picked_r: list[npt.NDArray[np.intp]] = []
    picked_v: list[npt.NDArray[np.float32]] = []
    for start in range(0, matrix.shape[0], blocks.rows):
        block = queries @ matrix[start : start + blocks.rows].T
        inside = (positions >= start) & (positions < start + block.shape[1])
        block[np.flatnonzero(inside), positions[inside] - start] = -np.inf  # not its own neighbour
        live = np.flatnonzero(block.max(axis=1) >= floor)
        if not live.size:
            continue
        block = block[live]
        mask = block >= floor
        if block.shape[1] > limit and np.count_nonzero(mask) > block.shape[0] * (limit + blocks.crowd):
            best = -np.partition(-block, limit - 1, axis=1)[:, limit - 1]
            mask &= block >= (best - margin)[:, None]
        q, r = np.nonzero(mask)
        picked_q.append(live[q])
        picked_r.append(r + start)
        picked_v.append(block[q, r])
    if not picked_q:
        return [np.empty(0, dtype=np.intp)] * len(positions)
    return _prune(
        np.concatenate(picked_q), np.concatenate(picked_r), np.concatenate(picked_v), len(positions), limit, margin
    )


def _prune(
    q: npt.NDArray[np.intp], r: npt.NDArray[np.intp], v: npt.NDArray[np.float32], count: int, limit: int, margin: float
) -> list[npt.NDArray[np.intp]]:
    """Split candidate (query, row, value) triples by query, keeping per query only the values within
    ``margin`` of its ``limit``-th best."""
    order = np.argsort(q, kind="stable")
    q, r, v = q[order], r[order], v[order]
    bounds = np.searchsorted(q, np.arange(count + 1))
    out: list[npt.NDArray[np.intp]] = []
    for k in range(count):
        rows, values = r[bounds[k] : bounds[k + 1]], v[bounds[k] : bounds[k + 1]]
        if rows.size > limit:
            best = -np.partition(-values, limit - 1)[limit - 1]
            rows = rows[values >= best - margin]
        out.append(rows)
    return out


def _jaccard_search(
    items: Sequence[Item],
    pool: list[int],
    seeds: list[int],
    dim_of: dict[int, int],
    threshold: float,
    found: dict[int, list[_Hit]],
) -> None:
    """Jaccard neighbours of ``seeds`` among ``pool``, for every pair not compared by cosine, appended to
    ``found``. Each seed probes only its prefix (``_prefixes``); every probed pair passes a size bound
    (t * |a| <= |b| <= |a| / t) and is then verified exactly."""
    probe = _prefixes(items, pool, seeds, threshold)
    keys = frozenset(probe)
    token_sets = [items[j].tokens for j in pool]
    touched = compress(
        zip(pool, token_sets, strict=True), map(not_, map(keys.isdisjoint, token_sets))
    )  # no Python loop
    for j, other in touched:
        size, length = len(other), dim_of.get(j)
        for s in {s for token in other & keys for s in probe[token]}:
            if s == j or (length is not None and dim_of.get(s) == length):
                continue
            tokens = items[s].tokens
            if threshold * len(tokens) - _TOLERANCE > size or size > len(tokens) / threshold + _TOLERANCE:
                continue
            value = _jaccard(tokens, other)
            if value >= threshold:
                found[s].append((value, items[j].id, JACCARD, j))


def _token_pool(members: list[int], seeds: list[int], dim_of: dict[int, int], spaces: dict[int, _Space]) -> list[int]:
    """The members some seed must compare by tokens: all of them when a seed has no usable vector or the
    seeds' vectors differ in length, else those without a usable vector of the seeds' one length."""
    seed_dims = {dim_of.get(s) for s in seeds}
    if None in seed_dims or len(seed_dims) > 1:
        return members
    (dim,) = seed_dims
    assert dim is not None
    reached = spaces[dim][0]
    if len(reached) == len(members):
        return []
    return np.setdiff1d(np.asarray(members, dtype=np.intp), reached, assume_unique=True).tolist()  # type: ignore[no-any-return]


def _prefixes(items: Sequence[Item], pool: list[int], seeds: list[int], threshold: float) -> dict[str, list[int]]:
    """Token -> the seeds probing it. A seed of n tokens probes its n - ceil(t * n) + 1 rarest tokens
    (ties by token): J(a, b) >= t implies |a & b| >= ceil(t * |a|), so *any* that many tokens of a include
    one of b's. Rarity only saves work, so it is counted on an even sample of a large pool. The ceiling is
    taken a hair low, which only lengthens the prefix."""
    step = max(1, len(pool) // max(_SAMPLE, 4 * len(seeds)))
    frequency = Counter(chain.from_iterable(items[j].tokens for j in pool[::step]))
    token_sets = [items[s].tokens for s in seeds]
    vocabulary = sorted(frozenset().union(*token_sets), key=lambda w: (frequency[w], w))
    rank = {token: k for k, token in enumerate(vocabulary)}
    probe: dict[str, list[int]] = defaultdict(list)
    for s, tokens in zip(seeds, token_sets, strict=True):
        if not tokens:
            continue  # an empty set is similar to nothing
        needed = max(1, math.ceil(threshold * len(tokens) - _TOLERANCE))
        for token in sorted(tokens, key=rank.__getitem__)[: len(tokens) - needed + 1]:
            probe[token].append(s)
    return probe


# -- merging -----------------------------------------------------------------------------------------


def _merge(candidates: list[Cluster], max_size: int) -> list[Cluster]:
    """Merge overlapping clusters, in order, while the union stays within ``max_size``: each candidate
    joins the earliest overlapping cluster it fits with, and a grown cluster then absorbs any later one
    it now overlaps and fits with. A merged cluster keeps the earlier position, seed and order."""
    out: list[Cluster] = []
    for candidate in candidates:
        target = _fitting(out, candidate, max_size, start=0)
        if target is None:
            out.append(candidate)
            continue
        out[target] = _union(out[target], candidate)
        while (other := _fitting(out, out[target], max_size, start=target + 1)) is not None:
            out[target] = _union(out[target], out.pop(other))
    return out


def _fitting(clusters: list[Cluster], candidate: Cluster, max_size: int, *, start: int) -> int | None:
    ids = set(candidate.ids)
    for k in range(start, len(clusters)):
        other = clusters[k]
        if other is not candidate and not ids.isdisjoint(other.ids) and len(ids.union(other.ids)) <= max_size:
            return k
    return None


def _union(first: Cluster, second: Cluster) -> Cluster:
    ids = first.ids + tuple(i for i in second.ids if i not in first.ids)
    weakest = second if second.similarity < first.similarity else first
    return Cluster(ids, weakest.similarity, weakest.by)
