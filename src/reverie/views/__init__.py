"""Plain views of Reverie's values for the faces (CLI ``--json``, HTTP API, tools): ``plain`` (any value as
JSON, and ``iso_z``, the one time format) and ``entry`` (which fields of a long-term entry each face shows)."""
