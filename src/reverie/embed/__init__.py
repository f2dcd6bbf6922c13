"""Embedders: the port (``base``), the providers, and the one resolver from a name to a provider."""
