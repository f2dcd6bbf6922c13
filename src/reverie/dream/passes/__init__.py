"""The dream's passes: each a name, the capabilities it needs, and ``run(ctx) -> PassReport``."""
