"""How full the agent's context is: the last provider-reported usage plus an estimate of what came
after it."""

from __future__ import annotations

from collections.abc import Callable

from memframe.messages import Message


class ContextMeter:
    """Tracks context tokens as messages arrive.

    Context tokens = the usage of the most recent assistant response (input + cache creation +
    cache read + output) plus an estimate of every message after it. A response split over
    several records sharing a message id is counted once.
    """

    __slots__ = ("_estimate", "_seen_ids", "estimated", "reported")

    def __init__(self, estimate: Callable[[str], int]) -> None:
        self._estimate = estimate
        self._seen_ids: set[str] = set()
        self.reported = 0
        self.estimated = 0

    @property
    def tokens(self) -> int:
        return self.reported + self.estimated

    def observe(self, message: Message) -> int:
        """Account for ``message``; returns the context tokens after it."""
        usage = message.usage
        if message.role == "assistant" and usage is not None and message.id is not None:
            if message.id in self._seen_ids:
                return self.tokens
            self._seen_ids.add(message.id)
            self.reported = usage.context_tokens
            self.estimated = 0
            return self.tokens
        if message.role == "assistant" and usage is not None:
            self.reported = usage.context_tokens
            self.estimated = 0
            return self.tokens
        self.estimated += self._estimate(message.estimable_text())
        return self.tokens

    def reset(self, tokens: int = 0) -> None:
        """After a compaction: the context now holds only ``tokens`` (e.g. the summary)."""
        self.reported = 0
        self.estimated = tokens
