"""Memory services: long-term facts (working and conversation memory land here too)."""
