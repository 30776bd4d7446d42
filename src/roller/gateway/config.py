"""The gateway's configuration file (`gateway.toml`): upstreams, clients, grants.

```toml
[gateway]                                   # optional; CLI flags win
listen = "127.0.0.1:8787"
db = "gateway.db"                           # a path (SQLite) or a URL (postgresql://...)
tape = "tape"
inactivity_minutes = 30                     # source-keyed sessions close after this
max_request_body_mib = 32                   # a bigger body is refused (413), never held
redact_headers = ["x-key"]                  # also kept off the tape (and not forwarded)
redact_query = ["k"]

[upstreams]                                 # per protocol family
anthropic = { url = "https://api.anthropic.com", key_env = "ANTHROPIC_API_KEY" }
openai = { url = "mock:spawn-one" }         # the built-in mock model, this scenario

[[clients]]                                 # one per roller-issued token
principal = "alice"
account = "acme"
harness = "claude-code"
token_sha256 = "<64 hex>"                   # the token itself is never stored
roller_headers = false                      # trust its x-roller-* identity (default:
                                            # only for harness = "generic")

[[grants]]                                  # off by default: widen the note scope
account = "acme"
scope = "account"
```

Rules this module keeps:
- A token is stored only as its SHA-256; `roller gateway token add` appends a client.
- A client declares its harness; the identity rules trust only that harness's native
  headers (`roller.identity`), so a name the harness registry does not know
  (`roller.harnesses.registry`) is a configuration error, never silently treated as a
  harness without native identity.
- Principal and account names are plain ids (`NAME_PATTERN`): they appear in URLs, logs
  and source keys, and must never need escaping.
- Relative paths are relative to the configuration file, not the working directory.
- `key_env` names an environment variable; the key itself never appears in the file and
  is read at start (`resolve_upstream_keys`), failing early when it is missing.
- A client's `x-roller-*` identity headers count only when it is configured to send
  them (`roller_headers`; the default is its harness's `WireProfile.roller_headers`,
  true for a harness that has no identity of its own): any other credential could
  otherwise forge a subagent and its parent.
- Model request bodies are refused past `max_request_body_mib` (default 32 MiB, the
  providers' own limit); the proxy never holds or tapes more of one.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from roller.errors import ConfigError, UsageError
from roller.harnesses import harness_names, registry
from roller.proxy.routing import check_upstream_url
from roller.wire.endpoints import FAMILIES, Family

NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9_.@\-]{1,100}")
_SHA256: Final = re.compile(r"[0-9a-f]{64}")
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")  # an HTTP token
MOCK_PREFIX: Final = "mock:"
DEFAULT_INACTIVITY_MINUTES: Final = 30.0
DEFAULT_MAX_REQUEST_BODY_MIB: Final = 32.0

GrantScope = Literal["account"]
GRANT_SCOPES: Final[tuple[GrantScope, ...]] = ("account",)


@dataclass(frozen=True, slots=True)
class Upstream:
    """Where one protocol family goes. `mock` is a scenario name or file for the built-in
    mock model (then `url` is None until the gateway started it)."""

    family: Family
    url: str | None
    key_env: str | None = None
    mock: str | None = None


@dataclass(frozen=True, slots=True)
class Client:
    """One roller-issued token: who it is and which harness it declared."""

    token_sha256: str
    principal: str
    account: str
    harness: str
    roller_headers: bool = False  # its x-roller-* identity headers are believed


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    path: Path | None
    upstreams: dict[Family, Upstream]
    clients: tuple[Client, ...]
    grants: dict[str, GrantScope] = field(default_factory=dict)
    listen: str = "127.0.0.1:8787"
    db: str | None = None
    tape: Path | None = None
    inactivity_seconds: float = DEFAULT_INACTIVITY_MINUTES * 60
    max_request_body: int = int(DEFAULT_MAX_REQUEST_BODY_MIB * 1024 * 1024)
    redact_headers: tuple[str, ...] = ()
    redact_query: tuple[str, ...] = ()


def check_name(what: str, value: object) -> str:
    if not isinstance(value, str) or NAME_PATTERN.fullmatch(value) is None:
        raise ConfigError(f"{what} must be 1-100 characters of letters, digits, '_', '.', '@', '-'")
    return value


def check_harness(value: object) -> str:
    """A declared harness name: one the registry knows (with or without an adapter)."""
    names = harness_names()
    if not isinstance(value, str) or value not in names:
        raise ConfigError(f"harness must be one of: {', '.join(names)}")
    return value


def load_config(path: Path) -> GatewayConfig:
    """Read and validate a gateway configuration file (ConfigError on any problem)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such configuration file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return parse_config(raw, base=path.parent, path=path)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def parse_config(raw: dict[str, Any], *, base: Path, path: Path | None = None) -> GatewayConfig:
    unknown = set(raw) - {"gateway", "upstreams", "clients", "grants"}
    if unknown:
        raise ConfigError(f"unknown top-level keys: {', '.join(sorted(unknown))}")
    settings = _table(raw.get("gateway", {}), "[gateway]")
    allowed = {
        "listen",
        "db",
        "tape",
        "inactivity_minutes",
        "max_request_body_mib",
        "redact_headers",
        "redact_query",
    }
    if set(settings) - allowed:
        extra = ", ".join(sorted(set(settings) - allowed))
        raise ConfigError(f"[gateway]: unknown keys: {extra}")
    minutes = _positive(settings, "inactivity_minutes", DEFAULT_INACTIVITY_MINUTES)
    body_mib = _positive(settings, "max_request_body_mib", DEFAULT_MAX_REQUEST_BODY_MIB)
    db = settings.get("db")
    if db is not None and not isinstance(db, str):
        raise ConfigError("[gateway] db must be a string")
    tape = settings.get("tape")
    if tape is not None and not isinstance(tape, str):
        raise ConfigError("[gateway] tape must be a string")
    listen = settings.get("listen", "127.0.0.1:8787")
    if not isinstance(listen, str):
        raise ConfigError("[gateway] listen must be a string")
    return GatewayConfig(
        path=path,
        upstreams=_upstreams(raw.get("upstreams", {})),
        clients=_clients(raw.get("clients", [])),
        grants=_grants(raw.get("grants", [])),
        listen=listen,
        db=None if db is None else resolve_db(db, base),
        tape=None if tape is None else base / tape,
        inactivity_seconds=float(minutes) * 60,
        max_request_body=int(body_mib * 1024 * 1024),
        redact_headers=_names(settings, "redact_headers"),
        redact_query=_names(settings, "redact_query"),
    )


def _positive(settings: dict[str, Any], key: str, default: float) -> float:
    value = settings.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"[gateway] {key} must be a positive number")
    return float(value)


def _names(settings: dict[str, Any], key: str) -> tuple[str, ...]:
    value = settings.get(key, [])
    if not isinstance(value, list) or not all(
        isinstance(v, str) and _HEADER_NAME.fullmatch(v) for v in value
    ):
        raise ConfigError(f"[gateway] {key} must be a list of header or parameter names")
    return tuple(value)


def resolve_db(value: str, base: Path) -> str:
    """A database URL from `--db` or the file: a URL as is (PostgreSQL gets the psycopg
    driver SQLAlchemy would not pick on its own), anything else a SQLite file path."""
    if "://" not in value:
        target = Path(value)
        return f"sqlite:///{target if target.is_absolute() else base / target}"
    scheme, rest = value.split("://", 1)
    if scheme in ("postgresql", "postgres"):
        return f"postgresql+psycopg://{rest}"
    return value


def _table(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table")
    return value


def _upstreams(value: object) -> dict[Family, Upstream]:
    table = _table(value, "[upstreams]")
    result: dict[Family, Upstream] = {}
    for name, spec in table.items():
        if name not in FAMILIES:
            raise ConfigError(f"[upstreams] {name!r}: expected one of {', '.join(FAMILIES)}")
        family: Family = name
        entry = _table(spec, f"[upstreams] {name}")
        if set(entry) - {"url", "key_env"}:
            raise ConfigError(f"[upstreams] {name}: only url and key_env are allowed")
        url = entry.get("url")
        key_env = entry.get("key_env")
        if not isinstance(url, str):
            raise ConfigError(f"[upstreams] {name}: url is required")
        if key_env is not None and (
            not isinstance(key_env, str) or _ENV_NAME.fullmatch(key_env) is None
        ):
            raise ConfigError(f"[upstreams] {name}: key_env must be an environment variable name")
        if url.startswith(MOCK_PREFIX):
            scenario = url[len(MOCK_PREFIX) :]
            if not scenario:
                raise ConfigError(f"[upstreams] {name}: mock: needs a scenario name or file")
            if key_env is not None:
                raise ConfigError(f"[upstreams] {name}: the mock model takes no key_env")
            result[family] = Upstream(family, None, None, scenario)
        else:
            try:
                checked = check_upstream_url(url)
            except UsageError as exc:
                raise ConfigError(f"[upstreams] {name}: {exc}") from None
            result[family] = Upstream(family, checked, key_env)
    return result


def _clients(value: object) -> tuple[Client, ...]:
    if not isinstance(value, list):
        raise ConfigError("[[clients]] must be an array of tables")
    seen: set[str] = set()
    clients: list[Client] = []
    for i, spec in enumerate(value, 1):
        entry = _table(spec, f"[[clients]] #{i}")
        required = {"token_sha256", "principal", "account", "harness"}
        if not required <= set(entry) <= required | {"roller_headers"}:
            raise ConfigError(
                f"[[clients]] #{i}: needs exactly {', '.join(sorted(required))}"
                " (and optionally roller_headers)"
            )
        digest = entry["token_sha256"]
        if not isinstance(digest, str) or _SHA256.fullmatch(digest) is None:
            raise ConfigError(f"[[clients]] #{i}: token_sha256 must be 64 lower-case hex digits")
        if digest in seen:
            raise ConfigError(f"[[clients]] #{i}: the same token is listed twice")
        seen.add(digest)
        try:
            harness = check_harness(entry["harness"])
            # By default, only a harness that declares itself with them (WireProfile).
            trusted = entry.get("roller_headers", registry().wire(harness).roller_headers)
            if not isinstance(trusted, bool):
                raise ConfigError("roller_headers must be true or false")
            clients.append(
                Client(
                    token_sha256=digest,
                    principal=check_name("principal", entry["principal"]),
                    account=check_name("account", entry["account"]),
                    harness=harness,
                    roller_headers=trusted,
                )
            )
        except ConfigError as exc:
            raise ConfigError(f"[[clients]] #{i}: {exc}") from None
    return tuple(clients)


def _grants(value: object) -> dict[str, GrantScope]:
    if not isinstance(value, list):
        raise ConfigError("[[grants]] must be an array of tables")
    grants: dict[str, GrantScope] = {}
    for i, spec in enumerate(value, 1):
        entry = _table(spec, f"[[grants]] #{i}")
        if set(entry) != {"account", "scope"}:
            raise ConfigError(f"[[grants]] #{i}: needs exactly account and scope")
        account = check_name("account", entry["account"])
        scope = entry["scope"]
        if scope not in GRANT_SCOPES:
            raise ConfigError(f"[[grants]] #{i}: scope must be one of {', '.join(GRANT_SCOPES)}")
        grants[account] = scope
    return grants


def resolve_upstream_keys(
    config: GatewayConfig, environ: dict[str, str] | os._Environ[str] | None = None
) -> dict[Family, str]:
    """The real upstream keys, read from the environment once at start.

    A missing variable is a ConfigError naming the variable (never a value)."""
    env = os.environ if environ is None else environ
    keys: dict[Family, str] = {}
    for family, upstream in config.upstreams.items():
        if upstream.key_env is None:
            continue
        value = env.get(upstream.key_env)
        if not value:
            raise ConfigError(
                f"[upstreams] {family}: environment variable {upstream.key_env} is not set"
            )
        keys[family] = value
    return keys
