"""The docs are part of the contract.

- docs/hooks.md has one section per hook whose heading is the hook's exact signature, describes
  every argument and shows an example; no heading names a hook that does not exist.
- Every hook is exercised: ``memframe.testing.HookRecorder`` implements it and the lifecycle
  contract test (tests/contract/test_lifecycle.py) names it.
- Every ```python block in the user docs runs, self-contained, in a fresh interpreter whose home,
  config and memory directories point into a temporary directory.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memframe import hookspecs
from memframe.testing import HookRecorder

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HOOKS_DOC = DOCS / "hooks.md"
LIFECYCLE_TEST = ROOT / "tests" / "contract" / "test_lifecycle.py"
# Docs whose ```python blocks must run as they are.
RUNNABLE_DOCS = (
    "quickstart.md",
    "hooks.md",
    "writing-a-layer.md",
    "configuration.md",
    "session-memory.md",
    "models.md",
    "memdir.md",
    "server.md",
    "magic-docs.md",
    "team-sync.md",
    "integrations.md",
    "testing.md",
    "scanning.md",
    "tokens.md",
)
# Fence languages allowed in those docs; ``python`` is the only one that is executed.
FENCE_LANGUAGES = {"python", "text", "console", "toml", "json", "yaml", "sh"}
BLOCK_TIMEOUT = 120

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_SIGNATURE_HEADING = re.compile(r"^`(?P<name>[A-Za-z_]\w*)\((?P<rest>.*)`$")
_FENCE = re.compile(r"^```(?P<lang>\S*)\s*$")


# -- hookspecs -------------------------------------------------------------------------------------


def _hookspecs() -> dict[str, Callable[..., Any]]:
    marker = f"{hookspecs.PROJECT}_spec"
    return {
        name: fn
        for name, fn in vars(hookspecs).items()
        if inspect.isfunction(fn) and hasattr(fn, marker)
    }


def _annotation(value: Any) -> str:
    # ``from __future__ import annotations`` in hookspecs.py: annotations are the source strings.
    return value if isinstance(value, str) else inspect.formatannotation(value)


def render_signature(name: str, fn: Callable[..., Any]) -> str:
    """``name(p: ann, ...) -> ret`` exactly as written in hookspecs.py."""
    signature = inspect.signature(fn)
    params = []
    for param in signature.parameters.values():
        text = param.name
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            text = f"*{text}"
        elif param.kind is inspect.Parameter.VAR_KEYWORD:
            text = f"**{text}"
        if param.annotation is not inspect.Parameter.empty:
            text += f": {_annotation(param.annotation)}"
        if param.default is not inspect.Parameter.empty:
            text += f" = {param.default!r}"
        params.append(text)
    rendered = f"{name}({', '.join(params)})"
    if signature.return_annotation is not inspect.Signature.empty:
        rendered += f" -> {_annotation(signature.return_annotation)}"
    return rendered


HOOKS = _hookspecs()
HOOK_NAMES = sorted(HOOKS)


def test_hookspecs_found() -> None:
    assert len(HOOKS) >= 10, f"expected the memframe hookspecs, found {HOOK_NAMES}"


# -- docs/hooks.md ---------------------------------------------------------------------------------


def _sections(path: Path) -> list[tuple[str, str]]:
    """(heading text, body up to the next heading of the same or a higher level), fences aware."""
    lines = path.read_text(encoding="utf-8").splitlines()
    headings: list[tuple[int, int, str]] = []  # (line index, level, text)
    in_fence = False
    for index, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING.match(line)
        if match:
            headings.append((index, len(match.group(1)), match.group(2)))
    sections = []
    for position, (index, level, text) in enumerate(headings):
        end = len(lines)
        for later_index, later_level, _ in headings[position + 1 :]:
            if later_level <= level:
                end = later_index
                break
        sections.append((text, "\n".join(lines[index + 1 : end])))
    return sections


def _hook_sections() -> dict[str, list[tuple[str, str]]]:
    """Headings that look like a signature (`` `name(...)` ``), by hook name."""
    found: dict[str, list[tuple[str, str]]] = {}
    for heading, body in _sections(HOOKS_DOC):
        match = _SIGNATURE_HEADING.match(heading)
        if match:
            found.setdefault(match.group("name"), []).append((heading, body))
    return found


@pytest.fixture(scope="module")
def hook_sections() -> dict[str, list[tuple[str, str]]]:
    assert HOOKS_DOC.is_file(), f"{HOOKS_DOC} is missing"
    return _hook_sections()


@pytest.mark.parametrize("hook", HOOK_NAMES)
def test_hook_is_documented_with_its_exact_signature(
    hook: str, hook_sections: dict[str, list[tuple[str, str]]]
) -> None:
    expected = f"`{render_signature(hook, HOOKS[hook])}`"
    headings = [heading for heading, _ in hook_sections.get(hook, [])]
    assert headings, f"docs/hooks.md has no section for {hook}; add a heading {expected}"
    assert headings == [expected], (
        f"docs/hooks.md heading for {hook} must be exactly {expected} "
        f"(one section), found {headings}"
    )


@pytest.mark.parametrize("hook", HOOK_NAMES)
def test_hook_section_describes_every_argument_and_has_an_example(
    hook: str, hook_sections: dict[str, list[tuple[str, str]]]
) -> None:
    sections = hook_sections.get(hook)
    assert sections, f"docs/hooks.md has no section for {hook}"
    _, body = sections[0]
    for param in inspect.signature(HOOKS[hook]).parameters:
        assert f"`{param}`" in body, f"the {hook} section does not describe argument `{param}`"
    assert "```python" in body, f"the {hook} section has no runnable ```python example"
    assert "@memframe.hookimpl" in body, f"the {hook} example does not implement the hook"


def test_no_heading_names_a_missing_hook(
    hook_sections: dict[str, list[tuple[str, str]]],
) -> None:
    unknown = sorted(set(hook_sections) - set(HOOKS))
    assert not unknown, f"docs/hooks.md documents hooks that do not exist: {unknown}"


# -- every hook is exercised -----------------------------------------------------------------------


@pytest.mark.parametrize("hook", HOOK_NAMES)
def test_hook_recorder_implements_hook(hook: str) -> None:
    impl = getattr(HookRecorder, hook, None)
    assert impl is not None, f"memframe.testing.HookRecorder does not implement {hook}"
    assert hasattr(impl, f"{hookspecs.PROJECT}_impl"), (
        f"HookRecorder.{hook} is not marked with @hookimpl"
    )


@pytest.mark.parametrize("hook", HOOK_NAMES)
def test_lifecycle_contract_test_exercises_hook(hook: str) -> None:
    assert LIFECYCLE_TEST.is_file(), f"{LIFECYCLE_TEST.relative_to(ROOT)} is missing"
    source = LIFECYCLE_TEST.read_text(encoding="utf-8")
    assert re.search(rf"\b{re.escape(hook)}\b", source), (
        f"{LIFECYCLE_TEST.relative_to(ROOT)} never mentions {hook}: the hook is untested"
    )


# -- runnable examples -----------------------------------------------------------------------------


def _code_blocks(path: Path) -> list[tuple[int, str, str]]:
    """(line number of the opening fence, language, dedented code) of every fenced block."""
    blocks = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index].strip())
        if match:
            start = index
            body = []
            index += 1
            while index < len(lines) and lines[index].strip() != "```":
                body.append(lines[index])
                index += 1
            code = textwrap.dedent("\n".join(body)) + "\n"
            blocks.append((start + 1, match.group("lang"), code))
        index += 1
    return blocks


def _runnable_blocks() -> list[Any]:
    params = []
    for doc in RUNNABLE_DOCS:
        path = DOCS / doc
        if not path.is_file():
            params.append(pytest.param(path, 0, "", id=f"{doc}-missing"))
            continue
        for line, lang, code in _code_blocks(path):
            if lang == "python":
                params.append(pytest.param(path, line, code, id=f"{doc}:{line}"))
    return params


@pytest.mark.parametrize("doc", RUNNABLE_DOCS)
def test_code_blocks_name_their_language(doc: str) -> None:
    path = DOCS / doc
    assert path.is_file(), f"docs/{doc} is missing"
    for line, lang, _ in _code_blocks(path):
        assert lang in FENCE_LANGUAGES, (
            f"docs/{doc}:{line}: fence language {lang!r} is not one of {sorted(FENCE_LANGUAGES)} "
            "(```python blocks run in the docs test; use ```text or ```console otherwise)"
        )


def _example_env(tmp_path: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("MEMFRAME_") or key == "MEMFRAME_BACKEND"
    }
    home = tmp_path / "home"
    home.mkdir()
    scratch = tmp_path / "tmp"  # what an example makes with tempfile goes with the test's tmp_path
    scratch.mkdir()
    env.update(
        TMPDIR=str(scratch),
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        MEMFRAME_HOME=str(home / ".memframe"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


@pytest.mark.parametrize("doc", ["quickstart.md", "hooks.md"])
def test_doc_has_runnable_examples(doc: str) -> None:
    path = DOCS / doc
    assert path.is_file(), f"docs/{doc} is missing"
    assert any(lang == "python" for _, lang, _ in _code_blocks(path)), (
        f"docs/{doc} has no ```python example"
    )


@pytest.mark.parametrize(("path", "line", "code"), _runnable_blocks())
def test_python_block_runs(path: Path, line: int, code: str, tmp_path: Path) -> None:
    assert path.is_file(), f"{path.relative_to(ROOT)} is missing"
    where = f"{path.relative_to(ROOT)}:{line}"
    if re.search(r"^def test_", code, re.MULTILINE):
        # A test module for layer authors: run it the way they would, with pytest.
        script = tmp_path / "test_docs_example.py"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", script.name]
    else:
        script = tmp_path / "docs_example.py"
        command = [sys.executable, script.name]
    script.write_text(code, encoding="utf-8")
    result = subprocess.run(
        command,
        cwd=tmp_path,
        env=_example_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT,
        check=False,
    )
    hint = ""
    if re.search(r"fixture 'memframe_\w+' not found", result.stdout):
        hint = (
            "memframe's pytest plugin did not load: is this memframe installed with its pytest11 "
            "entry point (./dev setup reinstalls when pyproject.toml changed)?\n"
        )
    assert result.returncode == 0, (
        f"{hint}the example at {where} failed (exit {result.returncode})\n"
        f"--- code ---\n{code}--- stdout ---\n{result.stdout}--- stderr ---\n{result.stderr}"
    )


def test_every_command_is_documented_in_the_cli_reference():
    from memframe.cli import COMMANDS

    lines = (DOCS / "cli.md").read_text().splitlines()
    headings = [line for line in lines if line.startswith("## ")]
    internal = {"hook-worker"}
    missing = [
        name
        for name in COMMANDS
        if name not in internal and not any(f"`memframe {name}" in h for h in headings)
    ]
    assert missing == []
