"""Shared fixtures for the agents' hook tests: the same environment as the Claude Code hook
tests (tests/integration/test_hook.py), with ``memframe hook --agent NAME``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_hook import HookEnv
from tests.native.vectors import positives

DATA = Path(__file__).parents[1] / "data" / "transcripts"
SIMONW_ROLLOUT = (
    DATA
    / "recent"
    / "simonw__claude-code-transcripts__codex-rollout-2025-12-28T12-18-30-019b64e5.jsonl"
)
DAAAIN_ROLLOUT = DATA / "daaain__claude-code-log__codex-rollout-2026-01-02T03-04-05-11111111.jsonl"


class AgentEnv(HookEnv):
    def agent_hook(
        self, agent: str, payload: dict[str, Any], extra_env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "memframe", "hook", "--agent", agent],
            input=json.dumps(payload).encode(),
            capture_output=True,
            cwd=self.project,
            env={**self.env(), **(extra_env or {})},
            timeout=60,
            check=False,
        )

    def install(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memframe", "install-hooks", *args],
            capture_output=True,
            text=True,
            cwd=self.project,
            env=self.env(),
            timeout=60,
            check=False,
        )


@pytest.fixture
def agent_env(tmp_path: Path) -> AgentEnv:
    return AgentEnv(tmp_path)


def aws_secret() -> str:
    return next(v.text for v in positives() if v.rule_id == "aws-access-token")
