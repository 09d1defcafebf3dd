"""The memory directory and the memory prompt, for the hook's fast path.

``memframe.memdir``'s package ``__init__`` imports the store and the memory files, and through
them the native backend: tens of milliseconds the hook must not pay on every prompt. The two
modules needed here (``location``: where the directory is; ``index``: ``MEMORY.md`` cut to its
limits) depend only on light modules, so they are loaded on their own, without the package
``__init__``; when the package is already imported (the worker, tests) its modules are used.
The text built here is the one the memdir layer's ``collect_context`` injects (a test holds them
equal).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memframe.config import Config
    from memframe.memdir.location import MemoryLocation

MODE_ENV = "MEMFRAME_MEMORY_MODE"  # as memframe.memdir.MODE_ENV
TEAM_DIR = "team"  # as memframe.memdir.files.TEAM_DIR
CONTEXT_TITLE = "Memory"  # the memdir layer's block title
EMPTY_INDEX = "(empty: nothing saved yet)"


def _memdir_module(name: str) -> ModuleType:
    """``memframe.memdir.<name>``, loaded without running the package ``__init__``."""
    full = f"memframe.memdir.{name}"
    if full in sys.modules:
        return sys.modules[full]
    alias = f"memframe.hook._memdir_{name}"
    if alias in sys.modules:
        return sys.modules[alias]
    import memframe

    path = Path(memframe.__file__).parent / "memdir" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(alias, path)
    if spec is None or spec.loader is None or not path.is_file():
        return importlib.import_module(full)  # not a plain file layout: pay for the package
    module = importlib.util.module_from_spec(spec)
    sys.modules[alias] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[alias]
        raise
    return module


def memory_location(project_dir: Path, config: Config) -> MemoryLocation:
    """Where the memory directory of ``project_dir`` is (as ``memframe.memdir.locate``)."""
    from memframe.config import SETTINGS_FILE, ConfigError

    mode = os.environ.get(MODE_ENV, "").strip() or config.settings.get("memory_mode", "memframe")
    if not isinstance(mode, str):
        raise ConfigError(f"settings 'memory_mode' must be a string, got {mode!r}")
    location: MemoryLocation = _memdir_module("location").resolve_memory_dir(
        project_dir.resolve(),
        mode=mode,
        home=config.home,
        user_settings=config.settings,
        user_settings_path=config.config_dir / SETTINGS_FILE,
    )
    return location


@dataclass(frozen=True)
class MemoryContext:
    """The memory prompt: its text, the index limits that fired, and the index's identity."""

    text: str
    warnings: list[str]
    index_size: int
    index_mtime_ns: int

    @property
    def fingerprint(self) -> str:
        return f"{self.index_size}:{self.index_mtime_ns}"


def instructions(memory_dir: str) -> str:
    """The memdir layer's instructions (read from the package directory: importing
    ``importlib.resources`` costs the hook more than the read)."""
    import memframe

    template = Path(memframe.__file__).parent / "data" / "memdir" / "instructions.md"
    if template.is_file():
        text = template.read_text("utf-8")
    else:  # not a plain file layout (a zip): the resources API reads it
        from importlib import resources

        resource = resources.files("memframe") / "data" / "memdir" / "instructions.md"
        text = resource.read_text("utf-8")
    return text.replace("{{memory_dir}}", memory_dir)


def index_fingerprint(memory_dir: Path) -> str:
    """Size and mtime of ``MEMORY.md`` (``0:0`` when missing): changes when the index does."""
    try:
        stat = (memory_dir / "MEMORY.md").stat()
    except OSError:
        return "0:0"
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def memory_context(location: MemoryLocation) -> MemoryContext:
    """The memdir layer's ``Memory`` block, rendered: instructions, then ``MEMORY.md`` cut to
    its limits with a warning line for each limit that fired."""
    index = _memdir_module("index")
    index_path = location.path.resolve() / index.INDEX_FILE
    try:
        stat = index_path.stat()
        raw = index_path.read_bytes()
        size, mtime_ns = stat.st_size, stat.st_mtime_ns
    except (FileNotFoundError, NotADirectoryError):
        raw, size, mtime_ns = b"", 0, 0
    loaded, warnings = index.load_for_prompt(raw.decode("utf-8", "replace"))
    text = instructions(str(location.path))
    text += "\n\n## MEMORY.md\n\n" + (loaded.strip() or EMPTY_INDEX)
    rendered = f"# {CONTEXT_TITLE}\n\n{text.rstrip()}\n"
    return MemoryContext(rendered, list(warnings), size, mtime_ns)
