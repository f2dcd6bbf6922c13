"""Repositories written once over a ``Dialect`` (``sql/dialect.py``); each backend builds them with its database."""
