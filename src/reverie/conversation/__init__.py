"""Conversation memory: sessions and turns, the window, archives, and compaction summaries."""
