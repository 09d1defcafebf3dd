"""Session memory's notes format — the ``summary.md`` the ``session_memory`` layer keeps under
``session-memory/``: ``# Header`` + italic ``_description_`` sections, validation that an update
kept them, and the section budget."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from memframe.config import read_override

_HEADER = re.compile(r"^# \S.*$")
_ITALIC = re.compile(r"^_[^_\n].*_$")


class NotesFormatError(ValueError):
    """A template, or a notes file, does not have the required section structure."""


@dataclass(frozen=True, slots=True)
class Section:
    header: str  # the whole "# ..." line
    description: str  # the whole "_..._" line
    body: str  # everything after the description line, stripped

    @property
    def title(self) -> str:
        return self.header[2:].strip()


def parse_sections(text: str) -> tuple[str, list[Section]]:
    """Split notes into (preamble, sections). A section is a ``# `` line, an italic line right
    after it, and the body up to the next section."""
    lines = text.replace("\r\n", "\n").split("\n")
    starts = [
        i
        for i in range(len(lines) - 1)
        if _HEADER.match(lines[i]) and _ITALIC.match(lines[i + 1].strip())
    ]
    preamble = "\n".join(lines[: starts[0]] if starts else lines).strip()
    sections = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        body = "\n".join(lines[start + 2 : end]).strip()
        sections.append(Section(lines[start], lines[start + 1].strip(), body))
    return preamble, sections


def render_sections(sections: Sequence[Section]) -> str:
    parts = []
    for section in sections:
        block = f"{section.header}\n{section.description}\n"
        if section.body:
            block += f"{section.body}\n"
        parts.append(block)
    return "\n".join(parts)


class Template:
    """The notes template: the sections every notes file keeps, in order."""

    def __init__(self, text: str, *, origin: str = "template") -> None:
        _, sections = parse_sections(text)
        if not sections:
            raise NotesFormatError(
                f"{origin}: a notes template needs at least one '# Header' line followed by an "
                "italic '_description_' line"
            )
        titles = [s.title for s in sections]
        duplicates = sorted({t for t in titles if titles.count(t) > 1})
        if duplicates:
            raise NotesFormatError(f"{origin}: duplicate section(s) {', '.join(duplicates)}")
        self.origin = origin
        self.sections = sections
        self.text = render_sections([Section(s.header, s.description, "") for s in sections])

    def missing_from(self, notes: str) -> list[str]:
        """Template sections whose header + description pair is not intact in ``notes``."""
        _, present = parse_sections(notes)
        pairs = {(s.header, s.description) for s in present}
        return [s.title for s in self.sections if (s.header, s.description) not in pairs]

    def check(self, notes: str) -> None:
        """Raise :class:`NotesFormatError` when an update lost or changed a header/description."""
        missing = self.missing_from(notes)
        if missing:
            raise NotesFormatError(
                "the update removed or changed the header or description line of: "
                + ", ".join(missing)
            )

    def is_empty(self, notes: str) -> bool:
        """True when ``notes`` has no content beyond the template's own lines."""
        preamble, sections = parse_sections(notes)
        return not preamble and not any(s.body for s in sections)


def bundled_text(name: str) -> str:
    return (resources.files("memframe") / "data" / "session_memory" / name).read_text("utf-8")


def load_template(config_dir: Path) -> Template:
    """The user's ``<config dir>/session-memory/template.md``, else the bundled template."""
    text = read_override(config_dir, "session-memory/template.md")
    if text is None:
        return Template(bundled_text("template.md"), origin="bundled template")
    return Template(text, origin=str(config_dir / "session-memory" / "template.md"))


def oversized_sections(
    notes: str, count_tokens: Callable[[str], int], section_budget: int
) -> list[tuple[str, int]]:
    _, sections = parse_sections(notes)
    sizes = [(s.title, count_tokens(s.body)) for s in sections]
    return [(title, size) for title, size in sizes if size > section_budget]


def truncate_to_budget(
    notes: str, count_tokens: Callable[[str], int], section_budget: int, total_budget: int
) -> str:
    """Notes cut to the budget (for injection at compaction): each section body keeps its first
    lines up to ``section_budget`` tokens, then the whole keeps sections up to ``total_budget``."""
    preamble, sections = parse_sections(notes)
    kept: list[Section] = []
    total = count_tokens(preamble)
    for section in sections:
        body = _cut_lines(section.body, count_tokens, section_budget)
        size = count_tokens(section.header) + count_tokens(section.description) + count_tokens(body)
        if total + size > total_budget:
            body = "[truncated: over the session notes budget]"
        total += size
        kept.append(Section(section.header, section.description, body))
    text = render_sections(kept)
    return f"{preamble}\n\n{text}" if preamble else text


def _cut_lines(body: str, count_tokens: Callable[[str], int], budget: int) -> str:
    if count_tokens(body) <= budget:
        return body
    out: list[str] = []
    used = 0
    for line in body.split("\n"):
        cost = count_tokens(line) + 1
        if used + cost > budget:
            out.append("[… truncated to the section budget]")
            break
        out.append(line)
        used += cost
    return "\n".join(out)
