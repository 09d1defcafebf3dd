"""What layers contribute to the agent's prompt through ``collect_context``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """A titled piece of text to inject into the prompt.

    :param source: the layer that produced it (e.g. ``"memdir"``).
    :param title: a short heading.
    :param text: the content.
    """

    source: str
    title: str
    text: str

    def render(self) -> str:
        return f"# {self.title}\n\n{self.text.rstrip()}\n"
