"""The throwaway harness's agent: a root call, then a chain of children, over plain HTTP.

Standard library only (it runs in the scratch environment roller gives a harness). The
prompt arrives on stdin, the greeting in `THROWAWAY_GREETING`, the chain's depth as
`--depth N`; every call names its caller with the throwaway identity headers: the root
its session only, each child its agent id and (below depth one) its parent's. The root's
first message is a `<throwaway-note>` wrapper, which the harness declares injected.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request

SESSION = "throwaway-session-1"


def call(headers: dict[str, str], *texts: str) -> None:
    messages = [{"role": "user", "content": text} for text in texts]
    body = {"model": "mock-model", "messages": messages}
    request = urllib.request.Request(
        os.environ["THROWAWAY_BASE_URL"] + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={
            "content-type": "application/json",
            "authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}",
            "x-throwaway-session": SESSION,
            **headers,
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        json.loads(response.read())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--depth", type=int, required=True)
    depth = parser.parse_args().depth
    prompt = sys.stdin.read()
    greeting = os.environ["THROWAWAY_GREETING"]
    call({}, f"<throwaway-note>{greeting}</throwaway-note>", prompt)
    parent = None
    for level in range(1, depth + 1):
        agent = f"child{level}"
        headers = {"x-throwaway-agent": agent}
        if parent is not None:
            headers["x-throwaway-parent"] = parent
        call(headers, f"{greeting} from {agent}")
        parent = agent


if __name__ == "__main__":
    main()
