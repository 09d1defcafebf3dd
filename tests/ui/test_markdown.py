"""The UI's Markdown renderer: the structure memframe's notes use, and never a tag from the
source."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memframe.ui.markdown import render_inline, render_markdown, safe_href


def test_headings_lists_code_emphasis_links() -> None:
    html = render_markdown(
        "# Title\n_instructions_\n\n- one **bold**\n  - nested `code`\n- two\n\n"
        "1. first\n2. second\n\n```python\nprint('<x>')\n```\n\n"
        "> quoted *em*\n\n---\n\nSee [the docs](https://example.com/a_b_c) now."
    )
    assert "<h1>Title</h1>" in html
    assert "<p><em>instructions</em></p>" in html
    assert (
        "<ul><li>one <strong>bold</strong> <ul><li>nested <code>code</code></li></ul></li>" in html
    )
    assert "<ol><li>first</li><li>second</li></ol>" in html
    assert '<pre><code class="language-python">print(&#39;&lt;x&gt;&#39;)</code></pre>' in html
    assert "<blockquote><p>quoted <em>em</em></p></blockquote>" in html
    assert "<hr>" in html
    assert '<a href="https://example.com/a_b_c" rel="noopener noreferrer">the docs</a>' in html


@pytest.mark.parametrize(
    "source",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "# <iframe src=//x>",
        "- <b onclick=x>item</b>",
        "`<code>` and **<i>strong</i>**",
        '[x](https://e.com/"onmouseover="alert(1))',
    ],
)
def test_html_in_the_source_is_text(source: str) -> None:
    html = render_markdown(source)
    assert "<script" not in html and "<img" not in html and "<iframe" not in html
    assert "<b " not in html and "<i>" not in html
    assert '"onmouseover' not in html


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JAVASCRIPT:alert(1)",
        "java\tscript:x",
        "data:text/html,x",
        "vbscript:x",
        "//evil.example/x",
    ],
)
def test_unsafe_link_targets_are_not_links(url: str) -> None:
    assert safe_href(url) is None
    assert "<a " not in render_inline(f"[click]({url})")


@pytest.mark.parametrize(
    "url", ["https://e.com", "http://e.com/x?y=1", "mailto:a@b.c", "/memories", "#top", "notes.md"]
)
def test_safe_link_targets(url: str) -> None:
    assert safe_href(url) == url


@given(st.text(alphabet=st.sampled_from(list("<>&\"'`*_[]()#-> \n=/ajvsript:")), max_size=80))
def test_no_tag_ever_comes_from_the_source(source: str) -> None:
    html = str(render_markdown(source))
    allowed = {
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "p",
        "ul",
        "ol",
        "li",
        "pre",
        "code",
        "blockquote",
        "hr",
        "strong",
        "em",
        "a",
    }
    for tag in re.findall(r"</?([a-zA-Z][a-zA-Z0-9]*)", html):
        assert tag in allowed, (source, html)
    assert "javascript:" not in re.sub(r"<[^>]*>", "", html) or "href" not in html


def test_a_huge_paragraph_is_rendered_quickly() -> None:
    import time

    source = "*a _b " * 50_000
    started = time.monotonic()
    html = render_markdown(source)
    assert time.monotonic() - started < 5
    assert "<em>" not in html
