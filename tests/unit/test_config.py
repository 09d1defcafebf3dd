"""Configuration: argument > environment > settings file > defaults, with clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memframe.config import SETTINGS_FILE, Config, ConfigError, default_config_dir, load_config


@pytest.fixture
def config_dir(tmp_path) -> Path:
    path = tmp_path / "config"
    path.mkdir()
    return path


def write_settings(config_dir: Path, data: object) -> Path:
    path = config_dir / SETTINGS_FILE
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def load(config_dir: Path, env: dict[str, str] | None = None, **overrides) -> Config:
    return load_config({"config_dir": config_dir, **overrides}, env={} if env is None else env)


def test_defaults(config_dir, fake_home):
    config = load(config_dir)
    assert config.home == fake_home / ".memframe"
    assert config.config_dir == config_dir
    assert config.strict is False
    assert config.trace_hooks is False
    assert config.autoload_plugins is True
    assert config.plugins is None
    assert config.disabled_plugins == ()
    assert config.model == "offline"
    assert config.background_workers == 2
    assert config.settings == {}
    assert config.sources == {}  # nothing came from anywhere but the defaults


@pytest.mark.parametrize(
    ("argument", "env", "settings", "expected", "source"),
    [
        ("argument", "env", "file", "argument", "argument"),
        (None, "env", "file", "env", "env MEMFRAME_MODEL"),
        (None, None, "file", "file", "settings"),
        (None, None, None, "offline", None),
    ],
)
def test_precedence(config_dir, argument, env, settings, expected, source):
    path = write_settings(config_dir, {} if settings is None else {"model": settings})
    environ = {} if env is None else {"MEMFRAME_MODEL": env}
    config = load(config_dir, environ, model=argument)
    assert config.model == expected
    if source is None:
        assert "model" not in config.sources
    elif source == "settings":
        assert config.sources["model"] == str(path)
    else:
        assert config.sources["model"] == source


def test_every_setting_from_each_source(config_dir, tmp_path):
    path = write_settings(
        config_dir,
        {
            "home": str(tmp_path / "from-file"),
            "strict": True,
            "trace_hooks": True,
            "autoload_plugins": False,
            "plugins": ["a", "b"],
            "disabled_plugins": ["c"],
            "model": "anthropic",
            "background_workers": 4,
            "session_memory": {"enabled": False},
        },
    )
    from_file = load(config_dir)
    assert from_file.home == tmp_path / "from-file"
    assert from_file.strict is True
    assert from_file.trace_hooks is True
    assert from_file.autoload_plugins is False
    assert from_file.plugins == ("a", "b")
    assert from_file.disabled_plugins == ("c",)
    assert from_file.model == "anthropic"
    assert from_file.background_workers == 4
    assert from_file.settings["session_memory"] == {"enabled": False}  # layers' own keys
    assert set(from_file.sources.values()) == {str(path)}

    env = {
        "MEMFRAME_HOME": str(tmp_path / "from-env"),
        "MEMFRAME_STRICT": "0",
        "MEMFRAME_TRACE_HOOKS": "no",
        "MEMFRAME_DISABLE_PLUGIN_AUTOLOAD": "false",
        "MEMFRAME_PLUGINS": " x , y ,",
        "MEMFRAME_DISABLED_PLUGINS": "z",
        "MEMFRAME_MODEL": "openai",
        "MEMFRAME_BACKGROUND_WORKERS": "3",
    }
    from_env = load(config_dir, env)
    assert from_env.home == tmp_path / "from-env"
    assert from_env.strict is False
    assert from_env.trace_hooks is False
    assert from_env.autoload_plugins is True
    assert from_env.plugins == ("x", "y")
    assert from_env.disabled_plugins == ("z",)
    assert from_env.model == "openai"
    assert from_env.background_workers == 3
    assert from_env.sources["autoload_plugins"] == "env MEMFRAME_DISABLE_PLUGIN_AUTOLOAD"
    assert all(source.startswith("env MEMFRAME_") for source in from_env.sources.values())

    from_args = load(
        config_dir,
        env,
        home=tmp_path / "from-args",
        strict=True,
        plugins=["p"],
        disabled_plugins=("q",),
        background_workers=1,
    )
    assert from_args.home == tmp_path / "from-args"
    assert from_args.strict is True
    assert from_args.plugins == ("p",)
    assert from_args.disabled_plugins == ("q",)
    assert from_args.background_workers == 1
    assert from_args.model == "openai"  # not given as an argument: env still wins over the file
    assert from_args.sources["home"] == "argument"
    assert from_args.sources["model"] == "env MEMFRAME_MODEL"


def test_empty_env_var_counts_as_unset(config_dir):
    write_settings(config_dir, {"model": "file"})
    assert load(config_dir, {"MEMFRAME_MODEL": ""}).model == "file"


def test_home_is_expanded(config_dir, fake_home):
    config = load(config_dir, {"MEMFRAME_HOME": "~/memories"})
    assert config.home == fake_home / "memories"


def test_config_dir_from_env_and_xdg(tmp_path, fake_home):
    assert default_config_dir({"MEMFRAME_CONFIG_DIR": str(tmp_path / "c")}) == tmp_path / "c"
    assert default_config_dir({"XDG_CONFIG_HOME": str(tmp_path / "x")}) == tmp_path / "x/memframe"
    assert default_config_dir({}) == fake_home / ".config" / "memframe"


def test_the_real_environment_is_read_by_default(monkeypatch, tmp_path):
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    write_settings(config_dir, {"model": "from-file"})
    monkeypatch.setenv("MEMFRAME_CONFIG_DIR", str(config_dir))
    monkeypatch.setenv("MEMFRAME_STRICT", "1")
    config = load_config()
    assert config.config_dir == config_dir
    assert config.model == "from-file"
    assert config.strict is True
    assert config.sources["strict"] == "env MEMFRAME_STRICT"


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["{not json", "", "[1, 2", '{"model": "x",}'])
def test_invalid_json_settings_name_the_file(config_dir, text):
    path = config_dir / SETTINGS_FILE
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON") as excinfo:
        load(config_dir)
    assert str(path) in str(excinfo.value)


def test_settings_must_be_an_object(config_dir):
    path = write_settings(config_dir, ["model"])
    with pytest.raises(ConfigError, match="JSON object") as excinfo:
        load(config_dir)
    assert str(path) in str(excinfo.value)


def test_unreadable_settings_file(config_dir):
    (config_dir / SETTINGS_FILE).mkdir()  # a directory where the file should be
    with pytest.raises(ConfigError, match="cannot read settings file"):
        load(config_dir)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("home", 3),
        ("home", ""),
        ("strict", "yes"),
        ("strict", 1),
        ("trace_hooks", None),
        ("autoload_plugins", "false"),
        ("plugins", "a,b"),
        ("plugins", ["a", 1]),
        ("disabled_plugins", {"a": True}),
        ("model", ""),
        ("model", 7),
        ("background_workers", "2"),
        ("background_workers", True),
        ("background_workers", 2.5),
    ],
)
def test_wrong_types_in_settings_name_the_key(config_dir, key, value):
    path = write_settings(config_dir, {key: value})
    with pytest.raises(ConfigError) as excinfo:
        load(config_dir)
    message = str(excinfo.value)
    assert repr(key) in message
    assert str(path) in message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("home", 3),
        ("strict", "yes"),
        ("trace_hooks", 1),
        ("autoload_plugins", "0"),
        ("plugins", "fake"),  # a bare string would match by substring
        ("disabled_plugins", "abc"),
        ("disabled_plugins", [1]),
        ("model", ""),
        ("background_workers", "2"),
    ],
)
def test_wrong_types_in_arguments_name_the_key(config_dir, key, value):
    with pytest.raises(ConfigError) as excinfo:
        load(config_dir, **{key: value})
    assert repr(key) in str(excinfo.value)
    assert "argument" in str(excinfo.value)


@pytest.mark.parametrize("var", ["MEMFRAME_STRICT", "MEMFRAME_DISABLE_PLUGIN_AUTOLOAD"])
@pytest.mark.parametrize("value", ["maybe", "2", "enabled"])
def test_bad_env_booleans(config_dir, var, value):
    with pytest.raises(ConfigError, match=var) as excinfo:
        load(config_dir, {var: value})
    assert repr(value) in str(excinfo.value)


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("TRUE", True), (" on ", True)])
def test_env_booleans_are_lenient_about_spelling(config_dir, value, expected):
    assert load(config_dir, {"MEMFRAME_STRICT": value}).strict is expected


def test_bad_env_integer(config_dir):
    with pytest.raises(ConfigError, match="MEMFRAME_BACKGROUND_WORKERS"):
        load(config_dir, {"MEMFRAME_BACKGROUND_WORKERS": "many"})


@pytest.mark.parametrize("workers", [0, -1])
def test_background_workers_must_be_positive(config_dir, workers):
    with pytest.raises(ConfigError, match="background_workers"):
        load(config_dir, background_workers=workers)


def test_unknown_override(config_dir):
    with pytest.raises(ConfigError, match="unknown configuration option") as excinfo:
        load(config_dir, strikt=True, colour="red")
    assert "colour, strikt" in str(excinfo.value)


def test_unknown_override_through_open(tmp_path):
    import memframe

    with pytest.raises(ConfigError, match="strikt"):
        memframe.open(tmp_path, strikt=True, config_dir=tmp_path / "c", home=tmp_path / "h")
