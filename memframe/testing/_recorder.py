"""``HookRecorder``: a layer implementing every hook that records each call, in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memframe.hookspecs import hookimpl


@dataclass
class HookCall:
    name: str
    kwargs: dict[str, Any] = field(default_factory=dict)


class HookRecorder:
    """A layer implementing every hook that records each call in order (returns nothing)."""

    name = "recorder"

    def __init__(self) -> None:
        self.calls: list[HookCall] = []

    def names(self) -> list[str]:
        return [call.name for call in self.calls]

    def of(self, name: str) -> list[HookCall]:
        return [call for call in self.calls if call.name == name]

    def _record(self, name: str, **kwargs: Any) -> None:
        self.calls.append(HookCall(name, kwargs))

    @hookimpl
    def on_frame_open(self, frame: Any) -> None:
        self._record("on_frame_open", frame=frame)

    @hookimpl
    def on_frame_close(self, frame: Any) -> None:
        self._record("on_frame_close", frame=frame)

    @hookimpl
    def on_session_start(self, session: Any) -> None:
        self._record("on_session_start", session=session)

    @hookimpl
    def on_message(self, session: Any, message: Any) -> None:
        self._record("on_message", session=session, message=message)

    @hookimpl
    def on_file_read(self, session: Any, path: str, content: str | None) -> None:
        self._record("on_file_read", session=session, path=path, content=content)

    @hookimpl
    def on_tool_use(self, session: Any, tool_use: Any, result: Any) -> None:
        self._record("on_tool_use", session=session, tool_use=tool_use, result=result)

    @hookimpl
    def on_stop(self, session: Any, message: Any) -> None:
        self._record("on_stop", session=session, message=message)

    @hookimpl
    def on_pre_compact(self, session: Any) -> None:
        self._record("on_pre_compact", session=session)

    @hookimpl
    def on_session_end(self, session: Any, reason: str) -> None:
        self._record("on_session_end", session=session, reason=reason)

    @hookimpl
    def collect_context(self, session: Any, prompt: str | None) -> None:
        self._record("collect_context", session=session, prompt=prompt)

    @hookimpl
    def register_model_backends(self, register: Any) -> None:
        self._record("register_model_backends", register=register)

    @hookimpl
    def provide_config(self, frame: Any) -> None:
        self._record("provide_config", frame=frame)

    @hookimpl
    def register_rules(self, register: Any) -> None:
        self._record("register_rules", register=register)

    @hookimpl
    def register_commands(self, register: Any) -> None:
        self._record("register_commands", register=register)

    @hookimpl
    def on_layer_error(self, layer: str, hook: str, error: Exception, session: Any) -> None:
        self._record("on_layer_error", layer=layer, hook=hook, error=error, session=session)
