"""The key-value store: exact keys with versions, per agent."""
