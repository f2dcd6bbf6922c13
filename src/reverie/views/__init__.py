"""Plain views of Reverie's values for the faces (CLI ``--json``, HTTP API, tools)."""
