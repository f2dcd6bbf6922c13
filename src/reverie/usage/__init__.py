"""LLM usage: the token and cost report over the usage log."""
