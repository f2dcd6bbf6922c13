"""memory_query (seed 003's "More ways to query"): search_memory's results plus its query options —
``pin_first``, ``include_superseded``, ``include_related`` (0-3 hops of related entries per result) and
``answer`` (a short answer from the LLM with the ids of the entries it came from).

Invariants:
- ``answer`` needs an LLM: without one the call is refused before anything is searched.
- The LLM only proposes: the ids it cites are kept only when they are among the entries it was shown,
  in its order, each once; an answer that is not the small JSON object is an error result.
- An empty search asks the LLM nothing, and says so in the recall family's words.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from reverie.errors import LLMError
from reverie.llm.base import Message
from reverie.memory.explore import Related
from reverie.tools import family
from reverie.tools.base import ToolContext, ToolError, ToolResult, entry_line
from reverie.tools.explore import describe, related_data, whole
from reverie.tools.longterm import render_results
from reverie.tools.services import ToolServices
from reverie.types import MemoryEntry

ANSWER_ENTRY_CHARS = 2000  # of each entry's text shown to the LLM
ANSWER_MAX_TOKENS = 512
ANSWER_PURPOSE = "tools.memory_query"
ANSWER_SYSTEM = (
    "You answer a question from an agent's long-term memory entries. Use only the entries given, never "
    "outside knowledge. If they do not answer the question, say so. Reply with one JSON object and nothing "
    'else: {"answer": "<a short answer>", "ids": ["<the id of every entry the answer came from>"]}.'
)
NEEDS_LLM = (
    "answer=true needs an LLM, and none is configured (llm.provider is none); call memory_query without "
    "answer to get the matching memories, or configure [llm]"
)


class QueryAnswer(BaseModel):
    """The JSON object the LLM answers with."""

    answer: str
    ids: list[str] = Field(default_factory=list)


def memory_query(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    wants_answer = args.get("answer", False) is True
    if wants_answer and rv.llm is None:
        raise ToolError(NEEDS_LLM, kind="needs_llm", field="answer")
    hops = whole(args.get("include_related"), 0)
    query = args["query"]
    results = rv.memory.search(
        query,
        pin_first=args.get("pin_first", False),
        include_superseded=args.get("include_superseded", False),
        scope=ctx.scope,
        limit=args.get("limit"),
    )
    base = render_results(rv, results, query=query, category=None, ctx=ctx, name=family.SEARCH_MEMORY)
    related: list[Related] = []
    if hops and results:
        seen = {hit.entry.id for hit in results}
        for hit in results:
            related.extend(rv.explorer.walk(hit.entry, hops, ctx.scope, seen=seen))
    lines = [base.text]
    data = {**base.data, "related": [related_data(r) for r in related]}
    if related:
        now = rv.clock.now()
        lines.append(f"Related memories (within {hops} hop(s) of the results):")
        lines.extend(f"{entry_line(r.entry, now)}\n  hop {r.hop}: {describe(r)}" for r in related)
    if wants_answer:
        shown = [hit.entry for hit in results] + [r.entry for r in related]
        answer, cited = _answer(rv, query, shown) if shown else (None, [])
        data["answer"], data["ids"] = answer, cited
        if answer is not None:
            sources = ", ".join(f"[{i}]" for i in cited) or "no entry cited"
            lines[:0] = [f"Answer: {answer}", f"From: {sources} (open the cited memories to check)", ""]
    return ToolResult("\n".join(lines), data)


def _answer(rv: ToolServices, query: str, entries: list[MemoryEntry]) -> tuple[str, list[str]]:
    """The LLM's short answer and the ids it cites that are among ``entries``."""
    llm = rv.llm
    if llm is None:  # checked before searching; kept for the type checker
        raise ToolError(NEEDS_LLM, kind="needs_llm", field="answer")
    blocks = [f"[{e.id}] ({e.category}) {e.content[:ANSWER_ENTRY_CHARS]}" for e in entries]
    prompt = f"Question: {query}\n\n## Entries ({len(entries)})\n" + "\n".join(blocks)
    messages = [Message.system(ANSWER_SYSTEM), Message.user(prompt)]
    try:
        with llm.foreground():  # a user's turn: background dream work waits for it
            found, _ = llm.complete_json(
                messages, QueryAnswer, max_tokens=ANSWER_MAX_TOKENS, temperature=0.0, purpose=ANSWER_PURPOSE
            )
    except LLMError as exc:
        raise ToolError(f"the LLM gave no usable answer: {exc}", kind="llm") from None
    known = {e.id for e in entries}
    cited = [i for i in dict.fromkeys(found.ids) if i in known]
    return found.answer.strip(), cited
