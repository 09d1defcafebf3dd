"""Codex's apply_patch envelope: parsed once (memframe.agents.patches) for the team guard, the
extraction skip rule and the offline notes. The patch texts follow the format Codex documents
(``*** Begin Patch`` … ``*** End Patch``; Add/Delete/Update File, Move to, ``@@`` hunks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memframe.agents.patches import find_patch, parse_patch
from memframe.layers.extract_memories import wrote_into
from memframe.messages import Message, ToolUseBlock

PATCH = """*** Begin Patch
*** Add File: notes/new.md
+# New
+first line
*** Update File: src/app.py
@@ def main():
 import os
-print("old")
+print("new")
*** Update File: src/old_name.py
*** Move to: src/new_name.py
@@
-x = 1
+x = 2
*** Delete File: obsolete.txt
*** End Patch"""


def test_a_patch_is_read_file_by_file() -> None:
    changes = parse_patch(PATCH)
    assert [(c.op, c.path, c.target) for c in changes] == [
        ("add", "notes/new.md", "notes/new.md"),
        ("update", "src/app.py", "src/app.py"),
        ("update", "src/old_name.py", "src/new_name.py"),
        ("delete", "obsolete.txt", "obsolete.txt"),
    ]
    assert changes[0].new_text() == "# New\nfirst line\n"
    app = changes[1]
    assert app.apply('import os\nprint("old")\nrun()\n') == 'import os\nprint("new")\nrun()\n'
    assert app.apply("unrelated\n") is None  # a hunk that does not match: Codex refuses too
    assert changes[2].apply("x = 1\n") == "x = 2\n"


@pytest.mark.parametrize(
    ("name", "tool_input"),
    [
        ("apply_patch", {"input": PATCH}),
        ("apply_patch", {"patch": PATCH}),
        ("shell", {"command": ["apply_patch", PATCH]}),
        ("exec_command", {"cmd": f"apply_patch <<'EOF'\n{PATCH}\nEOF\n"}),
        ("Bash", {"command": f"cd /repo && apply_patch <<'EOF'\n{PATCH}\nEOF"}),
    ],
)
def test_the_patch_is_found_however_it_is_run(name: str, tool_input: dict[str, object]) -> None:
    patch = find_patch(name, tool_input)
    assert patch is not None and patch.startswith("*** Begin Patch")
    assert [c.op for c in parse_patch(patch)] == ["add", "update", "update", "delete"]


def test_commands_without_a_patch_are_not_patches() -> None:
    assert find_patch("Bash", {"command": "git status"}) is None
    assert find_patch("Write", {"file_path": "a.md", "content": "text"}) is None


def test_a_patch_into_the_memory_dir_counts_as_the_agent_remembering(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    into = f"*** Begin Patch\n*** Add File: {memory}/prefers-pytest.md\n+pytest\n*** End Patch"
    elsewhere = "*** Begin Patch\n*** Add File: src/x.py\n+x = 1\n*** End Patch"
    relative = "*** Begin Patch\n*** Add File: memory/y.md\n+y\n*** End Patch"

    def said(patch: str) -> list[Message]:
        return [Message("assistant", (ToolUseBlock("c1", "apply_patch", {"input": patch}),))]

    assert wrote_into(said(into), memory)
    assert not wrote_into(said(elsewhere), memory, cwd=tmp_path)
    assert wrote_into(said(relative), memory, cwd=tmp_path)
