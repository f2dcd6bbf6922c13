"""The conversation-log learning passes as the engine lists them: memory mining and episode extraction go
before consolidation (what they mint is consolidated by the next cycle); preference inference goes last among
the log's readers, because it clears the agent's log."""

from __future__ import annotations

from reverie.conversation.service import ConversationMemory
from reverie.dream.passes.base import DreamPass
from reverie.dream.passes.episodes import EpisodeExtractionPass
from reverie.dream.passes.mining import MemoryMiningPass
from reverie.dream.passes.preferences import PreferenceInferencePass
from reverie.memory.longterm import LongTermMemory
from reverie.skills.feedback import FeedbackStore


def conversation_passes(
    memory: LongTermMemory,
    conversation: ConversationMemory,
    feedback: FeedbackStore,
    *,
    mining: bool = True,
    episodes: bool = True,
    preferences: bool = True,
) -> tuple[list[DreamPass], list[DreamPass]]:
    """``(before_consolidation, last_readers)``: the enabled passes of each group, in order."""
    early: list[DreamPass] = []
    if mining:
        early.append(MemoryMiningPass(memory, conversation))
    if episodes:
        early.append(EpisodeExtractionPass(memory, conversation))
    late: list[DreamPass] = []
    if preferences:
        late.append(PreferenceInferencePass(memory, conversation, feedback))
    return early, late
