"""Process plumbing shared by services and adapters: background worker threads, the OpenAI-compatible HTTP client."""
