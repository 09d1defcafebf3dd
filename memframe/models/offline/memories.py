"""Memories without a model: the user's explicit statements, saved as typed memory files.

"remember that …", "always …", "never …", "I prefer …" and corrections of the agent ("no, use …",
"don't …") in the new part of the conversation become ``feedback`` or ``user`` memories, each
answered as one ``Write`` into the memory directory. A statement already in the manifest (same
normalised text) is not written again.
"""

from __future__ import annotations

import re
from pathlib import Path

from memframe import _backend
from memframe.memdir.files import normalise, render_memory, slugify
from memframe.models.base import ModelRequest, ModelResponse, ToolCall
from memframe.models.offline._common import (
    CORRECTION,
    OWN_CALL_PREFIX,
    clip,
    read_conversation,
    user_answers,
)

MAX_STATEMENT = 300
MAX_MESSAGE = 4_000  # longer user messages are pasted material, not statements
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_REMEMBER = re.compile(r"\b(?:please\s+)?remember\s*(?:that|this|:|,)?\s*(?P<what>.+)", re.I)
_RULE = re.compile(
    r"^(?:please\s+)?(?:(?:you\s+)?(?:should\s+)?)(?P<what>(?:always|never)\b(?!\s+mind\b).+)", re.I
)
_PREFER = re.compile(
    r"\bI(?:\s+really)?\s+(?:prefer|hate|dislike|want you to|would like you to"
    r"|'d like you to)\b.+",
    re.I,
)
# The durable forms people state conventions in: "we use X, not Y", "you should use …",
# "please keep …", "use X instead of Y".
_CONVENTION = re.compile(
    r"^(?:we|I)\s+(?:always\s+)?use\s+\S.*(?:\bnot\b|\bnever\b|\binstead\b)"
    r"|^(?:you\s+should|please)\s+(?:always\s+)?(?:use|keep)\b.+"
    r"|^use\s+\S.+\binstead of\b.+",
    re.I,
)
# "I'm the tech lead", "I am the maintainer of …"
_ROLE = re.compile(r"^I(?:'m| am) (?:the|a|an) [\w -]{2,40}\b", re.I)
# "bugs are tracked in Linear", "the dashboard is at grafana.example/d/…"
_REFERENCE = re.compile(r"\b(?:is|are) tracked in\b|\bdashboard is\b", re.I)
_ABOUT_USER = re.compile(r"\b(?:I|I'm|I am|my|me|mine)\b", re.I)


def _statement(sentence: str) -> tuple[str, str] | None:
    """The memory one sentence states by itself, if it states one."""
    if match := _REMEMBER.search(sentence):
        what = match.group("what").strip()
        return ("user" if _ABOUT_USER.search(what) else "feedback", _capital(what))
    if match := _RULE.match(sentence):
        return ("feedback", _capital(match.group("what").strip()))
    if _PREFER.search(sentence):
        return ("user", _capital(sentence))
    if _CONVENTION.match(sentence):
        return ("feedback", _capital(sentence))
    if _ROLE.match(sentence):
        return ("user", _capital(sentence))
    if _REFERENCE.search(sentence):
        return ("reference", _capital(sentence))
    return None


MAX_WHY = 2  # sentences of reason kept with a correction


def statements(text: str) -> list[tuple[str, str]]:
    """``(type, statement)`` for each explicit statement in one user message. A correction
    (the message's first sentence) keeps the sentences after it that say why, up to the next
    statement: the reason is what makes it worth remembering."""
    if len(text) > MAX_MESSAGE:
        return []
    sentences = [s.strip(" -*>\t") for s in _SENTENCE.split(text.strip())]
    found: list[tuple[str, str]] = []
    for index, sentence in enumerate(sentences):
        if not sentence or len(sentence) > MAX_STATEMENT:
            continue
        stated = _statement(sentence)
        if stated is not None:
            found.append(stated)
        elif index == 0 and CORRECTION.match(sentence) and len(sentence.split()) >= 3:
            why: list[str] = []
            for following in sentences[1 : 1 + MAX_WHY]:
                if not following or len(following) > MAX_STATEMENT or _statement(following):
                    break
                why.append(following)
            found.append(("feedback", " ".join([f"Correction from the user: {sentence}", *why])))
    return found


_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")
_HAN = re.compile(r"[\u4e00-\u9fff]")


def observations(requests: list[str]) -> list[tuple[str, str]]:
    """Durable facts about how the user works, from the shape of their requests: the language
    they write in. (Slash commands are not remembered: their files are in the project.)"""
    found: list[tuple[str, str]] = []
    for request in requests:
        language = _language(request)
        if language:
            found.append(("user", f"The user sometimes writes to the agent in {language}."))
    return found


def _language(text: str) -> str | None:
    if _KANA.search(text):
        return "Japanese"
    if _HANGUL.search(text):
        return "Korean"
    if _HAN.search(text):
        return "Chinese"
    return None


def _capital(text: str) -> str:
    text = text.rstrip()
    return text[:1].upper() + text[1:]


def extract_memories_recipe(request: ModelRequest) -> ModelResponse:
    task = request.task
    memory_dir = Path(str(task["memory_dir"]))
    start = int(task.get("conversation_start", 0))
    end = int(task.get("conversation_end", len(request.messages)))
    known = {str(entry["hash"]) for entry in task.get("manifest", [])}
    taken = {str(entry["file"]) for entry in task.get("manifest", [])}
    conv = read_conversation(request.messages[start:end])
    calls: list[ToolCall] = []
    requests = [turn.request for turn in conv.turns if turn.request]
    found = [pair for text in [*requests, *user_answers(conv)] for pair in statements(text)]
    for kind, statement in [*found, *observations(requests)]:
        digest = f"{_backend.xxh3_64(normalise(statement)):016x}"
        if digest in known:
            continue
        known.add(digest)
        name = clip(statement, 60).rstrip("…").rstrip(" .,;:")
        slug = slugify(name)
        file = f"{slug}.md"
        number = 1
        while file in taken:
            number += 1
            file = f"{slug}-{number}.md"
        taken.add(file)
        content = render_memory(name, clip(statement, 150), kind, statement)
        calls.append(
            ToolCall(
                f"{OWN_CALL_PREFIX}{len(calls) + 1}",
                "Write",
                {"file_path": str(memory_dir / file), "content": content},
            )
        )
    if not calls:
        return ModelResponse(text="Nothing new to remember.", stop_reason="end_turn")
    return ModelResponse(tool_calls=tuple(calls), stop_reason="tool_use")
