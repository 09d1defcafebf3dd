"""A layer author's program that uses only memframe's public names (checked by mypy in
tests/contract/test_public_api.py, and run there)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import memframe
from memframe.checksums import sha256, sha256_many, xxh3_64
from memframe.files import atomic_write_text, ensure_private_dir, exclusive_lock
from memframe.layer_settings import at_least, settings_from
from memframe.tokens import count_tokens, count_tokens_many


def blocks() -> list[memframe.ContentBlock]:
    return [
        memframe.TextBlock("hi"),
        memframe.ToolUseBlock("t1", "Read", {"file_path": "a.py"}),
        memframe.ToolResultBlock("t1", "print()"),
    ]


def main() -> str:
    token = "ghp_" + "N7x2QpL9vR4sT1uW8yZ3aB6cD0eF5gH2jK4m"
    findings: list[memframe.Finding] = memframe.find(f"token {token}")
    matches: list[memframe.SecretMatch] = memframe.scan(f"token {token}")
    clean: str = memframe.redact(f"token {token}")
    many = memframe.scan_many([f"a {token}", "b"])
    assert [f.rule_id for f in findings] == [m.rule_id for m in matches] == ["github-pat"]
    assert clean == "token [REDACTED]" and len(many) == 2 and many[1] == []
    assert sha256("a") == sha256_many(["a"])[0] and isinstance(xxh3_64("a"), int)
    assert count_tokens("hello world") == count_tokens_many(["hello world"])[0]
    with tempfile.TemporaryDirectory() as tmp:
        base = ensure_private_dir(Path(tmp) / "layer")
        with exclusive_lock(base / ".lock") as held:
            assert held
            atomic_write_text(base / "state.txt", "ok")
        (result,) = memframe.find_files([base / "state.txt"])
        assert result.findings == []
        with memframe.open(Path(tmp), home=Path(tmp) / "home", autoload_plugins=False) as frame:
            assert isinstance(frame, memframe.MemoryFrame)
            session: memframe.Session = frame.session("s1")
            session.on_message(memframe.Message("user", tuple(blocks())))
    assert settings_from is not None and at_least(1) == {"min": 1}
    return "ok"


if __name__ == "__main__":
    print(main())
