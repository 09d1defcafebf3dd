"""The team gate scans what leaves in every form: the key (file name), and what the text
decodes to (base64, percent-encoding, string escapes), on the client and on the real server."""

from __future__ import annotations

import base64
import json
import re
import time

import pytest

from memframe.scanner import default_scanner
from memframe.scanning.gate import MAX_DECODED_BYTES, TEXT, gate_findings
from tests.native.vectors import positives
from tests.team.conftest import make_client, write


def _secret(rule_id: str, pattern: str) -> str:
    """A token of ``rule_id`` taken from its own positive vectors (no token in this file)."""
    for vector in positives():
        if vector.rule_id == rule_id:
            found = re.search(pattern, vector.text)
            if found:
                return found.group()
    raise AssertionError(f"no {rule_id} vector")


def _pem() -> str:
    return next(v.text for v in positives() if v.rule_id == "private-key" and "BEGIN" in v.text)


GITHUB = _secret("github-pat", r"ghp_[A-Za-z0-9]{36}")
AWS = _secret("aws-access-token", r"AKIA[A-Z0-9]{16}")


def _kubeconfig() -> str:
    data = base64.b64encode(_pem().encode()).decode()
    return (
        "apiVersion: v1\nkind: Config\nusers:\n- name: ci\n  user:\n"
        f"    client-certificate-data: {base64.b64encode(b'not a key, a certificate').decode()}\n"
        f"    client-key-data: {data}\n"
    )


ENCODED = {
    "base64": f"the bot's key, encoded: {base64.b64encode(f'token={GITHUB}'.encode()).decode()}\n",
    "url-safe base64": "k="
    + base64.urlsafe_b64encode(f"{AWS}\x00\xff".encode()).decode().rstrip("=")
    + "\n",
    "kubeconfig": _kubeconfig(),
    "percent-encoding": "curl 'https://x/?t="
    + "".join(f"%{ord(c):02X}" for c in GITHUB[:4])
    + f"{GITHUB[4:]}%0A'\n",
    "escapes": 'token = "' + GITHUB.replace("_", "\\x5f") + '"\n',
    "unicode escapes": '{"t": "' + "".join(f"\\u{ord(c):04x}" for c in GITHUB) + '"}\n',
    "base64 of escapes": base64.b64encode(json.dumps({"pem": _pem()}).encode()).decode() + "\n",
}


@pytest.mark.parametrize("form", sorted(ENCODED))
def test_an_encoded_secret_is_found(form: str) -> None:
    text = ENCODED[form]
    assert not [f for f in gate_findings(default_scanner(), "notes.md", text) if f.where == TEXT]
    findings = gate_findings(default_scanner(), "notes.md", text)
    assert findings, f"{form}: nothing found in {text!r}"
    assert all(f.where != TEXT and f.line >= 1 for f in findings)


def test_a_secret_in_the_file_name_is_found() -> None:
    (finding,) = gate_findings(default_scanner(), f"bots/{GITHUB}.md", "# Bot\nclean\n")
    assert (finding.rule_id, finding.where, finding.line) == ("github-pat", "file name", 0)
    assert finding.describe() == "github-pat (in the file name)"


CLEAN = [
    "a picture: " + base64.b64encode(bytes(range(256)) * 4).decode(),  # binary, not text
    "sha256 " + "9f" * 32 + " and a long_identifier_name_without_meaning_at_all",
    "percent 100%25 done, escapes \\n and \\u00e9 in an ordinary note",
    base64.b64encode(b"just a sentence about the deploy, nothing secret in it").decode(),
]


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_encodings_are_not_findings(text: str) -> None:
    assert gate_findings(default_scanner(), "notes.md", text) == []


def test_decoding_is_bounded_in_size_and_time() -> None:
    # nested base64 many layers deep, and far more candidate blocks than the gate looks at
    nested = f"token={GITHUB}".encode()
    for _ in range(8):
        nested = base64.b64encode(nested)
    many = " ".join(base64.b64encode(f"note {n} is fine".encode()).decode() for n in range(3_000))
    huge = base64.b64encode(b"x = 1\n" * (MAX_DECODED_BYTES // 3)).decode()
    started = time.perf_counter()
    assert gate_findings(default_scanner(), "a.md", nested.decode()) == []  # beyond the depth
    assert gate_findings(default_scanner(), "a.md", many) == []
    assert gate_findings(default_scanner(), "a.md", huge) == []
    assert time.perf_counter() - started < 20


# -- through the real server -------------------------------------------------------------------


@pytest.mark.parametrize("form", sorted(ENCODED))
def test_an_encoded_secret_never_reaches_the_server(server, memory_dir, form: str) -> None:
    write(memory_dir, "deploy.md", "# Deploy\n\n" + ENCODED[form])
    write(memory_dir, "clean.md", "# Clean\nNothing secret here.\n")
    result = make_client(memory_dir, server.url).push()
    assert result.pushed == ["clean.md"]
    (blocked,) = result.blocked
    assert blocked.key == "deploy.md" and all("(in the " in rule for rule in blocked.rules)
    assert set(server.entries()) == {"clean.md"}
    # a client without the gate is stopped by the server's own scan, which says where
    raw = server.raw("PUT", {"entries": {"deploy.md": ENCODED[form]}})
    assert raw.status_code == 422
    (finding,) = raw.json()["error"]["details"]["findings"]
    assert finding["key"] == "deploy.md" and finding["found_in"][0] != "text"
    assert set(server.entries()) == {"clean.md"}


def test_a_secret_in_a_file_name_never_reaches_the_server(server, memory_dir) -> None:
    write(memory_dir, f"{GITHUB}.md", "# Bot\nclean\n")
    result = make_client(memory_dir, server.url).push()
    (blocked,) = result.blocked
    assert blocked.rules == ["github-pat (in the file name)"] and blocked.lines == []
    assert server.entries() == {}
    raw = server.raw("PUT", {"entries": {f"{AWS}.md": "clean\n"}})
    assert raw.status_code == 422
    assert raw.json()["error"]["details"]["findings"][0]["found_in"] == ["file name"]
    assert server.entries() == {}
