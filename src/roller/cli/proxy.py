"""`roller proxy`: run the recording reverse proxy in the foreground.

Rules this command keeps:
- It listens on loopback only unless `--allow-remote` is given: the proxy relays whatever
  reaches it to the upstream with the caller's own credentials, so an open listener would
  be an open relay that also records other people's traffic.
- It prints where it listens and where the tape is (stdout, flushed: scripts and tests
  read the first line to learn a port chosen with `:0`).
- SIGINT/SIGTERM stop it cleanly: no new connections, exchanges in flight get a grace
  period, the rest are recorded as `proxy_shutdown`, the tape is fsynced and closed.
- Tape write failures are reported at exit and make the exit code 1.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from roller.cli.serving import announce_and_wait, parse_listen
from roller.errors import UsageError
from roller.proxy import ProxyConfig, ProxyServer, Redactor, Upstreams
from roller.proxy.server import DEFAULT_MAX_REQUEST_BODY, is_loopback


@click.command("proxy")
@click.option(
    "--listen",
    default="127.0.0.1:0",
    show_default=True,
    metavar="HOST:PORT",
    help="Address to listen on; port 0 picks a free port (printed at start).",
)
@click.option("--upstream", metavar="URL", help="Default upstream base URL for every request.")
@click.option(
    "--upstream-anthropic", metavar="URL", help="Upstream for Anthropic Messages (/v1/messages)."
)
@click.option(
    "--upstream-openai",
    metavar="URL",
    help="Upstream for OpenAI Chat Completions and Responses (/chat/completions, /responses).",
)
@click.option(
    "--upstream-gemini", metavar="URL", help="Upstream for Gemini (/v1beta/models/M:method)."
)
@click.option(
    "--tape",
    "tape_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of the append-only tape (created if missing; never overwritten).",
)
@click.option(
    "--ca-bundle",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="PEM file of CAs to verify HTTPS upstreams with (default: the system store).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback --listen address (the proxy is then an open relay).",
)
@click.option(
    "--redact-header",
    "redact_headers",
    multiple=True,
    metavar="NAME",
    help="Also keep this header off the tape (repeatable), e.g. a key in x-key.",
)
@click.option(
    "--redact-query",
    "redact_query",
    multiple=True,
    metavar="NAME",
    help="Also keep this query parameter off the tape (repeatable), e.g. k.",
)
@click.option(
    "--max-request-body-mib",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_MAX_REQUEST_BODY / (1 << 20),
    show_default=True,
    help="A request body over this is refused (413), never held whole.",
)
@click.option(
    "--connect-timeout", type=float, default=10.0, show_default=True, help="Seconds to connect."
)
@click.option(
    "--read-timeout",
    type=float,
    default=600.0,
    show_default=True,
    help="Seconds an upstream may stay silent mid-response (0: wait forever).",
)
@click.option(
    "--shutdown-grace",
    type=float,
    default=5.0,
    show_default=True,
    help="On SIGINT/SIGTERM, seconds exchanges in flight may take to finish.",
)
def proxy(
    *,
    listen: str,
    upstream: str | None,
    upstream_anthropic: str | None,
    upstream_openai: str | None,
    upstream_gemini: str | None,
    tape_dir: Path,
    ca_bundle: Path | None,
    allow_remote: bool,
    redact_headers: tuple[str, ...],
    redact_query: tuple[str, ...],
    max_request_body_mib: float,
    connect_timeout: float,
    read_timeout: float,
    shutdown_grace: float,
) -> int:
    """Run the recording reverse proxy in front of a model upstream.

    Every request is forwarded byte for byte and its response streamed back as it
    arrives; each exchange (request head and body, response head, body chunks with
    arrival times, outcome) is appended to the tape. Authentication headers, cookies and
    key-like query parameters never reach the tape (add more names with --redact-header
    and --redact-query; request bodies are recorded as sent); x-roller-* headers are
    removed before forwarding and recorded as identity evidence. The outgoing accept-encoding is
    narrowed to gzip/deflate so every recording stays decodable.

    The upstream is chosen by endpoint: a per-protocol upstream if given, else
    --upstream; a request with neither gets a 502 (recorded as no_upstream).
    """
    host, port = parse_listen(listen)
    if not is_loopback(host) and not allow_remote:
        raise UsageError(
            f"refusing to listen on {host}: only loopback addresses are allowed without "
            "--allow-remote (anyone reaching the port could use it as a relay)"
        )
    config = ProxyConfig(
        tape_dir=tape_dir,
        upstreams=Upstreams(
            default=upstream,
            anthropic=upstream_anthropic,
            openai=upstream_openai,
            gemini=upstream_gemini,
        ),
        host=host,
        port=port,
        ca_bundle=ca_bundle,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout or None,
        max_request_body=int(max_request_body_mib * (1 << 20)),
        redactor=Redactor(redact_headers, redact_query),
    )
    return asyncio.run(_serve(config, shutdown_grace))


async def _serve(config: ProxyConfig, grace: float) -> int:
    server = ProxyServer(config)
    url = await server.start()
    try:
        await announce_and_wait(
            [
                f"roller proxy: listening on {url}",
                f"roller proxy: tape {config.tape_dir.resolve()}",
            ]
        )
    finally:
        exchanges = server.exchanges
        await server.stop(grace=grace)
    click.echo(f"roller proxy: stopped after {exchanges} exchanges; tape closed")
    for error in server.tape_errors:
        click.echo(f"roller proxy: tape error: {error}", err=True)
    return 1 if server.tape_errors else 0
