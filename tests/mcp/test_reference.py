"""docs/mcp.md carries the tool reference rendered from the server's own tool schemas."""

from __future__ import annotations

from pathlib import Path

from memframe.mcp.reference import BEGIN, END, render_reference, replace_reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"


def test_docs_hold_the_current_tool_reference() -> None:
    reference = render_reference()
    for name in ("memory", "recall", "session_notes", "team_sync"):
        assert f"### `{name}`" in reference
    assert "| `view_range` |" in reference and "read-only: yes" in reference
    assert reference in DOC.read_text(encoding="utf-8"), (
        "docs/mcp.md's tool reference is out of date: run "
        "`python -m memframe.mcp.reference --write docs/mcp.md`"
    )


def test_replace_reference_swaps_the_block() -> None:
    text = f"intro\n{BEGIN}\nold\n{END}\noutro\n"
    assert (
        replace_reference(text, f"{BEGIN}\nnew\n{END}\n") == f"intro\n{BEGIN}\nnew\n{END}\noutro\n"
    )
