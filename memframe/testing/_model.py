"""``ScriptedBackend``: a model backend that answers from a script and records what it was asked."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeAlias

from memframe.models.base import ModelRequest, ModelResponse

Reply: TypeAlias = (
    str
    | ModelResponse
    | BaseException
    | type[BaseException]
    | Callable[[ModelRequest], "ModelResponse | str"]
)
"""One scripted answer: text, a response (tool calls…), an exception to raise, or a function of
the request returning either of the first two."""


class ScriptedBackend:
    """A model backend for tests: each call takes the next scripted reply and records its request.

    It stands in for a real model (it has no ``supports`` method, so layers offer it every
    purpose). Select it with ``open_test_frame(..., model=backend)``, or request the
    ``memframe_model`` fixture. Thread-safe: background work may call it from worker threads.

    :param replies: the answers, in call order. A string becomes ``ModelResponse(text=...)``, a
        :class:`~memframe.models.ModelResponse` is returned as it is, an exception (instance or
        class) is raised, and a callable is called with the :class:`~memframe.models.ModelRequest`
        and its result treated like a string or a response.
    :param name: the backend name (what the ``model`` option selects).
    :param default: the reply once the script is used up.

    :ivar requests: every request received, in order.
    :ivar replies: the replies not used yet (append with :meth:`script`).
    :ivar max_concurrent: the most calls that were ever in progress at once.
    """

    def __init__(self, *replies: Reply, name: str = "scripted", default: Reply = "done") -> None:
        self.name = name
        self.replies: list[Reply] = list(replies)
        self.default: Reply = default
        self.requests: list[ModelRequest] = []
        self.max_concurrent = 0
        self._active = 0
        self._changed = threading.Condition()

    def script(self, *replies: Reply) -> None:
        """Add replies after those still waiting."""
        with self._changed:
            self.replies.extend(replies)

    @property
    def calls(self) -> int:
        """How many requests it received."""
        with self._changed:
            return len(self.requests)

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Block until at least ``count`` requests arrived (or are being answered); ``False``
        when ``timeout`` seconds ran out first. For tests whose background work runs on
        threads; in synchronous mode the requests are there as soon as the hook returned."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self.requests) >= count, timeout)

    def complete(self, request: ModelRequest) -> ModelResponse:
        with self._changed:
            self.requests.append(request)
            reply = self.replies.pop(0) if self.replies else self.default
            self._active += 1
            self.max_concurrent = max(self.max_concurrent, self._active)
            self._changed.notify_all()
        try:
            return _answer(reply, request)
        finally:
            with self._changed:
                self._active -= 1

    def __repr__(self) -> str:
        return (
            f"<ScriptedBackend {self.name!r}: {len(self.requests)} request(s), "
            f"{len(self.replies)} scripted repl{'y' if len(self.replies) == 1 else 'ies'} left>"
        )


def _answer(reply: Reply, request: ModelRequest) -> ModelResponse:
    if isinstance(reply, BaseException):
        raise reply
    if isinstance(reply, type):
        raise reply()
    answer: object = reply if isinstance(reply, str | ModelResponse) else reply(request)
    if isinstance(answer, str):
        return ModelResponse(text=answer)
    if isinstance(answer, ModelResponse):
        return answer
    raise TypeError(
        f"a scripted reply must give a str or a ModelResponse, got {type(answer).__name__}: "
        f"{answer!r:.80}"
    )
