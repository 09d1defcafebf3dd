"""``MemoryFrame``: one project's memory, its layers and their plugin manager."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from memframe import _backend
from memframe._manager import LayerFailure, LayerInfo, LayerManager
from memframe.background.executor import BackgroundExecutor
from memframe.config import Config, load_config
from memframe.config.remote import DEFAULT_TTL, RemoteConfig
from memframe.layers import BUILTIN_LAYERS
from memframe.models import BackendRegistry, ModelBackend
from memframe.paths import project_key
from memframe.privacy import personal_kinds
from memframe.session import STATE_FILE, Session, SessionNotFoundError, validate_session_id

if TYPE_CHECKING:
    from memframe.memdir.location import MemoryLocation
    from memframe.scanner import SecretScanner

T = TypeVar("T")


class MemoryFrame:
    """The memory of one project: its configuration, layers and sessions.

    Open it with :func:`memframe.open`. Layers load in this order: built-ins by dotted name,
    ``extra_layers`` passed by the caller, then third-party layers from the ``memframe``
    entry-point group; ``check_pending()`` validates them last.
    """

    def __init__(
        self,
        project_dir: Path,
        config: Config,
        *,
        builtin_layers: Sequence[str] = BUILTIN_LAYERS,
        extra_layers: Sequence[object | tuple[str, object]] = (),
    ) -> None:
        self.project_dir = project_dir.resolve()
        if not self.project_dir.is_dir():
            raise NotADirectoryError(f"project directory {project_dir} does not exist")
        self.config = config
        self.project_key = project_key(self.project_dir)
        self.project_home = config.home / "projects" / self.project_key
        self.count_tokens: Callable[[str], int] = _backend.count_tokens
        self.manager = LayerManager(strict=config.strict, trace=config.trace_hooks)
        for name in config.disabled_plugins:
            self.manager.set_blocked(name)
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._background_failures: list[LayerFailure] = []
        self._executor = BackgroundExecutor(config.background_workers)
        self.closed = False
        self._scanner: SecretScanner | None = None
        self._model: ModelBackend | None = None
        self._model_lock = threading.Lock()
        self._memory_location: MemoryLocation | None = None  # see memory_location()
        self._location_lock = threading.Lock()
        # the personal data kept out of memory (settings ``privacy.redact``), checked at open
        self.personal_kinds: frozenset[str] = personal_kinds(config.settings)
        self.remote_config = RemoteConfig(self, ttl=_remote_ttl(config.settings))
        for dotted in builtin_layers:
            self.manager.load_dotted(dotted, frame=self)
        for layer in extra_layers:
            self.register_layer(*(layer if isinstance(layer, tuple) else (None, layer)))
        if config.autoload_plugins:
            self.manager.load_entry_points(frame=self, only=config.plugins)
        self.manager.check()
        self._check_rules()
        self.manager.call("on_frame_open", frame=self)

    def register_layer(self, name: str | None, layer: object) -> str:
        """Add a layer object (or a class, instantiated with this frame) under ``name``."""
        if isinstance(layer, str):
            return self.manager.load_dotted(layer, frame=self, origin="explicit")
        if isinstance(layer, ModuleType):
            label = name or layer.__name__.rpartition(".")[2]
            info = LayerInfo(label, "explicit", layer.__name__)
            return self.manager.add_layer(layer, name=label, frame=self, info=info)
        cls = layer if isinstance(layer, type) else type(layer)
        label = name or getattr(layer, "name", None) or cls.__name__
        info = LayerInfo(label, "explicit", f"{cls.__module__}:{cls.__qualname__}")
        return self.manager.add_layer(layer, name=label, frame=self, info=info)

    def _register_rules(self, register: Callable[[Any], None]) -> None:
        self.manager.collect("register_rules", register)

    def _check_rules(self) -> None:
        """Fail closed at open: the ``rules_file`` setting and every rule layers register are
        checked (without building the scanner); a bad one raises :class:`RuleError` /
        :class:`~memframe._manager.RegistrationError` naming the file or layer, rule and field."""
        from memframe.rules import Rule, load_rule_file, rule_from_mapping
        from memframe.scanner import rules_file_setting

        extra = rules_file_setting(self.config.settings)
        if extra is not None:
            load_rule_file(extra)

        def check(rule: Any) -> None:
            if not isinstance(rule, Rule):
                rule_from_mapping(rule)

        self._register_rules(check)

    def secret_scanner(self) -> SecretScanner:
        """The scanner for this frame: bundled rules + the ``rules_file`` setting + rules layers
        register through ``register_rules``; built once per frame. A bad rule anywhere raises
        instead of leaving the gate with fewer rules than configured."""
        if self._scanner is None:
            from memframe.scanner import SecretScanner, rules_for_settings

            rules = rules_for_settings(self.config.settings, self._register_rules)
            self._scanner = SecretScanner(rules)
        return self._scanner

    def memory_location(self) -> MemoryLocation:
        """Where this project's memory directory is (``memory_dir`` / ``memory_mode``
        settings, ``MEMFRAME_MEMORY_DIR``; see docs/memdir.md): resolved once per frame, so every
        layer agrees and a warning about the choice is logged once."""
        with self._location_lock:
            if self._memory_location is None:
                from memframe.memdir.location import locate_for

                self._memory_location = locate_for(self.project_dir, self.config)
            return self._memory_location

    def model_backends(self) -> BackendRegistry:
        """Every model backend: the built-ins and those layers register."""
        registry = BackendRegistry()
        from_layers: set[str] = set()

        def register(name: str, factory: Callable[..., Any]) -> None:
            if name in from_layers:
                raise ValueError(f"model backend {name!r} is registered twice")
            registry.register(name, factory)
            from_layers.add(name)

        self.manager.collect("register_model_backends", register)
        return registry

    def model_backend(self) -> ModelBackend:
        """The configured model backend (``model`` setting, default ``offline``), built once.

        :raises ModelNotConfiguredError: the backend is unknown or lacks a key/endpoint.
        """
        with self._model_lock:
            if self._model is None:
                name = self.config.model
                models = self.config.settings.get("models", {})
                options = models.get(name) if isinstance(models, dict) else None
                self._model = self.model_backends().create(name, options)
            return self._model

    def layers(self) -> list[LayerInfo]:
        """Loaded layers with where they came from (and their distribution versions)."""
        return self.manager.layer_infos()

    # -- sessions ------------------------------------------------------------------------------

    def session(self, session_id: str | None = None) -> Session:
        """Start (or resume, when its state file exists) the session ``session_id``."""
        if self.closed:
            raise RuntimeError("this MemoryFrame is closed")
        with self._lock:
            if session_id is not None and session_id in self._sessions:
                return self._sessions[session_id]
            session = Session(self, session_id)
            self._sessions[session.id] = session
        self.manager.call("on_session_start", session=session)
        return session

    def inspect(self, session_id: str) -> Session:
        """A read-only view of the existing session ``session_id``: its context and what a
        compaction would keep can be asked for, but no session hook fires (no team pull at
        start, no extraction or consolidation at the end), events are refused and its state is
        never saved. Close it (or use it as a context manager) when done.

        :raises SessionNotFoundError: the session has no saved state in this project.
        """
        if self.closed:
            raise RuntimeError("this MemoryFrame is closed")
        session_id = validate_session_id(session_id)
        if not (self.project_home / session_id / STATE_FILE).is_file():
            known = sorted(p.parent.name for p in self.project_home.glob(f"*/{STATE_FILE}"))
            raise SessionNotFoundError(
                f"no session {session_id!r} under {self.project_home}"
                + (f"; known sessions: {', '.join(known[:20])}" if known else "")
            )
        return Session(self, session_id, read_only=True)

    def _forget(self, session: Session) -> None:
        with self._lock:
            self._sessions.pop(session.id, None)

    # -- background work -----------------------------------------------------------------------

    def submit_background(
        self,
        fn: Callable[[], T],
        *,
        name: str,
        layer: str = "memframe",
        session: Session | None = None,
    ) -> Future[T]:
        """Run ``fn()`` off the agent's path; a failure is reported like a layer's hook failure."""

        def on_error(exc: Exception) -> None:
            self._report_background(LayerFailure(layer, name, exc), session)

        return self._executor.submit(fn, on_error=on_error)

    def _report_background(self, failure: LayerFailure, session: Session | None) -> None:
        # Never raise on the worker thread (and never flip ``manager.strict``, which hooks on
        # other threads read meanwhile): strict mode re-raises from ``flush`` instead.
        self.manager.report([failure], session, reraise=False)
        if self.manager.strict:
            with self._lock:
                self._background_failures.append(failure)

    def flush(self, timeout: float | None = 15.0) -> bool:
        """Wait for all background work; in strict mode re-raise what failed meanwhile."""
        finished = self._executor.flush(timeout)
        with self._lock:
            failures, self._background_failures = self._background_failures, []
        if failures:
            raise ExceptionGroup(
                f"{len(failures)} memframe background task(s) failed: "
                + ", ".join(f"{f.layer}.{f.hook}" for f in failures),
                [f.error for f in failures],
            )
        return finished

    # -- closing -------------------------------------------------------------------------------

    def close(self, timeout: float | None = 15.0) -> None:
        """End open sessions, finish background work and tell layers. Idempotent."""
        if self.closed:
            return
        # Every step runs even when an earlier one raised (strict mode): one failing layer must
        # not leave other sessions open or skip ``on_frame_close``. Errors are re-raised after.
        errors: list[Exception] = []
        try:
            for session in list(self._sessions.values()):
                try:
                    session.close(timeout=timeout)
                except Exception as exc:
                    errors.append(exc)
            try:
                self.flush(timeout)
            except Exception as exc:
                errors.append(exc)
            try:
                self.manager.call("on_frame_close", frame=self)
            except Exception as exc:
                errors.append(exc)
        finally:
            self.closed = True
            self._executor.shutdown(timeout=0)
            close_model = getattr(self._model, "close", None)
            if callable(close_model):
                close_model()  # e.g. an HTTP backend's connection pool
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise ExceptionGroup("memframe frame close failed", errors)

    def __enter__(self) -> MemoryFrame:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<MemoryFrame {self.project_dir} layers={[i.name for i in self.layers()]}>"


def _remote_ttl(settings: Any) -> float:
    ttl = settings.get("remote_config_ttl", DEFAULT_TTL)
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl < 0:
        from memframe.config import ConfigError

        raise ConfigError(f"settings 'remote_config_ttl' must be seconds (>= 0), got {ttl!r}")
    return float(ttl)


def open_frame(
    project_dir: str | Path = ".",
    *,
    layers: Sequence[object | tuple[str, object]] = (),
    builtin_layers: Sequence[str] | None = None,
    **options: Any,
) -> MemoryFrame:
    """Open the memory of the project at ``project_dir``.

    :param layers: extra layers for this frame: objects, classes, dotted paths or
        ``(name, layer)`` pairs.
    :param builtin_layers: replace the built-in layer list (dotted paths); default: all.
    :param options: configuration overrides (``home``, ``strict``, ``trace_hooks``,
        ``autoload_plugins``, ``plugins``, ``disabled_plugins``, ``model``, ``config_dir``…).
    """
    config = load_config(options)
    return MemoryFrame(
        Path(project_dir),
        config,
        builtin_layers=BUILTIN_LAYERS if builtin_layers is None else builtin_layers,
        extra_layers=layers,
    )
