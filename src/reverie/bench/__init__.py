"""Benchmarks: recall on LoCoMo and on the bundled everyday set (``reverie bench recall``), speed at scale
(``reverie bench latency``), and exact against approximate vector search (``python -m reverie.bench.ann``).

LoCoMo never ships with Reverie (CC BY-NC): the benchmark takes its path as an argument. The everyday set is
ours and ships as ``reverie/bench/data/everyday.json``.
"""
