"""Taking memory in and out of Reverie: JSONL (lossless, every kind of record), Markdown notes, mem0 exports.

The CLI's ``reverie export`` / ``reverie import`` and docs/portability.md are the faces of this package.
"""
