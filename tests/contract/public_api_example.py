"""A layer author's program that uses only memframe's public names (checked by mypy in
tests/contract/test_public_api.py, and run there)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import memframe
from memframe.checksums import sha256, sha256_many, xxh3_64
from memframe.files import atomic_write_text, ensure_private_dir, exclusive_lock
from memframe.layer_settings import at_least, settings_from
from memframe.models import ModelRequest, ModelResponse
from memframe.testing import (
    FrameFactory,
    HookCall,
    HookRecorder,
    Reply,
    ScriptedBackend,
    open_test_frame,
    synchronous_background,
)
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
    tested()
    return "ok"


def tested() -> None:
    """memframe.testing: a scripted model, inline background work, the hook recorder."""

    def answer(request: ModelRequest) -> str:
        return f"{len(request.messages)} message(s)"

    replies: list[Reply] = ["first", ModelResponse(text="second"), answer, ValueError("down")]
    model = ScriptedBackend(*replies, name="scripted")
    recorder = HookRecorder()
    with tempfile.TemporaryDirectory() as tmp:
        with open_test_frame(
            Path(tmp), layers=[recorder], model=model, synchronous_background=True
        ) as frame:
            backend = frame.model_backend()
            request = ModelRequest(system="", messages=[{"role": "user", "content": "hi"}])
            texts = [backend.complete(request).text for _ in range(3)]
            assert texts == ["first", "second", "1 message(s)"]
            future = frame.submit_background(lambda: 42, name="answer")
            assert future.done() and future.result() == 42
        with synchronous_background(), open_test_frame(Path(tmp)) as again:
            assert again.submit_background(lambda: 1, name="one").done()
    first: HookCall = recorder.calls[0]
    assert isinstance(first.name, str) and model.calls == 3 and model.max_concurrent == 1
    assert model.wait_for_requests(3, timeout=0.0)

    def opener(**options: Any) -> memframe.MemoryFrame:
        return open_test_frame(Path(tempfile.mkdtemp()), **options)

    factory: FrameFactory = opener
    assert callable(factory)


if __name__ == "__main__":
    print(main())
