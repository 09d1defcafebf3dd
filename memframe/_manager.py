"""The plugin manager: built-in layers, entry-point layers, error isolation and tracing.

pluggy stops calling implementations at the first one that raises. memframe wraps every
implementation at registration so each layer runs, failures are collected per hook call,
reported through ``on_layer_error`` and the ``memframe`` logger, and in strict mode re-raised
together as one ``ExceptionGroup``. ``KeyboardInterrupt`` and ``SystemExit`` always propagate.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pluggy

from memframe import hookspecs
from memframe.context.blocks import ContextBlock

if TYPE_CHECKING:
    from memframe.session import Session

log = logging.getLogger("memframe")

ENTRY_POINT_GROUP = "memframe"
ERROR_HOOK = "on_layer_error"


class LayerLoadError(RuntimeError):
    """A layer could not be imported, instantiated or validated."""


@dataclass(frozen=True)
class LayerInfo:
    """One loaded layer, as ``memframe plugins`` shows it."""

    name: str
    origin: str  # "builtin", "entry point" or "explicit"
    target: str  # dotted path or entry-point value
    distribution: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class LayerFailure:
    layer: str
    hook: str
    error: Exception


class RegistrationError(LayerLoadError):
    """A registration hook (``register_rules``, ``register_model_backends``,
    ``register_commands``) went wrong in one or more layers: an invalid registration, or the
    layer's hook raised. ``problems`` names each layer and what was wrong; memframe does not run
    with part of what was configured."""

    def __init__(self, hook: str, problems: list[str]) -> None:
        self.hook = hook
        self.problems = problems
        super().__init__(f"{hook}: " + "; ".join(problems))


class _CallFrame(threading.local):
    def __init__(self) -> None:
        self.collectors: list[list[LayerFailure]] = []
        self.layers: list[str] = []  # the layers whose hook implementation is running


def _check_context_result(result: Any) -> None:
    blocks = [result] if isinstance(result, ContextBlock) else result
    if not isinstance(blocks, list | tuple) or not all(isinstance(b, ContextBlock) for b in blocks):
        raise TypeError(
            "collect_context must return a ContextBlock, a list of ContextBlock or None, "
            f"not {type(result).__name__}: {result!r:.80}"
        )


def _check_compact_result(result: Any) -> None:
    if not isinstance(result, str):
        raise TypeError(
            f"on_pre_compact must return a str or None, not {type(result).__name__}: {result!r:.80}"
        )


# Collection hooks whose results the host uses later: a wrong type is the returning layer's
# failure (reported like an exception), never a crash in the host.
_RESULT_CHECKS: dict[str, Callable[[Any], None]] = {
    "collect_context": _check_context_result,
    "on_pre_compact": _check_compact_result,
}


def _takes_frame(cls: Any) -> bool:
    """Whether a layer class is built with the frame: a required first positional parameter,
    ``__init__(self, frame)``."""
    try:
        parameters = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return bool(parameters) and (
        parameters[0].kind in positional and parameters[0].default is inspect.Parameter.empty
    )


def _instantiate(target: Any, frame: Any) -> Any:
    """Modules and objects are layers as they are; a class is instantiated once per frame."""
    if not inspect.isclass(target):
        return target
    cls: Any = target
    return cls(frame) if _takes_frame(cls) else cls()


class _Guarded:
    """What pluggy holds for a registered layer: the layer's hook implementations, each wrapped
    so that one layer's failure never stops the others (pluggy stops at the first exception),
    as attributes of the same names; ``layer`` is the layer itself."""

    def __init__(self, layer: object) -> None:
        self.layer = layer

    def __repr__(self) -> str:
        return f"<memframe layer {self.layer!r}>"


def _layer_of(plugin: Any) -> Any:
    return plugin.layer if isinstance(plugin, _Guarded) else plugin


class _CommandProvider:
    """A layer's ``register_commands`` alone, registered when commands are collected."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.register_commands = function


class LayerManager(pluggy.PluginManager):
    """One per :class:`~memframe.MemoryFrame`; never a module-level global."""

    def __init__(self, *, strict: bool = False, trace: bool = False) -> None:
        super().__init__(hookspecs.PROJECT)
        self.add_hookspecs(hookspecs)
        self.strict = strict
        self.trace_hooks = trace
        self._calls = _CallFrame()
        self._infos: dict[str, LayerInfo] = {}
        self._guarded: dict[int, _Guarded] = {}  # id(layer) -> what pluggy holds for it

    # -- registration ------------------------------------------------------------------------

    def register(self, plugin: object, name: str | None = None) -> str | None:
        """Register a layer. pluggy is handed a stand-in (:class:`_Guarded`) whose hook
        implementations are the layer's, each wrapped by :meth:`_guard`; every method of this
        manager that takes or returns a plugin speaks of the layer itself."""
        if id(plugin) in self._guarded:
            raise ValueError(f"Plugin already registered under a different name: {plugin!r}")
        layer_name = name or self.get_canonical_name(plugin)
        marker = f"{self.project_name}_impl"
        stand_in = _Guarded(plugin)
        wrappers = []
        for attribute in dir(plugin):
            opts = self.parse_hookimpl_opts(plugin, attribute)
            if opts is None:
                continue
            if opts.get("wrapper") or opts.get("hookwrapper"):
                wrappers.append(opts.get("specname") or attribute)
                continue
            function = getattr(plugin, attribute)
            hook = opts.get("specname") or attribute
            guarded = self._guard(function, layer_name, hook)
            setattr(guarded, marker, opts)
            setattr(stand_in, attribute, guarded)
        if wrappers:
            # A wrapper's exception cannot be isolated (it surrounds the other layers), so a
            # layer that could crash the host through one is refused.
            raise pluggy.PluginValidationError(
                plugin,
                f"layer {layer_name!r} uses a hook wrapper for {', '.join(wrappers)}; memframe "
                "layers implement hooks directly (use tryfirst/trylast to order them)",
            )
        registered = super().register(stand_in, layer_name)
        if registered is not None:
            self._guarded[id(plugin)] = stand_in
        return registered

    # pluggy holds the stand-ins; these speak of the layers.

    def _stand_in(self, plugin: object) -> object:
        return self._guarded.get(id(plugin), plugin)

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any | None:
        stand_in = super().unregister(
            plugin=None if plugin is None else self._stand_in(plugin), name=name
        )
        if isinstance(stand_in, _Guarded):
            self._guarded.pop(id(stand_in.layer), None)
            return stand_in.layer
        return stand_in

    def get_plugin(self, name: str) -> Any | None:
        return _layer_of(super().get_plugin(name))

    def get_plugins(self) -> set[Any]:
        return {_layer_of(plugin) for plugin in super().get_plugins()}

    def list_name_plugin(self) -> list[tuple[str, object]]:
        return [(name, _layer_of(plugin)) for name, plugin in super().list_name_plugin()]

    def is_registered(self, plugin: object) -> bool:
        return super().is_registered(self._stand_in(plugin))

    def get_name(self, plugin: object) -> str | None:
        return super().get_name(self._stand_in(plugin))

    def get_hookcallers(self, plugin: object) -> list[pluggy.HookCaller] | None:
        return super().get_hookcallers(self._stand_in(plugin))

    def add_layer(self, target: Any, *, name: str, frame: Any, info: LayerInfo) -> str:
        if self.is_blocked(name):
            return name
        if self.has_plugin(name):
            raise LayerLoadError(
                f"two layers are named {name!r} ({info.target} and an earlier one)"
            )
        try:
            layer = _instantiate(target, frame)
        except Exception as exc:
            raise LayerLoadError(
                f"layer {name!r} ({info.target}) failed to start: {exc!r}"
            ) from exc
        try:
            self.register(layer, name=name)
        except pluggy.PluginValidationError as exc:
            raise LayerLoadError(f"layer {name!r} ({info.target}) is invalid: {exc}") from exc
        self._infos[name] = info
        return name

    def load_dotted(self, dotted: str, *, frame: Any, origin: str = "builtin") -> str:
        """Load a layer by dotted path: ``pkg.module`` or ``pkg.module:attribute``."""
        module_name, _, attribute = dotted.partition(":")
        name = attribute or module_name.rpartition(".")[2]
        if self.is_blocked(name):
            return name
        try:
            target: Any = importlib.import_module(module_name)
            if attribute:
                target = getattr(target, attribute)
        except Exception as exc:
            raise LayerLoadError(f"layer {dotted!r} failed to import: {exc!r}") from exc
        declared = getattr(target, "name", None) if attribute else None
        if isinstance(declared, str) and declared and declared != name:
            # ``pkg.module:Class`` whose class declares ``name = "..."``: that is its name.
            name = declared
            if self.is_blocked(name):
                return name
        info = LayerInfo(name=name, origin=origin, target=dotted)
        return self.add_layer(target, name=name, frame=frame, info=info)

    def entry_point_targets(
        self, *, only: Sequence[str] | None = None, group: str = ENTRY_POINT_GROUP
    ) -> Iterator[tuple[str, Any, LayerInfo]]:
        """The installed layers of the entry-point group, imported but not started: ``(name,
        target, info)`` for each one ``only`` allows and that is not blocked; a failing import
        is an error, and so is an ``only`` naming a layer that is not installed."""
        found: set[str] = set()
        seen: set[str] = set()
        for ep in sorted(importlib.metadata.entry_points(group=group), key=lambda e: e.name):
            found.add(ep.name)
            if (only is not None and ep.name not in only) or self.is_blocked(ep.name):
                continue
            if ep.name in seen or ep.name in self._infos:
                continue  # the same distribution seen twice on sys.path
            seen.add(ep.name)
            dist = ep.dist
            dist_name = dist.metadata["Name"] if dist is not None else None
            version = dist.version if dist is not None else None
            where = f"entry point {ep.name} = {ep.value} from {dist_name or '?'} {version or ''}"
            try:
                target = ep.load()
            except Exception as exc:
                raise LayerLoadError(
                    f"memframe layer {ep.name!r} failed to import ({where.strip()}): "
                    f"{type(exc).__name__}: {exc}. Uninstall it or set "
                    f"MEMFRAME_DISABLED_PLUGINS={ep.name}"
                ) from exc
            yield ep.name, target, LayerInfo(ep.name, "entry point", ep.value, dist_name, version)
        missing = sorted(set(only or ()) - found)
        if missing:
            raise LayerLoadError(
                f"MEMFRAME_PLUGINS names layer(s) that are not installed: {', '.join(missing)}"
            )

    def load_entry_points(
        self, *, frame: Any, only: Sequence[str] | None = None, group: str = ENTRY_POINT_GROUP
    ) -> list[str]:
        """Load third-party layers from the entry-point group; a failing import is an error."""
        return [
            self.add_layer(target, name=name, frame=frame, info=info)
            for name, target, info in list(self.entry_point_targets(only=only, group=group))
        ]

    def add_command_provider(self, target: Any, *, name: str, info: LayerInfo) -> None:
        """Register only the ``register_commands`` of a layer, without a frame (the CLI collects
        commands before it knows whether it will open one).

        A module or object is asked as it is; a class through a ``@staticmethod`` or
        ``@classmethod`` ``register_commands``, or an instance when its constructor needs no
        frame. A class that needs the frame to be built cannot provide commands: that is a
        :class:`LayerLoadError`.
        """
        if self.is_blocked(name) or self.has_plugin(name):
            return
        provider = target
        marked_on: Any = None  # where the hookimpl marker is, when not on what getattr gives
        if inspect.isclass(target):
            declared = inspect.getattr_static(target, "register_commands", None)
            if declared is None:
                return
            if isinstance(declared, staticmethod | classmethod):
                marked_on = declared  # ``@hookimpl`` above ``@staticmethod`` marks the wrapper
            else:
                if _takes_frame(target):
                    raise LayerLoadError(
                        f"layer {name!r} ({info.target}): register_commands is a method of a "
                        "class built with the frame; make it a @staticmethod or @classmethod "
                        "(commands are registered before any frame opens)"
                    )
                try:
                    provider = target()
                except Exception as exc:
                    raise LayerLoadError(
                        f"layer {name!r} ({info.target}) failed to start: {exc!r}"
                    ) from exc
        function = getattr(provider, "register_commands", None)
        marker = f"{self.project_name}_impl"
        opts = getattr(function, marker, None) or getattr(marked_on, marker, None)
        if not callable(function) or opts is None:
            return

        def register_commands(register: Callable[..., None]) -> None:
            function(register)

        setattr(register_commands, marker, opts)
        # Only the one hook: a layer's other hooks are never called without its frame.
        try:
            self.register(_CommandProvider(register_commands), name=name)
        except pluggy.PluginValidationError as exc:
            raise LayerLoadError(f"layer {name!r} ({info.target}) is invalid: {exc}") from exc
        self._infos[name] = info

    def current_layer(self) -> str | None:
        """The name of the layer whose hook implementation is running on this thread (for a
        ``register`` callback that wants to know who is registering)."""
        return self._calls.layers[-1] if self._calls.layers else None

    def check(self) -> None:
        """pluggy's ``check_pending`` with a memframe error: catches misspelled hook names."""
        # The same test as pluggy's, with the layer's registered name in the message.
        unspecified = [
            caller
            for name, caller in vars(self.hook).items()
            if not name.startswith("_") and not caller.has_spec()
        ]
        for caller in unspecified:
            for impl in caller.get_hookimpls():
                if not impl.optionalhook:
                    raise LayerLoadError(
                        f"layer {impl.plugin_name!r} implements unknown hook {caller.name!r}: "
                        "fix the name, or mark it @hookimpl(optionalhook=True) if it is meant "
                        "for another version of memframe"
                    )
        try:
            self.check_pending()
        except pluggy.PluginValidationError as exc:
            raise LayerLoadError(str(exc)) from exc

    def layer_infos(self) -> list[LayerInfo]:
        return [info for name, info in self._infos.items() if self.has_plugin(name)]

    # -- calling -------------------------------------------------------------------------------

    def _guard(self, function: Callable[..., Any], layer: str, hook: str) -> Callable[..., Any]:
        calls = self._calls
        trace = self.trace_hooks
        report_now = self._report_uncollected

        check = _RESULT_CHECKS.get(hook)

        def guarded(*args: Any, **kwargs: Any) -> Any:
            # pluggy passes parameters that declare a default as keywords.
            started = time.perf_counter() if trace else 0.0
            calls.layers.append(layer)
            try:
                result = function(*args, **kwargs)
                if check is not None and result is not None:
                    check(result)
                return result
            except Exception as exc:
                failure = LayerFailure(layer, hook, exc)
                if calls.collectors:
                    calls.collectors[-1].append(failure)
                else:
                    report_now(failure)
                return None
            finally:
                calls.layers.pop()
                if trace:
                    micros = (time.perf_counter() - started) * 1e6
                    print(f"memframe trace: {hook} layer={layer} {micros:.1f}µs", file=sys.stderr)

        guarded.__wrapped__ = function  # type: ignore[attr-defined]
        return guarded

    def call(self, hook: str, /, **kwargs: Any) -> list[Any]:
        """Call ``hook`` on every layer; returns the non-None results in call order (pluggy's:
        the most recently loaded layer first, adjusted by ``tryfirst``/``trylast``).

        Failures are reported with the ``session`` keyword argument, when the hook has one.
        """
        caller = getattr(self.hook, hook)
        collected: list[LayerFailure] = []
        self._calls.collectors.append(collected)
        started = time.perf_counter() if self.trace_hooks else 0.0
        try:
            results: list[Any] = caller(**kwargs)
        finally:
            self._calls.collectors.pop()
            if self.trace_hooks:
                micros = (time.perf_counter() - started) * 1e6
                print(f"memframe trace: {hook} total {micros:.1f}µs", file=sys.stderr)
        if collected:
            self.report(collected, kwargs.get("session"))
        return results

    def collect(self, hook: str, accept: Callable[..., None], /, **kwargs: Any) -> None:
        """Call the registration hook ``hook``, handing each layer a ``register`` callback that
        passes its arguments to ``accept``. Nothing goes wrong silently: an ``accept`` that
        raises (an invalid registration) does not raise inside the layer — which could swallow
        it — but is collected with the layer's name, as is a layer whose hook raised; after the
        call, any problem raises one :class:`RegistrationError` naming them all."""
        problems: list[str] = []
        calls = self._calls

        def register(*args: Any, **kw: Any) -> None:
            layer = calls.layers[-1] if calls.layers else "?"
            try:
                accept(*args, **kw)
            except Exception as exc:  # every kind of bad registration is the layer's problem
                problems.append(f"layer {layer!r}: {exc}")

        caller = getattr(self.hook, hook)
        collected: list[LayerFailure] = []
        calls.collectors.append(collected)
        try:
            caller(register=register, **kwargs)
        finally:
            calls.collectors.pop()
        problems.extend(
            f"layer {f.layer!r}: the hook raised {type(f.error).__name__}: {f.error}"
            for f in collected
        )
        if problems:
            raise RegistrationError(hook, problems)

    def report(
        self,
        failures: Iterable[LayerFailure],
        session: Session | None = None,
        *,
        reraise: bool | None = None,
    ) -> None:
        """Log failures, tell every layer through ``on_layer_error``; strict mode re-raises.

        :param reraise: override ``strict`` for this report only (``False`` for failures that
            must not raise where they are reported, e.g. on a background thread).
        """
        failures = list(failures)
        for failure in failures:
            log.error(
                "memframe layer %r failed in %s: %r",
                failure.layer,
                failure.hook,
                failure.error,
                exc_info=failure.error,
            )
            if failure.hook == ERROR_HOOK:
                continue  # never report an error handler's error to the error handlers
            self._notify(failure, session)
        if self.strict if reraise is None else reraise:
            raise ExceptionGroup(
                f"{len(failures)} memframe layer failure(s): "
                + ", ".join(f"{f.layer}.{f.hook}" for f in failures),
                [f.error for f in failures],
            )

    def _notify(self, failure: LayerFailure, session: Session | None) -> None:
        collected: list[LayerFailure] = []
        self._calls.collectors.append(collected)
        try:
            self.hook.on_layer_error(
                layer=failure.layer, hook=failure.hook, error=failure.error, session=session
            )
        finally:
            self._calls.collectors.pop()
        for nested in collected:
            log.error(
                "memframe layer %r failed in on_layer_error: %r",
                nested.layer,
                nested.error,
                exc_info=nested.error,
            )

    def _report_uncollected(self, failure: LayerFailure) -> None:
        # A hook called directly through ``pm.hook`` (not via ``call``): report right away, but
        # never raise from inside pluggy's loop, so the remaining layers still run.
        self.report([failure], reraise=False)
