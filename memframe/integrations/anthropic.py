"""The Anthropic SDK's client-side memory tool on memframe's memory directory.

Claude's memory tool (``memory_20250818``) asks the client to ``view``, ``create``,
``str_replace``, ``insert``, ``delete`` and ``rename`` files under ``/memories``. The SDK leaves
the storage to a subclass of its ``BetaAbstractMemoryTool``; :class:`MemoryTool` is that
subclass for a memframe project, and :class:`AsyncMemoryTool` the one for ``AsyncAnthropic``::

    import anthropic
    import memframe
    from memframe.integrations.anthropic import MemoryTool

    frame = memframe.open(".")
    runner = anthropic.Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-4-5",
        max_tokens=2048,
        tools=[MemoryTool(frame)],
        messages=[{"role": "user", "content": "Remember that I use pytest."}],
    )
    final = runner.until_done()

``/memories`` is the project's memory directory (``memframe.memdir.locate(frame).path``), the
one the memdir layer puts into every prompt, so what Claude saves here is recalled in the next
memframe session. The commands themselves are :class:`memframe.mcp.memory_tool.MemoryCommands`,
the same code the ``memframe mcp`` server runs: writes are atomic and private, keep
``MEMORY.md`` right, get a complete frontmatter, are scrubbed of personal data and secrets, and
a ``team/`` write holding a secret is refused. A refusal reaches the model as an error tool
result (the SDK's ``ToolError``) saying why; nothing is written then.

Needs the SDK (``anthropic>=0.84``: ``pip install 'memframe[anthropic]'``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

try:
    from anthropic.lib.tools import (
        BetaAbstractMemoryTool,
        BetaAsyncAbstractMemoryTool,
        BetaFunctionToolResultType,
        ToolError,
    )
    from anthropic.types.beta import (
        BetaCacheControlEphemeralParam,
        BetaMemoryTool20250818Command,
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
    from anyio.to_thread import run_sync
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "memframe.integrations.anthropic needs the Anthropic SDK with its memory tool "
        "(anthropic>=0.84): pip install 'memframe[anthropic]'"
    ) from exc

from memframe._fs import ensure_private_dir
from memframe.mcp.memory_tool import COMMANDS, MemoryCommandError, MemoryCommands
from memframe.memdir.files import MemoryFormatError

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame

__all__ = ["AsyncMemoryTool", "MemoryTool", "memory_commands"]

# The fields each command carries, as the tool's input names them.
_FIELDS: dict[str, tuple[str, ...]] = {
    "view": ("path", "view_range"),
    "create": ("path", "file_text"),
    "str_replace": ("path", "old_str", "new_str"),
    "insert": ("path", "insert_line", "insert_text"),
    "delete": ("path",),
    "rename": ("old_path", "new_path"),
}


def memory_commands(frame: MemoryFrame) -> MemoryCommands:
    """The memory-tool commands on ``frame``'s memory directory, guarded by the frame's secret
    scanner and keeping out the personal data its ``privacy.redact`` setting names."""
    from memframe.memdir import MemoryStore, locate

    store = MemoryStore(locate(frame).path)
    return MemoryCommands(store, frame.secret_scanner(), frame.personal_kinds)


def _commands_of(source: MemoryFrame | MemoryCommands) -> MemoryCommands:
    """The commands of ``source``, with the memory directory made (``0700``) if it is not there
    yet: Claude starts by viewing ``/memories``, which must then list nothing, not fail."""
    commands = source if isinstance(source, MemoryCommands) else memory_commands(source)
    ensure_private_dir(commands.store.root)
    return commands


def _arguments(command: object) -> dict[str, Any]:
    """A command object (as the SDK builds it from the model's input, unvalidated) back to the
    input mapping :meth:`MemoryCommands.execute` checks: a missing field is ``None`` there."""
    name = getattr(command, "command", None)
    if not isinstance(name, str):
        raise ToolError("the memory tool's input needs a `command`")
    arguments: dict[str, Any] = {"command": name}
    for field in _FIELDS.get(name, ()):
        arguments[field] = getattr(command, field, None)
    return arguments


def _run(commands: MemoryCommands, arguments: Mapping[str, Any]) -> str:
    """Run one command; a refusal or failure becomes the SDK's ``ToolError`` (an error tool
    result carrying the reason) instead of an exception the runner would log."""
    try:
        return commands.execute(arguments)
    except (MemoryCommandError, MemoryFormatError) as exc:
        raise ToolError(str(exc)) from exc
    except OSError as exc:
        what = arguments.get("path") or arguments.get("old_path") or "/memories"
        raise ToolError(
            f"{what}: the memory directory could not be used ({exc.strerror or exc})"
        ) from exc


class MemoryTool(BetaAbstractMemoryTool):
    """The SDK's memory tool backed by a memframe project's memory directory.

    ``MemoryTool(frame)`` works on ``frame``'s memory directory; ``MemoryTool(commands)`` on the
    :class:`~memframe.mcp.memory_tool.MemoryCommands` given. ``cache_control`` goes into the
    tool's definition as the SDK's own tools take it. Pass it in ``tools=[...]`` of
    ``client.beta.messages.tool_runner(...)`` (or call :meth:`call` with a ``tool_use`` block's
    input yourself). Each command returns the text for the model; a refusal raises the SDK's
    ``ToolError``, which the runner sends back as a tool result with ``is_error: true``.
    """

    def __init__(
        self,
        frame: MemoryFrame | MemoryCommands,
        *,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.commands = _commands_of(frame)

    def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        arguments = _arguments(command)
        if arguments["command"] not in COMMANDS:
            return _run(self.commands, arguments)  # refused, naming the commands there are
        return super().execute(command)

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return _run(self.commands, _arguments(command))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return _run(self.commands, _arguments(command))

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return _run(self.commands, _arguments(command))

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return _run(self.commands, _arguments(command))

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return _run(self.commands, _arguments(command))

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return _run(self.commands, _arguments(command))


class AsyncMemoryTool(BetaAsyncAbstractMemoryTool):
    """:class:`MemoryTool` for ``AsyncAnthropic``'s tool runner: the same commands, each run in
    a worker thread so the event loop never waits on the disk or the memory directory's lock."""

    def __init__(
        self,
        frame: MemoryFrame | MemoryCommands,
        *,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.commands = _commands_of(frame)

    async def _run(self, command: object) -> str:
        return await run_sync(_run, self.commands, _arguments(command))

    async def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        arguments = _arguments(command)
        if arguments["command"] not in COMMANDS:
            return _run(self.commands, arguments)  # refused, naming the commands there are
        return await super().execute(command)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await self._run(command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await self._run(command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await self._run(command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await self._run(command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await self._run(command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await self._run(command)
