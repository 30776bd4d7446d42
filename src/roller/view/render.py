"""Rendering the call tree (`roller.view.tree`) for a terminal with rich."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

_STATUS_STYLE = {
    "completed": "green",
    "complete": "green",
    "exportable": "green",
    "failed": "red",
    "interrupted": "yellow",
    "partial": "yellow",
    "blocked": "yellow",
    "unattributed": "magenta",
    "ambiguous": "magenta",
}


def _styled(value: str | None) -> str:
    if value is None:
        return "-"
    style = _STATUS_STYLE.get(value)
    return f"[{style}]{escape(value)}[/]" if style else escape(value)


def _tokens(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def call_label(c: dict[str, Any]) -> str:
    parts = [f"[bold]#{c['sequence']}[/]"]
    if c["kind"] != "generation":
        parts.append(f"[dim]{escape(c['kind'])}[/]")
    parts.append(escape(c["protocol"] or "?"))
    parts.append(escape(c["model"] or "?"))
    parts.append(f"{_tokens(c['input_tokens'])}→{_tokens(c['output_tokens'])} tok")
    if c["tool_calls"]:
        tools = ", ".join(f"{t['name']}({t['id']})" for t in c["tool_calls"])
        parts.append(f"[cyan]{escape(tools)}[/]")
    parts.append(_styled(c["execution_status"]))
    if c["export_status"] == "exportable":
        parts.append(_styled("exportable"))
    else:
        parts.append(f"[yellow]blocked[/]({escape(', '.join(c['export_blocked_by']))})")
    return "  ".join(parts)


_LINK_LABEL = {
    "launch_acknowledged": "launch ack",
    "launch_ack_in_context": "ack in",
    "result_delivered": "result delivered",
    "result_in_context": "result in",
    "child_completed": "completed",
    "child_failed": "failed",
}


def _links(links: list[dict[str, Any]]) -> str:
    parts = []
    for link in links:
        label = _LINK_LABEL.get(link["type"], link["type"])
        where = f" #{link['target_sequence']}" if link["target_sequence"] is not None else ""
        text = f"{label}{where}"
        parts.append(text if link["status"] == "established" else f"[magenta]{text}?[/]")
    return ("  [dim]" + ", ".join(parts) + "[/]") if parts else ""


def participant_label(p: dict[str, Any]) -> str:
    name = f" ({escape(p['name'])})" if p["name"] else ""
    state = _styled(p["state"])
    return f"[bold]{p['role']}[/] {escape(p['participant_id'])}{name}  {state}{_links(p['links'])}"


def _add_participant(tree: Tree, p: dict[str, Any]) -> None:
    branch = tree.add(participant_label(p))
    for c in p["calls"]:
        leaf = branch.add(call_label(c))
        for child in c["children"]:
            _add_participant(leaf, child)
    if p["unknown"]:
        unknown = branch.add("[magenta]unknown[/] (children not linked to a spawning call)")
        for child in p["unknown"]:
            _add_participant(unknown, child)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def summary_line(s: dict[str, Any]) -> str:
    version = f" {s['harness_version']}" if s["harness_version"] else ""
    line = (
        f"{s['harness']}{version} · sample {s['sample_id']} · attempt {s['attempt']} · "
        f"{_count(s['calls'], 'call')} · {_count(s['participants'], 'participant')} · "
        f"{_count(s['relations'], 'relation')} · "
        f"{s['exportable_calls']} exportable · {_tokens(s['input_tokens'])}→"
        f"{_tokens(s['output_tokens'])} tokens · execution {_styled(s['execution_status'])} · "
        f"capture {_styled(s['capture_status'])}"
    )
    if s["lifecycle"]:
        line += f" · lifecycle {escape(s['lifecycle'])}"
    if s["unattributed_calls"] or s["ambiguous_calls"]:
        line += (
            f" · [magenta]{s['unattributed_calls']} unattributed, "
            f"{s['ambiguous_calls']} ambiguous[/]"
        )
    if s["capture_errors"]:
        line += f" · errors: {escape(', '.join(sorted(set(s['capture_errors']))))}"
    return line


def render_tree(data: dict[str, Any], console: Console) -> None:
    tree = Tree(f"[bold]capture[/] {escape(data['attempt_dir'])}")
    for root in data["roots"]:
        _add_participant(tree, root)
    if data["unattributed"]:
        branch = tree.add("[magenta]unattributed[/]")
        for c in data["unattributed"]:
            branch.add(call_label(c))
    console.print(tree)
    console.print(summary_line(data["summary"]))
