"""`--format parquet` for calls and trajectories, loaded back with Hugging Face
`datasets` (offline), as a trainer would."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from roller.capture.layout import find_attempts
from roller.capture.reader import read_attempt
from roller.export.omissions import Omissions
from roller.export.openai_messages import message_records
from tests.export.real_captures import RealCaptures
from tests.support.captures import roller


@pytest.fixture(scope="module")
def run(real_captures: RealCaptures, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run directory holding a Claude Code, an OpenCode, a Codex and a Gemini CLI
    capture (copies of the shared published ones)."""
    merged = tmp_path_factory.mktemp("runs") / "merged"
    for h, n in [
        ("claude-code", "parallel"),
        ("opencode", "parallel"),
        ("codex", "v2-fork"),
        ("gemini-cli", "parallel"),
    ]:
        for sample in (real_captures.run(h, n) / "samples").iterdir():
            shutil.copytree(sample, merged / "samples" / f"{h}-{n}")
    return merged


def _load(path: Path) -> list[dict[str, object]]:
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    import datasets

    loaded = datasets.load_dataset(
        "parquet", data_files=str(path), split="train", cache_dir=str(path.parent / "hf-cache")
    )
    return [dict(row) for row in loaded]


def test_calls_parquet_loads_with_datasets(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "calls.parquet"
    result = roller("export", "calls", str(run), "--format", "parquet", "--out", str(out))
    assert result.returncode == 0, result.stderr
    # The same calls as openai-messages records (in process: the CLI path is the one above).
    records = [
        json.loads(json.dumps(r))
        for attempt in find_attempts(run)
        for r in message_records(read_attempt(attempt), False, Omissions("call"))
    ]
    rows = _load(out)
    assert len(rows) == len(records) > 10
    assert result.stderr.strip().splitlines()[-1].startswith(f"exported {len(rows)} call(s)")
    assert {r["protocol"] for r in rows} == {
        "anthropic-messages",
        "openai-chat-completions",
        "openai-responses",
        "gemini",
    }
    by_id = {r["call_id"]: r for r in records}
    for row in rows:
        record = by_id[row["call_id"]]
        assert row["participant_role"] == record["participant"]["role"]
        assert [m["role"] for m in row["messages"]] == [m["role"] for m in record["messages"]]
        for m, original in zip(row["messages"], record["messages"], strict=True):
            content = original.get("content")
            if isinstance(content, str):
                assert m["content"] == content and m["content_parts"] is None
            elif content is not None:
                assert json.loads(m["content_parts"]) == content
            ids = [c["id"] for c in original.get("tool_calls") or []]
            assert [c["id"] for c in m["tool_calls"] or []] == ids
        assert json.loads(row["tools_json"]) == record["tools"]
        assert row["extends_previous"] == record["continuity"]["extends_previous"]
    children = [r for r in rows if r["participant_role"] == "child"]
    assert children and all(
        r["break_reason"] == "first_call" for r in children if r["previous_call_id"] is None
    )


def test_trajectories_parquet_loads_with_datasets(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "trajectories.parquet"
    result = roller("export", "trajectory", str(run), "--format", "parquet", "--out", str(out))
    assert result.returncode == 0, result.stderr
    rows = _load(out)
    assert {r["harness"] for r in rows} == {"claude-code", "opencode", "codex", "gemini-cli"}
    for row in rows:
        items = json.loads(row["items_json"])
        assert items and row["messages"]
        assert row["messages"][-1]["role"] == "assistant"  # a segment ends with its last output
        assert set(row["call_ids"]) == {i["call_id"] for i in items}
    assert result.stderr.strip().splitlines()[-1] == "exported 4 trajectory(s)"


def test_parquet_needs_an_output_file(run: Path) -> None:
    result = roller("export", "calls", str(run), "--format", "parquet")
    assert result.returncode == 2 and "--format parquet needs --out" in result.stderr


def test_the_tools_of_a_conversation_are_written_once_each_the_same(
    real_captures: RealCaptures, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ToolsJson` writes a tool list once for the calls that resend its very objects
    (openai-messages' records, `ItemViews.tools`), the same text as each call's own; an
    equal list of other objects gets its own writing."""
    from roller.export import parquet

    written: list[object] = []
    real = parquet._json

    def counted(value: object) -> str | None:
        written.append(value)
        return real(value)

    capture = real_captures["claude-code", "parallel"]
    tools = [r["tools"] for r in message_records(capture, True, Omissions("call"))]
    monkeypatch.setattr(parquet, "_json", counted)
    texts = parquet.ToolsJson()
    got = [texts.of(t) for t in tools]
    assert got == [real(t) for t in tools]
    assert len(tools) > 3 and 0 < len(written) < len(tools)  # once per conversation
    # a list equal to a kept one but of other objects (1 and 1.0 are equal, not the same)
    other = [dict(t) for t in tools[0]]
    written.clear()
    assert texts.of(other) == real(other) and written == [other]
    assert texts.of([{"n": 1.0}]) == '[{"n": 1.0}]' and texts.of([{"n": 1}]) == '[{"n": 1}]'
