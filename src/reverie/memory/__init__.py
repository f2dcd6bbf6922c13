"""Long-term memory: facts with provenance, save-time dedup, aging, lint, expansion and contradiction."""
