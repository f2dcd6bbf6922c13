"""Adapters that let other agent frameworks keep their memory in Reverie (each behind an optional extra).

- ``reverie.integrations.langgraph``: ``ReverieStore``, a LangGraph ``BaseStore`` (``pip install
  'reverie[langgraph]'``), so LangGraph agents and LangMem use Reverie as their long-term store.
"""
