"""A frame's scanner: bundled rules + the user's rules_file setting + register_rules layers."""

from __future__ import annotations

import json

import pytest

from memframe import hookimpl
from memframe.rules import RuleError, load_rules
from memframe.testing import open_test_frame

ACME = "acme_7f3k9q2m8x4v1b6n5z0p3r8t"
WIDGET = "wdg-9f8e7d6c5b4a3f2e1d0c"


class WidgetRules:
    @hookimpl
    def register_rules(self, register):
        register(
            {
                "id": "widget-token",
                "label": "Widget token",
                "regex": r"\b(wdg-[0-9a-f]{20})\b",
                "keywords": ["wdg-"],
            }
        )


def _settings(tmp_path, **values):
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "settings.json").write_text(json.dumps(values))
    return config


def test_rules_from_a_layer_and_from_a_gitleaks_file(tmp_path, engine, monkeypatch):
    monkeypatch.setenv("MEMFRAME_BACKEND", engine)
    extra = tmp_path / "gitleaks.toml"
    extra.write_text(
        '[[rules]]\nid = "acme-token"\ndescription = "ACME token"\n'
        "regex = '''\\b(acme_[a-z0-9]{24})\\b'''\nkeywords = [\"acme_\"]\n"
    )
    config = _settings(tmp_path, rules_file=str(extra))
    with open_test_frame(tmp_path, layers=[WidgetRules()], config_dir=config) as frame:
        scanner = frame.secret_scanner()
        assert frame.secret_scanner() is scanner
        assert len(scanner.rules) == len(load_rules()) + 2  # the bundled set, the file, the layer
        found = {f.rule_id for f in scanner.find(f"{ACME} and {WIDGET}")}
    assert found == {"acme-token", "widget-token"}


def test_a_bad_rules_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'schema = 1\n[[rules]]\nid = "x"\nlabel = "x"\nregex = "(a.b)"\nkeywords = ["a"]\n'
    )
    config = _settings(tmp_path, rules_file=str(bad))
    with pytest.raises(RuleError) as info:  # fail closed: the frame does not open
        open_test_frame(tmp_path, config_dir=config)
    assert "bad.toml" in str(info.value)
    assert "x" in str(info.value)


def test_a_registered_rule_that_repeats_a_bundled_id_is_refused(tmp_path):
    class Duplicate:
        @hookimpl
        def register_rules(self, register):
            register(
                {
                    "id": "github-pat",
                    "label": "again",
                    "regex": r"\b(ghp_x{4})",
                    "keywords": ["ghp_"],
                }
            )

    with open_test_frame(tmp_path, layers=[Duplicate()]) as frame, pytest.raises(RuleError):
        frame.secret_scanner()
