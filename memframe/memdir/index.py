"""``MEMORY.md``: the index of the memory directory, one line per memory, never content."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

INDEX_FILE = "MEMORY.md"
MAX_LINES = 200
MAX_BYTES = 25_000
HOOK_CHARS = 150
_LINE = re.compile(r"^\s*[-*]\s*\[(?P<title>[^\]]*)\]\((?P<file>[^)\s]+)\)")


def index_line(title: str, file: str, hook: str) -> str:
    hook = " ".join(hook.split())
    if len(hook) > HOOK_CHARS:
        hook = hook[: HOOK_CHARS - 1].rstrip() + "…"
    title = " ".join(title.split()).replace("]", ")")
    return f"- [{title}]({file})" + (f" — {hook}" if hook else "")


def indexed_files(text: str) -> dict[str, str]:
    """File → its index line, for every line that points at a file."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            found.setdefault(match.group("file"), line)
    return found


def update_index(text: str, set_lines: Mapping[str, str], remove: Iterable[str] = ()) -> str:
    """``text`` with the line of each file in ``set_lines`` replaced (or appended) and the lines
    of ``remove`` dropped; every other line (headings, the user's own notes) stays."""
    removed = set(remove)
    pending = dict(set_lines)
    out: list[str] = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            out.append(line)
            continue
        file = match.group("file")
        if file in removed:
            continue
        if file in pending:
            out.append(pending.pop(file))
        elif file in set_lines:
            continue  # a second line for the same file: drop it
        else:
            out.append(line)
    while out and not out[-1].strip():
        out.pop()
    out.extend(pending.values())
    return "\n".join(out) + "\n" if out else ""


def load_for_prompt(text: str) -> tuple[str, list[str]]:
    """The index as loaded into a prompt: at most ``MAX_LINES`` lines, then at most ``MAX_BYTES``
    bytes cut at a line boundary, with a warning line for each limit that fired."""
    lines = text.splitlines()
    warnings: list[str] = []
    if len(lines) > MAX_LINES:
        warnings.append(
            f"> WARNING: {INDEX_FILE} is {len(lines)} lines (limit: {MAX_LINES}). "
            "Only part of it was loaded."
        )
        lines = lines[:MAX_LINES]
    if len("\n".join(lines).encode("utf-8")) > MAX_BYTES:
        kept: list[str] = []
        used = 0
        for line in lines:
            cost = len(line.encode("utf-8")) + 1
            if used + cost > MAX_BYTES:
                break
            kept.append(line)
            used += cost
        warnings.append(
            f"> WARNING: {INDEX_FILE} is {len(text.encode('utf-8')):,} bytes "
            f"(limit: {MAX_BYTES:,}). Only part of it was loaded."
        )
        lines = kept
    loaded = "\n".join(lines)
    if warnings:
        loaded = loaded + "\n\n" + "\n".join(warnings)
    return loaded, warnings


EMPTY_INDEX = "(empty: nothing saved yet)"


def instructions(memory_dir: str) -> str:
    """The memory instructions for the agent (read from the package's data files directly:
    ``importlib.resources`` costs the hook's fast path more than the read)."""
    import memframe

    path = Path(memframe.__file__).parent / "data" / "memdir" / "instructions.md"
    if path.is_file():
        text = path.read_text("utf-8")
    else:  # not a plain file layout (a zip): the resources API reads it
        from importlib import resources

        text = (resources.files("memframe") / "data" / "memdir" / "instructions.md").read_text(
            "utf-8"
        )
    return text.replace("{{memory_dir}}", memory_dir)


def memory_prompt(memory_dir: str, index_text: str) -> tuple[str, list[str]]:
    """The "Memory" block's text: the instructions, then ``MEMORY.md`` cut to its limits (with a
    warning line per limit that fired), and those warnings."""
    loaded, warnings = load_for_prompt(index_text)
    text = instructions(memory_dir) + "\n\n## MEMORY.md\n\n" + (loaded.strip() or EMPTY_INDEX)
    return text, warnings
