"""The LLM: the port (``base``), the OpenAI-compatible chat client, the usage ledger, and the one resolver
from settings to a client."""

from reverie.llm.base import LLM, BusySignal, Completion, Message, Usage, parse_json_answer
from reverie.llm.openai import OpenAIChat
from reverie.llm.resolve import make_llm
from reverie.llm.usage import Prices, UsageLedger, UsageRecord, UsageTotals

__all__ = [
    "LLM",
    "BusySignal",
    "Completion",
    "Message",
    "OpenAIChat",
    "Prices",
    "Usage",
    "UsageLedger",
    "UsageRecord",
    "UsageTotals",
    "make_llm",
    "parse_json_answer",
]
