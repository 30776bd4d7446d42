"""A `LaunchRequest` for an adapter's launch-plan tests: scratch dirs under a tmp path,
the proxy's base URLs on a closed loopback port, and the credentials a test names."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from roller.harnesses.base import LaunchRequest, ScratchDirs

BASE_URLS = {"openai": "http://127.0.0.1:9/v1", "anthropic": "http://127.0.0.1:9"}


def launch_request(
    tmp_path: Path, prompt: str, credentials: Mapping[str, str], **options: str
) -> LaunchRequest:
    return LaunchRequest(
        prompt=prompt,
        command=(),
        dirs=ScratchDirs(home=tmp_path / "home", tmp=tmp_path / "tmp", work=tmp_path / "work"),
        base_urls=BASE_URLS,
        credentials=credentials,
        model=None,
        capture_calls=True,
        timeout_s=60,
        install_dir=tmp_path / "install",
        options=options,
    )
