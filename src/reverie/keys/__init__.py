"""API keys: minting, hashing, verifying, scopes (the HTTP API and the MCP server check them)."""
