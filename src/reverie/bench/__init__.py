"""Benchmarks: recall on LoCoMo (``reverie bench recall``), speed at scale (``reverie bench latency``), and
exact against approximate vector search (``python -m reverie.bench.ann``).

The dataset never ships with Reverie: the benchmark takes its path as an argument.
"""
