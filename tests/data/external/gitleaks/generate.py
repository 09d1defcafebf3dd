"""Write generated.json: the examples gitleaks draws at test time, drawn here from spec.toml.

gitleaks' rule files call ``secrets.NewSecret(<regex>)`` for part of their true and false
positives, so those examples are not literal strings in its source. spec.toml writes down each
regex (and the context gitleaks puts the value in); this script draws a value for each with a
fixed seed, so generated.json only changes when spec.toml does. Run it from anywhere:

    python tests/data/external/gitleaks/generate.py
"""

from __future__ import annotations

import base64
import json
import os
import random
import string
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# A subset of utils.GenerateSampleSecrets' templates (cmd/generate/config/utils/generate.go at
# 9a16d927a9045d507ad10a10c7ad8531d9acc691), verbatim; {i} identifier, {I} upper-cased, {s} secret.
CONTEXTS: tuple[tuple[str, str], ...] = (
    ("ini - quoted1", '{i}Token="{s}"'),
    ("yaml - singleline - unquoted", "{i}_token: {s}"),
    ("json - string", '{\n    "{i}_token": "{s}"\n}'),
    ("go - short", '{i}Token := "{s}"'),
    ("java", 'String {i}Token = "{s}";'),
    ("python - single quote", "{i}Token = '{s}'"),
    ("misc - comma operator", 'System.setProperty("{I}_TOKEN", "{s}")'),
    ("json - escaped newline in string", '{"config.ini": "{I}_TOKEN={s}\\nBACKUP_ENABLED=true"}'),
    ("xml - element multiline", "<{i}Token>\n    {s}\n</{i}Token>"),
    ("make - conditional assignment", '{i}_TOKEN ?= "{s}"'),
    ("logstash", '  "{i}Token" => "{s}"'),
    ("go - backticks", "{i}Token := `{s}`"),
    ("ini - unquoted2", "{i}Token = {s}"),
    ("yaml - singleline - double quote", '{i}_token: "{s}"'),
    ("php - string concat", '${i}Token .= "{s}"'),
)
SINGLE = '{i}_api_token = "{s}"'  # utils.GenerateSampleSecret

WORD = string.ascii_letters + string.digits + "_"
ESCAPES = {"w": WORD, "d": string.digits, "s": " "}


class Drawer:
    """Draws a string matching a small regex subset: literals, escapes, classes, (?:...)?, {n,m}."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def draw(self, pattern: str) -> str:
        out, pos = self._sequence(pattern, 0)
        if pos != len(pattern):
            raise ValueError(f"unbalanced pattern {pattern!r}")
        return out

    def _sequence(self, p: str, i: int) -> tuple[str, int]:
        parts: list[str] = []
        while i < len(p) and p[i] != ")":
            if p.startswith("(?:", i):
                choices, i = self._group(p, i + 3)
                atom: list[str] | str = choices
            elif p[i] == "[":
                atom, i = self._class(p, i + 1)
            elif p[i] == "\\":
                c = p[i + 1]
                atom = ESCAPES.get(c, c)
                atom = list(atom) if len(atom) > 1 else atom
                i += 2
            else:
                atom = p[i]
                i += 1
            low, high, i = self._quantifier(p, i)
            if atom == "=" and low == 0:
                high = 0  # optional base64 padding: none (`={0,3}` could draw `===`, never valid)
            for _ in range(self.rng.randint(low, high)):
                if isinstance(atom, list):
                    parts.append(self.rng.choice(atom))
                else:
                    parts.append(atom)
        return "".join(parts), i

    def _group(self, p: str, i: int) -> tuple[list[str], int]:
        inner, i = self._sequence(p, i)
        if p[i] != ")":
            raise ValueError(f"unclosed group in {p!r}")
        return [inner], i + 1

    def _class(self, p: str, i: int) -> tuple[list[str], int]:
        chars: list[str] = []
        while p[i] != "]":
            if p[i] == "\\":
                c = p[i + 1]
                chars.extend(ESCAPES.get(c, c))
                i += 2
            elif i + 2 < len(p) and p[i + 1] == "-" and p[i + 2] != "]":
                chars.extend(chr(c) for c in range(ord(p[i]), ord(p[i + 2]) + 1))
                i += 3
            else:
                chars.append(p[i])
                i += 1
        return sorted(set(chars)), i + 1

    def _quantifier(self, p: str, i: int) -> tuple[int, int, int]:
        if i < len(p) and p[i] == "?":
            return 1, 1, i + 1  # optional parts are always drawn
        if i < len(p) and p[i] == "{":
            end = p.index("}", i)
            low_s, comma, high_s = p[i + 1 : end].partition(",")
            low = int(low_s)
            high = int(high_s) if high_s else low + 20 if comma else low
            return low, high, end + 1
        return 1, 1, i


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def realistic_jwt(rng: random.Random, alg: str) -> str:
    header = {"alg": alg, "typ": "JWT"}
    iat = rng.randint(1_600_000_000, 1_780_000_000)
    claims = {"sub": str(rng.randint(10_000, 99_999_999)), "iat": iat, "exp": iat + 3600}
    signature = rng.randbytes(32 if alg == "HS256" else 256)
    return ".".join(
        (
            b64url(json.dumps(header, separators=(",", ":")).encode()),
            b64url(json.dumps(claims, separators=(",", ":")).encode()),
            b64url(signature),
        )
    )


def build() -> dict[str, Any]:
    """generated.json's document, drawn afresh from spec.toml."""
    spec = tomllib.loads((HERE / "spec.toml").read_text(encoding="utf-8"))
    rng = random.Random(spec["seed"])
    drawer = Drawer(rng)
    per_secret = int(spec["contexts"])
    rotation = 0
    examples: list[dict[str, Any]] = []
    for gen in spec["gen"]:
        formats: list[str] = gen["formats"]
        templates: list[str] = gen.get("templates") or [gen.get("template", "")] * len(formats)
        for fmt, template in zip(formats, templates, strict=True):
            if gen.get("jwt"):
                secret = realistic_jwt(rng, "HS256" if "HS256" in fmt else "RS256")
            else:
                secret = drawer.draw(fmt)
                while gen.get("plausible") and not any(c in secret for c in "123456789"):
                    secret = drawer.draw(fmt)  # generic.go's newPlausibleSecret wants a digit
            if template:
                texts = [("template", template.replace("{s}", secret))]
            elif gen.get("single"):
                texts = [("GenerateSampleSecret", SINGLE.format(i=gen["identifier"], s=secret))]
            else:
                texts = []
                for _ in range(per_secret):
                    name, ctx = CONTEXTS[rotation % len(CONTEXTS)]
                    rotation += 1
                    ident = gen["identifier"]
                    text = ctx.replace("{i}", ident).replace("{I}", ident.upper())
                    texts.append((name, text.replace("{s}", secret)))
            for context, text in texts:
                example: dict[str, Any] = {
                    "rule": gen["rule"],
                    "kind": gen.get("kind", "positive"),
                    "text": text,
                    "secret": secret if gen.get("kind", "positive") == "positive" else None,
                    "format": fmt,
                    "context": context,
                    "file": gen["file"],
                    "commit": gen["commit"],
                    "generated": True,
                }
                for key in ("excluded", "realistic", "note"):
                    if key in gen:
                        example[key] = gen[key]
                examples.append(example)
    return {
        "schema": 1,
        "repo": "gitleaks/gitleaks",
        "about": "generated by generate.py from spec.toml (seeded); do not edit by hand",
        "examples": examples,
    }


def main() -> None:
    document = build()
    examples = document["examples"]
    out = HERE / "generated.json"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    print(f"{out}: {len(examples)} examples")


if __name__ == "__main__":
    main()
