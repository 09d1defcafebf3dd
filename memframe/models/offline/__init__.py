"""The ``offline`` backend: deterministic, no network. It does the jobs it has a recipe for by
extracting from the conversation itself (session notes now; memories later) and answers like a
model would: with a tool call the forked agent checks and applies."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from memframe.models.base import ModelError, ModelRequest, ModelResponse
from memframe.models.offline._common import OWN_CALL_PREFIX
from memframe.models.offline.consolidate import consolidate_recipe
from memframe.models.offline.memories import extract_memories_recipe
from memframe.models.offline.session_memory import session_notes_recipe

Recipe = Callable[[ModelRequest], ModelResponse]


class OfflineBackend:
    name = "offline"

    def __init__(self) -> None:
        self.recipes: dict[str, Recipe] = {
            "session_memory": session_notes_recipe,
            "extract_memories": extract_memories_recipe,
            "dream": consolidate_recipe,
        }

    @classmethod
    def from_options(cls, options: Mapping[str, Any], env: Mapping[str, str]) -> OfflineBackend:
        return cls()

    def supports(self, purpose: str) -> bool:
        return purpose in self.recipes

    def complete(self, request: ModelRequest) -> ModelResponse:
        recipe = self.recipes.get(request.purpose)
        if recipe is None:
            raise ModelError(
                f"the offline backend cannot do {request.purpose!r}: choose a model backend "
                "(settings 'model' or MEMFRAME_MODEL: anthropic, openai, claude-cli)"
            )
        answered = _tool_results_of_last_message(request)
        if answered is not None:
            # The recipe already acted; the agent reports what happened to our call. Stop.
            return ModelResponse(text=answered or "done", stop_reason="end_turn")
        return recipe(request)


def _tool_results_of_last_message(request: ModelRequest) -> str | None:
    """The errors reported for this backend's own calls, when the last message answers them."""
    if not request.messages:
        return None
    content = request.messages[-1].get("content")
    if not isinstance(content, list):
        return None
    ours = [
        block
        for block in content
        if isinstance(block, Mapping)
        and block.get("type") == "tool_result"
        and str(block.get("tool_use_id", "")).startswith(OWN_CALL_PREFIX)
    ]
    if not ours:
        return None
    return "; ".join(str(b.get("content", "")) for b in ours if b.get("is_error"))
