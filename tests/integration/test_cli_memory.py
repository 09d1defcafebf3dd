"""``memframe memory …`` and ``memframe dream`` as a user runs them."""

from __future__ import annotations

import json
import os

from tests.integration.cli_runner import run_memframe


def memory(home, *args):
    return run_memframe("memory", *args, "--home", str(home))


def test_add_list_show_forget(tmp_path):
    home = tmp_path / "home"
    added = memory(
        home,
        "add",
        "--name",
        "Tabs in Go",
        "--description",
        "Go style",
        "Always use tabs in Go files.",
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("saved ") and added.stdout.strip().endswith("tabs-in-go.md")
    again = memory(home, "add", "--name", "Other", "always use TABS in go files.")
    assert again.returncode == 0 and "already remembered in tabs-in-go.md" in again.stdout
    team = memory(
        home,
        "add",
        "--name",
        "Dashboards",
        "--type",
        "reference",
        "--team",
        "Grafana lives at grafana.internal",
    )
    assert team.returncode == 0, team.stderr
    listed = json.loads(memory(home, "list", "--json").stdout)
    rows = {row["file"]: row for row in listed["memories"]}
    assert set(rows) == {"tabs-in-go.md", "team/dashboards.md"}
    assert rows["team/dashboards.md"]["scope"] == "team"
    assert rows["tabs-in-go.md"]["type"] == "feedback"
    shown = memory(home, "show", "Tabs in Go")
    assert "type: feedback" in shown.stdout and "Always use tabs" in shown.stdout
    gone = memory(home, "forget", "tabs-in-go.md")
    assert gone.returncode == 0 and "forgot tabs-in-go.md" in gone.stdout
    (path,) = (home / "projects").rglob("MEMORY.md")  # the index lost the line too
    assert "tabs-in-go.md" not in path.read_text()
    assert "team/dashboards.md" in path.read_text()


def test_bad_input_is_a_clear_error(tmp_path):
    home = tmp_path / "home"
    bad_type = memory(home, "add", "--name", "x", "--type", "bogus", "text")
    assert bad_type.returncode == 2 and "memory type must be one of" in bad_type.stderr
    private = memory(home, "add", "--name", "me", "--type", "user", "--team", "I am Ana")
    assert private.returncode == 2 and "always private" in private.stderr
    key = "AKIAQ7VJ2ZWXK5MRT3LB"
    secret = memory(home, "add", "--name", "AWS", "--type", "reference", "--team", f"key {key}")
    assert secret.returncode == 2 and "contains a secret (aws-access-token)" in secret.stderr
    assert not list(home.rglob("aws.md"))  # nothing written
    private_secret = memory(home, "add", "--name", "AWS", "--type", "reference", f"key {key}")
    assert private_secret.returncode == 0  # a private memory stays on this machine
    missing = memory(home, "show", "nope")
    assert missing.returncode == 2 and "no memory 'nope'" in missing.stderr
    assert "Traceback" not in missing.stderr + bad_type.stderr + private.stderr


def test_doctor_reports_problems_and_exits_1(tmp_path):
    home = tmp_path / "home"
    memory(home, "add", "--name", "One", "first memory")
    healthy = memory(home, "doctor")
    assert healthy.returncode == 0 and "healthy" in healthy.stdout
    (index,) = home.rglob("MEMORY.md")
    root = index.parent
    (root / "orphan.md").write_text("---\nname: Orphan\ntype: project\n---\nnot indexed\n")
    os.chmod(root / "orphan.md", 0o644)
    index.write_text(index.read_text() + "- [Gone](gone.md) — nothing here\n")
    sick = memory(home, "doctor", "--json")
    assert sick.returncode == 1
    report = json.loads(sick.stdout)
    assert report["orphans"] == ["orphan.md"]
    assert report["dangling"] == ["gone.md"]
    assert any("orphan.md" in item for item in report["bad_permissions"])
    assert report["healthy"] is False


def test_doctor_finds_private_data_and_fix_redacts_it(tmp_path):
    home = tmp_path / "home"
    memory(home, "add", "--name", "One", "first memory")
    (index,) = home.rglob("MEMORY.md")
    root = index.parent
    token = "ghp_" + "N7x2QpL9vR4sT1uW8yZ3aB6cD0eF5gH2jK4m"  # assembled: no scanner flags this file
    # written by hand (or by an older memframe): nothing redacted it on the way in
    (root / "contact.md").write_text(
        "---\nname: Contact\ndescription: Sam, +44 20 7946 0958\ntype: reference\n---\n"
        f"Sam lives at 221B Baker Street; token {token}\n"
    )
    os.chmod(root / "contact.md", 0o600)
    index.write_text(index.read_text() + "- [Contact](contact.md) — Sam, +44 20 7946 0958\n")
    before = (root / "contact.md").read_text()
    sick = memory(home, "doctor", "--json")
    assert sick.returncode == 1, sick.stdout
    report = json.loads(sick.stdout)
    assert report["private_data"] == [
        "MEMORY.md: phone",
        "contact.md: github-pat, address, phone",
    ]
    assert (root / "contact.md").read_text() == before  # reporting changes nothing
    fixed = memory(home, "doctor", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "redacted: 2" in fixed.stdout
    for path in (root / "contact.md", index):
        text = path.read_text()
        assert token not in text and "7946" not in text and "Baker Street" not in text
    assert "[REDACTED]" in (root / "contact.md").read_text()
    assert "contact.md" in index.read_text()
    again = memory(home, "doctor", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["private_data"] == []


def test_dream_now_merges_duplicates_and_the_gate_explains_itself(tmp_path):
    home = tmp_path / "home"
    memory(home, "add", "--name", "A", "Run the linters before every commit, always.")
    memory(home, "add", "--name", "B", "Run the linters before every commit, always!!")
    gated = run_memframe("dream", "--home", str(home))
    assert gated.returncode == 0
    assert "not consolidated" in gated.stdout and "session(s) since" in gated.stdout
    done = run_memframe("dream", "--now", "--home", str(home), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ran"] is True and len(result["deleted"]) == 1
    listed = json.loads(memory(home, "list", "--json").stdout)
    assert len(listed["memories"]) == 1
