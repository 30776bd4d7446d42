"""Request identity as the probed harnesses put it on the wire (/work/shared/harnesses/*.md).

Header sets and body fragments are copied from the probe notes (2026-11-29); ids the notes
abbreviate are completed into values of the same shape. Authentication headers are left
out: identity never reads them.
"""

from __future__ import annotations

import json
from typing import Any

# --- Claude Code 2.1.332: S = session uuid, A/B/C = agent ids (`a` + 16 hex) -------------
CC_SESSION = "ebd4605d-7099-4c54-bd01-747f7a720e1b"
CC_A = "a1e37403a36fc420c"
CC_B = "a48fe9b1db3fc6abc"
CC_C = "a79dad809a7048810"
CC_COMMON = {
    "user-agent": "claude-cli/2.1.332 (external, sdk-cli)",
    "x-app": "cli",
    "anthropic-version": "2023-06-01",
    "anthropic-dangerous-direct-browser-access": "true",
    "x-stainless-package-version": "0.128.0",
}
CC_PARENT = {**CC_COMMON, "X-Claude-Code-Session-Id": CC_SESSION}
CC_CHILD_A = {**CC_PARENT, "X-Claude-Code-Agent-Id": CC_A}
CC_CHILD_B = {**CC_PARENT, "X-Claude-Code-Agent-Id": CC_B, "X-Claude-Code-Parent-Agent-Id": CC_A}
CC_CHILD_C = {**CC_PARENT, "X-Claude-Code-Agent-Id": CC_C, "X-Claude-Code-Parent-Agent-Id": CC_B}
CC_DEVICE_ID = "3f1c0aa2d5e8b7c6a9f0e1d2c3b4a5968778695a4b3c2d1e0f1a2b3c4d5e6f70"


def cc_body(session: str = CC_SESSION, device: str = CC_DEVICE_ID) -> dict[str, Any]:
    user_id = json.dumps({"device_id": device, "account_uuid": "", "session_id": session})
    return {
        "model": "fake-model",
        "max_tokens": 32000,
        "stream": True,
        "metadata": {"user_id": user_id},
        "messages": [{"role": "user", "content": "Use a subagent to say hi"}],
    }


# --- OpenCode 1.18.33: P = parent session, C = child session ------------------------------
OC_P = "ses_f599e0060ffe4gLnO1q69ZcNFw"
OC_C = "ses_f599dfca1ffe933RP1BLey87Mr"
OC_COMMON = {
    "user-agent": "opencode/1.18.33 ai-sdk/provider-utils/4.0.23 runtime/bun/1.3.14",
    "accept": "*/*",
}
OC_PARENT = {**OC_COMMON, "x-session-id": OC_P, "x-session-affinity": OC_P}
OC_CHILD = {
    **OC_COMMON,
    "x-session-id": OC_C,
    "x-session-affinity": OC_C,
    "x-parent-session-id": OC_P,
}

# --- Codex 0.171.0 (run B-v1-wait): root thread ...0941, child thread ...0698 ------------
CX_ROOT = "019a8c3e-5b21-7d40-9c11-3f2a6e8d0941"
CX_CHILD = "019a8c3e-6f02-7a13-8e55-1b4c9d2a0698"
CX_GRANDCHILD = "019a8c3e-7a44-7b21-a0de-52c1f3e9b7d2"
CX_INSTALLATION = "6b0e1f7c-2d3a-4c5b-9e8f-7a6b5c4d3e2f"
CX_COMMON = {
    "originator": "codex_exec",
    "user-agent": "codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)",
    "x-codex-beta-features": "remote_compaction_v2",
}


def cx_metadata(thread: str, parent: str | None = None, session: str = CX_ROOT) -> str:
    data: dict[str, Any] = {
        "installation_id": CX_INSTALLATION,
        "session_id": session,
        "thread_id": thread,
        "agent_name": "<home>",
        "turn_id": "019a8c3e-6f10-7c00-8a00-000000000001",
        "window_id": f"{thread}:0",
        "window_number": 0,
        "request_kind": "turn",
        "history_initialization": "new",
        "thread_source": "subagent" if parent else "user",
        "turn_trigger": "exec",
    }
    if parent is not None:
        data |= {"parent_thread_id": parent, "subagent_kind": "thread_spawn"}
    return json.dumps(data)


def cx_headers(thread: str, parent: str | None = None, session: str = CX_ROOT) -> dict[str, str]:
    headers = {
        **CX_COMMON,
        "session-id": session,
        "thread-id": thread,
        "x-client-request-id": thread,
        "x-codex-window-id": f"{thread}:0",
        "x-codex-turn-metadata": cx_metadata(thread, parent, session),
    }
    if parent is not None:
        headers |= {"x-codex-parent-thread-id": parent, "x-openai-subagent": "collab_spawn"}
    return headers


def cx_body(session: str = CX_ROOT) -> dict[str, Any]:
    return {
        "model": "fake-model",
        "stream": True,
        "input": [],
        "store": False,
        "prompt_cache_key": session,
    }


CX_PARENT = cx_headers(CX_ROOT)
CX_CHILD_HEADERS = cx_headers(CX_CHILD, parent=CX_ROOT)

# --- DeepSeek Harness 0.2.1rc2 ------------------------------------------------------------
DS_ROOT = "probe-root-001"
DS_CHILD = "3663bd01-8f2e-4c7a-9b1d-5e6f7a8b9c0d"
DS_USER = "0c9e7f4a-1b2d-4e3f-8a5b-6c7d8e9f0a1b"


def ds_headers(session: str) -> dict[str, str]:
    return {
        "user-agent": "deepseek-harness/0.2.1-rc.2 (+https://github.com/deepseek-ai/deepseek-harness)",
        "x-deepseek-harness-session-id": session,
        "x-deepseek-harness-user-id": DS_USER,
        "anthropic-version": "2023-06-01",
    }


def ds_body(session: str, parent: str | None = None, depth: int | None = None) -> dict[str, Any]:
    log: dict[str, Any] = {"id": session, "createdAt": 1796000000000, "cwd": "/work/ws"}
    if parent is not None:
        log |= {"parentSession": parent, "origin": "subagent", "delegationDepth": depth or 1}
    return {
        "model": "deepseek-v4-flash",
        "stream": True,
        "messages": [],
        "dsh_session_log": {"session": log, "afterSeq": -1, "throughSeq": 9, "events": []},
    }


# --- Pi 0.73.1 (openai-responses) ----------------------------------------------------------
PI_SESSION = "01a22875-9b81-7c3e-a1f2-9d8e7c6b5a40"
PI_HEADERS = {
    "user-agent": "OpenAI/JS 6.26.0",
    "session_id": PI_SESSION,
    "x-client-request-id": PI_SESSION,
    "x-stainless-lang": "js",
}
PI_BODY = {"model": "fake-model", "input": [], "prompt_cache_key": PI_SESSION, "store": False}

# --- Gemini CLI 0.61.0: no identity; an install id with usage statistics on ----------------
GEMINI_HEADERS = {
    "user-agent": "GeminiCLI-tui/0.61.0/gemini-3.8-flash (linux; x64; terminal)",
    "x-goog-api-client": "google-genai-sdk/1.30.0 gl-node/v20.20.2",
    "x-gemini-api-privileged-user-id": "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
}
GEMINI_BODY: dict[str, Any] = {
    "contents": [],
    "systemInstruction": {},
    "tools": [],
    "generationConfig": {},
}

# --- Hermes 0.19.0 (Responses): prompt_cache_key is a content hash, shared across runs ------
HERMES_HEADERS = {"user-agent": "OpenAI/Python 2.24.0"}
HERMES_BODY = {
    "model": "fake-model",
    "input": [],
    "prompt_cache_key": "pck_022f9d1c7b3e4a5f6e7d8c9b",
}

# --- OpenClaw 2026.9.6: a W3C traceparent per top-level command, nothing else --------------
OPENCLAW_HEADERS = {
    "user-agent": "OpenAI/JS 7.15.0",
    "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
}

# --- Qwen Code 0.24.4: nothing in chat mode; Responses: prompt_cache_key qwen-code:<id> ----
QWEN_SESSION = "5d0c7e2a-9f14-4b8e-a3c6-7e1f2d3b4a59"
QWEN_HEADERS = {"user-agent": "QwenCode/0.24.4 (linux; x64)"}
QWEN_RESPONSES_BODY = {
    "model": "fake-model",
    "input": [],
    "prompt_cache_key": f"qwen-code:{QWEN_SESSION}",
    "store": False,
}


def set_header(headers: dict[str, str], name: str, value: str) -> dict[str, str]:
    """A copy of `headers` with `name` replaced case-insensitively (never a second copy)."""
    kept = {k: v for k, v in headers.items() if k.lower() != name.lower()}
    return {**kept, name: value}
