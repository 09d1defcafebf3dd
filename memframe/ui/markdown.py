"""A small, safe Markdown-to-HTML renderer for the notes, memories and docs the UI shows.

It knows what memframe's own files use — ATX headings, paragraphs, bullet and numbered lists
(nested by indentation), fenced and indented code, block quotes, horizontal rules, and inline
code, ``**strong**``, ``*emphasis*`` / ``_emphasis_`` and ``[links](url)`` — and nothing else.
Every character of the source is HTML-escaped: raw HTML in a note shows as text, never as markup.
A link is kept only when its target is ``http``, ``https``, ``mailto`` or relative; any other
scheme (``javascript:``, ``data:`` …) leaves the text without a link.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from markupsafe import Markup, escape

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})\s*([^`\s]*)")
_RULE = re.compile(r"^[ ]{0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_BULLET = re.compile(r"^([ \t]*)([-*+])[ \t]+(.*)$")
_NUMBER = re.compile(r"^([ \t]*)(\d{1,9})[.)][ \t]+(.*)$")
_QUOTE = re.compile(r"^[ ]{0,3}>[ ]?(.*)$")
_INDENTED = re.compile(r"^(?: {4}|\t)(.*)$")

_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^()\s]+)\)")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_EM = re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?!\*)|(?<!\w)_(?=\S)(.+?)(?<=\S)_(?!\w)")
_SAFE_SCHEMES = ("http", "https", "mailto")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_CONTROL = re.compile(r"[\x00-\x20\x7f]+")
# a longer paragraph is shown escaped without inline markup (bounds the emphasis regexes' work)
MAX_INLINE = 20_000


def safe_href(url: str) -> str | None:
    """``url`` when it may be a link target (``http``, ``https``, ``mailto`` or relative),
    else ``None``. Control characters and spaces are ignored when the scheme is judged, as a
    browser ignores them."""
    cleaned = _CONTROL.sub("", html.unescape(url))
    match = _SCHEME.match(cleaned)
    if match is None:
        return url if not cleaned.startswith("//") else None  # no scheme-relative hosts
    return url if match.group(1).lower() in _SAFE_SCHEMES else None


def _strong_em(text: str) -> str:
    text = _STRONG.sub(lambda m: f"<strong>{m.group(1) or m.group(2)}</strong>", text)
    return _EM.sub(lambda m: f"<em>{m.group(1) or m.group(2)}</em>", text)


def _emphasis(text: str) -> str:
    """Links, strong and emphasis on already-escaped text (never inside a link target)."""
    out: list[str] = []
    position = 0
    for match in _LINK.finditer(text):
        out.append(_strong_em(text[position : match.start()]))
        label, target = _strong_em(match.group(1)), match.group(2)
        href = safe_href(target)
        if href is None:
            out.append(f"{label} ({target})")
        else:
            out.append(f'<a href="{href}" rel="noopener noreferrer">{label}</a>')
        position = match.end()
    out.append(_strong_em(text[position:]))
    return "".join(out)


def render_inline(text: str) -> str:
    """One line (or a paragraph) of Markdown as escaped HTML with inline markup."""
    if len(text) > MAX_INLINE:
        return str(escape(text))
    out: list[str] = []
    position = 0
    for match in _CODE_SPAN.finditer(text):
        out.append(_emphasis(str(escape(text[position : match.start()]))))
        out.append(f"<code>{escape(match.group(2).strip())}</code>")
        position = match.end()
    out.append(_emphasis(str(escape(text[position:]))))
    return "".join(out)


@dataclass
class _Item:
    lines: list[str] = field(default_factory=list)


@dataclass
class _List:
    ordered: bool
    indent: int
    start: int = 1
    items: list[_Item] = field(default_factory=list)


def _width(indent: str) -> int:
    return len(indent.replace("\t", "    "))


def _render_list(lines: list[str]) -> str:
    """A run of list lines (items and their continuation lines) as nested lists."""
    root: list[str] = []
    stack: list[_List] = []  # the open lists, outermost first

    def pop() -> None:
        rendered = _list_html(stack.pop())
        if stack:
            stack[-1].items[-1].lines.append(rendered)
        else:
            root.append(rendered)

    for line in lines:
        bullet = _BULLET.match(line)
        number = None if bullet else _NUMBER.match(line)
        marker = bullet or number
        if marker is None:
            if stack and stack[-1].items:
                stack[-1].items[-1].lines.append(render_inline(line.strip()))
            continue
        indent = _width(marker.group(1))
        ordered = number is not None
        while stack and stack[-1].indent > indent:
            pop()
        if stack and stack[-1].indent == indent and stack[-1].ordered != ordered:
            pop()  # the kind of list changed at this depth
        if not stack or stack[-1].indent < indent:
            start = int(number.group(2)) if number is not None else 1
            stack.append(_List(ordered, indent, start))
        stack[-1].items.append(_Item([render_inline(marker.group(3))]))
    while stack:
        pop()
    return "\n".join(root)


def _list_html(lst: _List) -> str:
    items = "".join(f"<li>{' '.join(item.lines)}</li>" for item in lst.items)
    if lst.ordered:
        start = f' start="{lst.start}"' if lst.start != 1 else ""
        return f"<ol{start}>{items}</ol>"
    return f"<ul>{items}</ul>"


def render_markdown(text: str) -> Markup:
    """``text`` as HTML: block structure and inline markup, every source character escaped."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    paragraph: list[str] = []
    i = 0

    def flush() -> None:
        if paragraph:
            out.append(f"<p>{render_inline(' '.join(s.strip() for s in paragraph))}</p>")
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush()
            marker = fence.group(1)
            language = fence.group(2)
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(marker):
                body.append(lines[i])
                i += 1
            i += 1  # the closing fence (or the end)
            label = f' class="language-{escape(language)}"' if language else ""
            out.append(f"<pre><code{label}>{escape(chr(10).join(body))}</code></pre>")
            continue
        if not line.strip():
            flush()
            i += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            out.append(f"<h{level}>{render_inline(heading.group(2))}</h{level}>")
            i += 1
            continue
        if _RULE.match(line):
            flush()
            out.append("<hr>")
            i += 1
            continue
        if _QUOTE.match(line):
            flush()
            quoted: list[str] = []
            while i < len(lines):
                quote = _QUOTE.match(lines[i])
                if quote is None:
                    break
                quoted.append(quote.group(1))
                i += 1
            out.append(f"<blockquote>{render_markdown(chr(10).join(quoted))}</blockquote>")
            continue
        if _BULLET.match(line) or _NUMBER.match(line):
            flush()
            block: list[str] = []
            while i < len(lines):
                current = lines[i]
                if not current.strip():
                    # a blank line inside a list continues it only when the list goes on
                    following = lines[i + 1] if i + 1 < len(lines) else ""
                    if _BULLET.match(following) or _NUMBER.match(following):
                        i += 1
                        continue
                    break
                if _BULLET.match(current) or _NUMBER.match(current):
                    block.append(current)
                elif current.startswith((" ", "\t")) and block:
                    block.append(current)  # a continuation line of the item
                else:
                    break
                i += 1
            out.append(_render_list(block))
            continue
        if not paragraph and _INDENTED.match(line):
            code: list[str] = []
            while i < len(lines):
                indented = _INDENTED.match(lines[i])
                if indented is None and lines[i].strip():
                    break
                code.append(indented.group(1) if indented else "")
                i += 1
            while code and not code[-1].strip():
                code.pop()
            out.append(f"<pre><code>{escape(chr(10).join(code))}</code></pre>")
            continue
        paragraph.append(line)
        i += 1
    flush()
    return Markup("\n".join(out))
