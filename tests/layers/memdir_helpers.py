"""Shared helpers for the memory directory tests (memdir, extract memories, dream)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from memframe.models import ModelRequest, ModelResponse, ToolCall

MEMDIR = "memframe.layers.memdir:MemdirLayer"
EXTRACT = "memframe.layers.extract_memories:ExtractMemoriesLayer"
DREAM = "memframe.layers.dream:DreamLayer"
SESSION_MEMORY = "memframe.layers.session_memory:SessionMemoryLayer"
ALL_MEMORY_LAYERS = [SESSION_MEMORY, MEMDIR, EXTRACT, DREAM]
DAY = 86_400.0
HOUR = 3_600.0


def write_settings(tmp_path: Path, settings: dict[str, Any]) -> Path:
    """The user's memframe settings file of frames opened with ``open_test_frame(tmp_path)``."""
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    path = config / "settings.json"
    path.write_text(json.dumps(settings), encoding="utf-8")
    return path


def expected_key(path: Path) -> str:
    """The per-project directory name, computed here independently of ``memframe.paths``: every
    non-alphanumeric character becomes ``-``; names over 120 characters are cut and get a hash."""
    text = str(path)
    slug = re.sub(r"[^A-Za-z0-9]", "-", text)
    if len(slug) <= 120:
        return slug
    return slug[:107] + "-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


def memory_text(name: str, description: str, kind: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\ntype: {kind}\n---\n\n{body}\n"


def write_memory(
    root: Path,
    file: str,
    body: str,
    *,
    name: str | None = None,
    description: str | None = None,
    kind: str = "feedback",
    age_days: float | None = None,
    mtime: float | None = None,
    raw: str | None = None,
) -> Path:
    """A memory file written by hand (mode 0600), optionally aged by ``age_days``."""
    path = root / file
    private_dir(path.parent)
    text = (
        raw
        if raw is not None
        else memory_text(
            name or Path(file).stem.replace("-", " "),
            description or body.splitlines()[0][:100],
            kind,
            body,
        )
    )
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    if age_days is not None:
        mtime = time.time() - age_days * DAY
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def index_entries(text: str) -> list[str]:
    """Files named by the index lines of a ``MEMORY.md`` (``- [Title](file)``), in order."""
    return re.findall(r"^\s*[-*]\s*\[[^\]]*\]\(([^)\s]+)\)", text, re.MULTILINE)


def memory_files(root: Path) -> list[str]:
    """Memory files (relative POSIX paths) of a memory directory: private and team."""
    found = [p for p in root.glob("*.md") if p.name != "MEMORY.md"]
    found += list((root / "team").glob("*.md"))
    return sorted(p.relative_to(root).as_posix() for p in found if not p.name.startswith("."))


def held_until(release: threading.Event, text: str = "Nothing worth saving.") -> Any:
    """A scripted reply that blocks its call until ``release`` is set (for tests of background
    work on worker threads: "never blocks the caller", one run at a time)."""

    def reply(request: ModelRequest) -> str:
        assert release.wait(20), "the test never released the model call"
        return text

    return reply


def writes(*files: tuple[str | Path, str]) -> ModelResponse:
    """A model answer made of ``Write`` tool calls."""
    calls = tuple(
        ToolCall(f"w{n}", "Write", {"file_path": str(path), "content": content})
        for n, (path, content) in enumerate(files)
    )
    return ModelResponse(tool_calls=calls, stop_reason="tool_use")


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(
    text: str = "Done.", *tool_uses: tuple[str, dict[str, Any]], msg_id: str = ""
) -> dict:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for n, (name, tool_input) in enumerate(tool_uses):
        content.append(
            {"type": "tool_use", "id": f"{msg_id or 'tu'}-{n}", "name": name, "input": tool_input}
        )
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if msg_id:
        message["id"] = msg_id
    return message


def tool_result(tool_use_id: str, text: str = "ok") -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": text}],
    }
