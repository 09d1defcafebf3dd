"""Write memframe/data/demo-work-session.jsonl: the demo's second session, memframe's own.

A developer fixes a rounding bug with the agent: a failing test and its fix, the agent's stated
reason, a correction with its why, durable statements (tools, a role, where things are),
traps that must not become memories (a one-off request, "never mind", another plugin's Stop
hook feedback) and private data (a phone number; a token the demo fills in at run time as
``{demo_token}``). Records follow Claude Code 2.x's layout: one record per content block,
each tool result parented to its call (``sourceToolAssistantUUID``).

Run: python scripts/make_demo_session.py
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "memframe" / "data" / "demo-work-session.jsonl"
SESSION = "7d1f3a52-5b8e-4c1d-9a26-3e0c4b9f1d07"
CWD = "/home/dev/invoices"
NAMESPACE = uuid.UUID("6b3f0d1e-8c2a-4f5b-9d7e-1a2b3c4d5e6f")


class Writer:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.count = 0
        self.second = 0

    def _base(self, kind: str, parent: str | None) -> dict[str, Any]:
        self.count += 1
        self.second += 7
        record_id = str(uuid.uuid5(NAMESPACE, f"r{self.count}"))
        minutes, seconds = divmod(self.second, 60)
        return {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": SESSION,
            "version": "2.1.14",
            "gitBranch": "main",
            "type": kind,
            "uuid": record_id,
            "timestamp": f"2026-11-30T09:{minutes:02d}:{seconds:02d}.000Z",
        }

    def user(self, content: Any, **extra: Any) -> None:
        record = self._base("user", self.parent)
        record["message"] = {"role": "user", "content": content}
        record.update(extra)
        self.records.append(record)
        self.parent = record["uuid"]

    def assistant(self, blocks: list[dict[str, Any]], stop: str) -> list[str]:
        """One response, one record per block (as Claude Code 2.x writes it)."""
        message_id = f"msg_demo{self.count:04d}"
        ids = []
        for block in blocks:
            record = self._base("assistant", self.parent)
            record["message"] = {
                "model": "claude-sonnet-4-5",
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": stop,
                "usage": {"input_tokens": 2400 + 40 * self.count, "output_tokens": 60},
            }
            record["requestId"] = f"req_demo{self.count:04d}"
            self.records.append(record)
            self.parent = record["uuid"]
            ids.append(record["uuid"])
        return ids

    def call(
        self,
        name: str,
        tool_input: dict[str, Any],
        output: str,
        error: bool = False,
        text: str | None = None,
    ) -> None:
        self.calls([(name, tool_input, output, error)], text)

    def calls(
        self, calls: list[tuple[str, dict[str, Any], str, bool]], text: str | None = None
    ) -> None:
        """One response: an optional text block, then the tool calls; then their results."""
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for name, tool_input, _, _ in calls:
            self.count += 1
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_demo{self.count:04d}",
                    "name": name,
                    "input": tool_input,
                }
            )
        owners = self.assistant(blocks, "tool_use")
        if text:
            owners, blocks = owners[1:], blocks[1:]
        for owner, block, (_, _, output, error) in zip(owners, blocks, calls, strict=True):
            record = self._base("user", owner)
            result = {"tool_use_id": block["id"], "type": "tool_result", "content": output}
            if error:
                result["is_error"] = True
            record["message"] = {"role": "user", "content": [result]}
            record["sourceToolAssistantUUID"] = owner
            record["toolUseResult"] = {"stdout": output, "stderr": "", "interrupted": False}
            self.records.append(record)
            self.parent = record["uuid"]

    def say(self, text: str) -> None:
        self.assistant([{"type": "text", "text": text}], "end_turn")


def build() -> list[dict[str, Any]]:
    w = Writer()
    w.user(
        "The invoice totals are off by a cent for some customers. Find out why and fix it. "
        "We use pytest, not unittest, in this repository."
    )
    w.calls(
        [
            (
                "Read",
                {"file_path": f"{CWD}/invoices/totals.py"},
                "     1\tdef total(lines):\n     2\t    return sum(round(l.amount * l.qty, 2) "
                "for l in lines)\n",
                False,
            ),
            (
                "Bash",
                {"command": "pytest -q tests/test_totals.py", "description": "Run the tests"},
                "F...........\nFAILED tests/test_totals.py::test_three_lines - AssertionError: "
                "assert Decimal('30.01') == Decimal('30.00')\n1 failed, 11 passed in 0.41s",
                True,
            ),
        ]
    )
    w.call(
        "Edit",
        {
            "file_path": f"{CWD}/invoices/totals.py",
            "old_string": "    return sum(round(l.amount * l.qty, 2) for l in lines)",
            "new_string": "    exact = sum(l.amount * l.qty for l in lines)\n"
            "    return exact.quantize(CENT, rounding=ROUND_HALF_UP)",
        },
        "The file invoices/totals.py has been updated.",
        text="The issue is that total() rounds every line before summing, because it calls "
        "round() per line. I'll sum exact Decimal amounts and quantize once at the end instead.",
    )
    w.call(
        "Bash", {"command": "pytest -q tests/test_totals.py"}, "............\n12 passed in 0.38s"
    )
    w.say("Fixed: total() sums exact Decimal amounts and quantizes once; 12 passed.")
    w.user(
        "Stop hook feedback:\n[${CLAUDE_PLUGIN_ROOT}/hooks/stop.sh]: Always run make lint before "
        "you stop.",
        isMeta=True,
    )
    w.call("Bash", {"command": "make lint"}, "ruff check invoices tests\nAll checks passed!")
    w.say("make lint passes.")
    w.user(
        "No, don't use round() anywhere in money code. Always quantize with Decimal, because "
        "float rounding already cost us a refund run last year."
    )
    w.call(
        "Grep",
        {"pattern": "round\\(", "path": f"{CWD}/invoices"},
        "invoices/tax.py:14:    return round(amount * rate, 2)",
    )
    w.call(
        "Edit",
        {
            "file_path": f"{CWD}/invoices/tax.py",
            "old_string": "    return round(amount * rate, 2)",
            "new_string": "    return (amount * rate).quantize(CENT, rounding=ROUND_HALF_UP)",
        },
        "The file invoices/tax.py has been updated.",
    )
    w.call("Bash", {"command": "pytest -q"}, "........................\n24 passed in 0.77s")
    w.say("Replaced round() in invoices/tax.py with Decimal.quantize; 24 passed.")
    w.user(
        "I'm the maintainer of the billing service. The on-call dashboard is at "
        "https://grafana.example.com/d/billing and billing incidents are tracked in the BILL "
        "Jira project."
    )
    w.say("Noted.")
    w.user("Rename the helper to cents() in tax.py.")
    w.say("Which helper do you mean? tax.py has only rate_for() and tax().")
    w.user("Never mind, leave it.")
    w.say("Leaving tax.py as it is.")
    w.user(
        "Commit it. If CI breaks tonight, call me on +44 20 7946 0123. The deploy token is "
        "{demo_token} if you need it."
    )
    w.calls(
        [
            (
                "Bash",
                {
                    "command": "git add -A && git commit -m 'Round invoice totals once, with "
                    "Decimal'"
                },
                "[main 3f9c2ab] Round invoice totals once, with Decimal\n 2 files changed, 9 "
                "insertions(+), 4 deletions(-)",
                False,
            ),
        ]
    )
    w.call(
        "Bash",
        {"command": "git push"},
        "To github.com:acme/invoices.git\n   1a2b3c4..3f9c2ab  main -> main",
    )
    w.call(
        "Bash",
        {"command": "git status"},
        "On branch main\nYour branch is up to date with 'origin/main'.\n\nnothing to commit, "
        "working tree clean",
    )
    w.say(
        "Committed 3f9c2ab and pushed to main; the working tree is clean. I did not use or "
        "keep the token."
    )
    w.user("Please keep the CHANGELOG in reverse chronological order.")
    w.call(
        "Edit",
        {
            "file_path": f"{CWD}/CHANGELOG.md",
            "old_string": "# Changelog\n",
            "new_string": "# Changelog\n\n## 2026-11-30\n- Invoice totals round once, with "
            "Decimal.\n",
        },
        "The file CHANGELOG.md has been updated.",
    )
    w.say("Added the entry at the top of CHANGELOG.md.")
    return w.records


def main() -> None:
    records = build()
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    print(f"wrote {OUT} ({len(records)} records)")


if __name__ == "__main__":
    main()
