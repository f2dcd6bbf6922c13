"""Benchmarks: recall on LoCoMo (``reverie bench recall``) and speed at scale (``reverie bench latency``).

The dataset never ships with Reverie: the benchmark takes its path as an argument.
"""
