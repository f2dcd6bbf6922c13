"""Working memory: namespaced scratch entries with a time to live, and their ranking for a turn."""
