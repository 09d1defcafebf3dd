"""``memframe.prompts``: the one prompt templating of the layers, and every layer prompt
overridable the same way (``<layer>.prompt``, else ``<config dir>/<layer dir>/prompt.md``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memframe._manager import LayerLoadError
from memframe.config import ConfigError
from memframe.layers import dream, extract_memories, magic_docs, memdir, session_memory
from memframe.models.base import ModelRequest, ModelResponse
from memframe.prompts import PLACEHOLDER, Prompt, PromptSpec, check_prompt, load_prompt
from memframe.testing import open_test_frame

# (the layer's entry, its PromptSpec)
LAYERS = [
    pytest.param("memframe.layers.session_memory:SessionMemoryLayer", session_memory.PROMPT),
    pytest.param("memframe.layers.magic_docs:MagicDocsLayer", magic_docs.PROMPT),
    pytest.param("memframe.layers.extract_memories:ExtractMemoriesLayer", extract_memories.PROMPT),
    pytest.param("memframe.layers.dream:DreamLayer", dream.PROMPT),
    pytest.param("memframe.layers.memdir:MemdirLayer", memdir.PROMPT),
]
SPEC = PromptSpec(
    layer="my_layer",
    bundled="Summarise {{file}} in {{words}} words.",
    placeholders=("file", "words"),
    required=("file",),
)


def valid_override(spec: PromptSpec) -> str:
    return "Mine: " + " ".join("{{" + name + "}}" for name in spec.placeholders)


def write_settings(tmp_path: Path, settings: dict) -> None:
    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "settings.json").write_text(json.dumps(settings))


def layer_prompt(tmp_path: Path, entry: str, layer: str) -> Prompt:
    with open_test_frame(tmp_path, builtin_layers=[entry]) as frame:
        prompt = frame.manager.get_plugin(layer).prompt
    assert isinstance(prompt, Prompt)
    return prompt


# -- the bundled prompts -------------------------------------------------------------------------


@pytest.mark.parametrize(("entry", "spec"), LAYERS)
def test_each_bundled_prompt_uses_exactly_its_placeholders(entry, spec):
    text = spec.bundled_text()
    assert set(PLACEHOLDER.findall(text)) == set(spec.placeholders)
    assert check_prompt(spec, text, "bundled").text == text


@pytest.mark.parametrize(("entry", "spec"), LAYERS)
def test_a_layer_without_an_override_uses_the_bundled_prompt(tmp_path, entry, spec):
    prompt = layer_prompt(tmp_path, entry, spec.layer)
    assert prompt.origin == "bundled" and prompt.text == spec.bundled_text()


# -- overriding, the same way for every layer ----------------------------------------------------


@pytest.mark.parametrize(("entry", "spec"), LAYERS)
def test_the_prompt_file_in_the_config_dir_replaces_it(tmp_path, entry, spec):
    path = tmp_path / "config" / spec.layer.replace("_", "-") / "prompt.md"
    assert spec.default_override == f"{spec.layer.replace('_', '-')}/prompt.md"
    path.parent.mkdir(parents=True)
    path.write_text(valid_override(spec), encoding="utf-8")
    prompt = layer_prompt(tmp_path, entry, spec.layer)
    assert (prompt.origin, prompt.text) == (str(path), valid_override(spec))


@pytest.mark.parametrize(("entry", "spec"), LAYERS)
def test_the_prompt_setting_names_a_file_and_wins(tmp_path, entry, spec):
    default = tmp_path / "config" / spec.default_override
    default.parent.mkdir(parents=True)
    default.write_text(valid_override(spec) + " (default)", encoding="utf-8")
    mine = tmp_path / "config" / "prompts" / f"{spec.layer}.md"
    mine.parent.mkdir()
    mine.write_text(valid_override(spec) + " (named)", encoding="utf-8")
    write_settings(tmp_path, {spec.layer: {"prompt": f"prompts/{spec.layer}.md"}})  # relative
    prompt = layer_prompt(tmp_path, entry, spec.layer)
    assert prompt.origin == str(mine) and prompt.text.endswith("(named)")
    write_settings(tmp_path, {spec.layer: {"prompt": str(mine)}})  # absolute
    assert layer_prompt(tmp_path, entry, spec.layer).origin == str(mine)


@pytest.mark.parametrize(("entry", "spec"), LAYERS)
def test_a_named_file_that_is_missing_fails_the_frame(tmp_path, entry, spec):
    write_settings(tmp_path, {spec.layer: {"prompt": "nowhere.md"}})
    with pytest.raises(LayerLoadError, match=rf"settings '{spec.layer}\.prompt': no such file"):
        open_test_frame(tmp_path, builtin_layers=[entry])


@pytest.mark.parametrize(("entry", "spec"), LAYERS)
def test_an_override_without_a_required_placeholder_fails_the_frame(tmp_path, entry, spec):
    path = tmp_path / "config" / spec.default_override
    path.parent.mkdir(parents=True)
    path.write_text("Do the thing.", encoding="utf-8")
    required = "{{" + spec.required[0] + "}}"
    with pytest.raises(LayerLoadError, match=f"must contain {required}"):
        open_test_frame(tmp_path, builtin_layers=[entry])


@pytest.mark.parametrize(("entry", "spec"), LAYERS)
def test_a_misspelt_placeholder_fails_the_frame(tmp_path, entry, spec):
    path = tmp_path / "config" / spec.default_override
    path.parent.mkdir(parents=True)
    path.write_text(valid_override(spec) + " {{memroy_dir}}", encoding="utf-8")
    with pytest.raises(LayerLoadError, match=r"unknown placeholder \{\{memroy_dir\}\}"):
        open_test_frame(tmp_path, builtin_layers=[entry])


def test_the_prompt_setting_must_be_a_string(tmp_path):
    write_settings(tmp_path, {"dream": {"prompt": 3}})
    with pytest.raises(LayerLoadError, match="'prompt' must be a string"):
        open_test_frame(tmp_path, builtin_layers=["memframe.layers.dream:DreamLayer"])


# -- the helper ----------------------------------------------------------------------------------


def test_render_fills_every_placeholder_in_one_pass():
    prompt = check_prompt(SPEC, SPEC.bundled, "bundled")
    # a value that contains a placeholder is not expanded again
    assert prompt.render(file="{{words}}.md", words="50") == "Summarise {{words}}.md in 50 words."
    assert prompt.render({"file": "a", "words": "1"}) == "Summarise a in 1 words."
    with pytest.raises(KeyError, match="no value for words"):
        prompt.render(file="a")


def test_braces_that_are_not_a_placeholder_are_text():
    text = "{{file}}: keep {{ spaced }}, {single} and {{1x}} as they are"
    assert check_prompt(SPEC, text, "x").render(file="f", words="w") == (
        "f: keep {{ spaced }}, {single} and {{1x}} as they are"
    )


def test_load_prompt_reads_only_utf8(tmp_path):
    path = tmp_path / "my-layer" / "prompt.md"
    path.parent.mkdir()
    path.write_bytes(b"{{file}} \xff")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_prompt(SPEC, tmp_path, None)
    assert load_prompt(SPEC, tmp_path / "elsewhere", None).origin == "bundled"


def test_a_layers_request_carries_the_users_prompt(tmp_path):
    """End to end: memdir's model selection sends the user's prompt, filled in."""

    class Picker:
        name = "picker"

        def __init__(self) -> None:
            self.requests: list[ModelRequest] = []

        def supports(self, purpose: str) -> bool:
            return purpose == "select_memories"

        def complete(self, request: ModelRequest) -> ModelResponse:
            self.requests.append(request)
            return ModelResponse(text="[]")

    path = tmp_path / "config" / "memdir" / "prompt.md"
    path.parent.mkdir(parents=True)
    path.write_text("Q={{request}} N={{limit}}\n{{manifest}}", encoding="utf-8")
    backend = Picker()
    with open_test_frame(
        tmp_path, builtin_layers=["memframe.layers.memdir:MemdirLayer"], model=backend
    ) as frame:
        layer = frame.manager.get_plugin("memdir")
        root = layer.store.root
        root.mkdir(parents=True, exist_ok=True)
        (root / "a.md").write_text(
            "---\nname: Alpha\ndescription: the {{limit}} release day\ntype: project\n---\n"
            "Release every tuesday.\n"
        )
        layer.select("when is the release?", layer.store.memories(), 3)
    (request,) = backend.requests
    assert request.messages[0]["content"] == (
        "Q=when is the release? N=3\n- a.md: Alpha — the {{limit}} release day"
    )
