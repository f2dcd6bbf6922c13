"""The knowledge graph: entities and relations, their validation, and extraction from saved text."""
