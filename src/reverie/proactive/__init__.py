"""Proactive memory: user facts noticed in turns, their upkeep, and the per-turn hook."""
