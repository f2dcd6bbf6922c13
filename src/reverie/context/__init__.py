"""The per-turn context builder: what to inject for a message, from every kind of memory."""
