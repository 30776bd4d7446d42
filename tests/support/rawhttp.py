"""A raw HTTP/1.1 client over a loopback socket: the bytes a hostile or broken client
sends, unnormalised (dot segments, control characters, invalid UTF-8, unusual methods,
chunked bodies of any size), and the response as it came back.

The standard clients refuse or rewrite exactly what these tests need to send.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

Header = tuple[str | bytes, str | bytes]


@dataclass(frozen=True)
class RawResponse:
    status: int | None  # None: the connection closed before a status line
    headers: tuple[tuple[str, str], ...]
    body: bytes
    error: str | None = None  # what broke while sending or reading, if anything


def _bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("latin-1")


def send(
    base_url: str,
    method: str | bytes,
    target: str | bytes,
    headers: Sequence[Header] = (),
    body: bytes | Iterable[bytes] = b"",
    *,
    timeout: float = 60.0,
) -> RawResponse:
    """Send one request (`Connection: close`) and read the whole response.

    `body` as bytes is sent with its `content-length` (unless `headers` give one); as an
    iterable of parts it is sent chunked. The response is read until the server closes."""
    where = urlsplit(base_url)
    head = [_bytes(method) + b" " + _bytes(target) + b" HTTP/1.1"]
    head.append(b"host: " + _bytes(where.netloc))
    names = {_bytes(n).lower() for n, _ in headers}
    chunked = not isinstance(body, bytes)
    if chunked:
        head.append(b"transfer-encoding: chunked")
    elif b"content-length" not in names and (body or _bytes(method) not in (b"GET", b"HEAD")):
        head.append(b"content-length: " + str(len(body)).encode())
    head.extend(_bytes(n) + b": " + _bytes(v) for n, v in headers)
    head.append(b"connection: close")
    sock = socket.create_connection((where.hostname or "127.0.0.1", where.port or 80), timeout)
    error: str | None = None
    try:
        try:
            sock.sendall(b"\r\n".join(head) + b"\r\n\r\n")
            if isinstance(body, bytes):
                sock.sendall(body)
            else:
                for part in body:
                    sock.sendall(b"%x\r\n%b\r\n" % (len(part), part))
                sock.sendall(b"0\r\n\r\n")
        except OSError as exc:  # the server answered and closed before the body was sent
            error = f"{type(exc).__name__}: {exc}"
        received = bytearray()
        try:
            while data := sock.recv(1 << 16):
                received += data
        except OSError as exc:
            error = error or f"{type(exc).__name__}: {exc}"
    finally:
        sock.close()
    return _parse(bytes(received), error)


def _parse(raw: bytes, error: str | None) -> RawResponse:
    head, sep, rest = raw.partition(b"\r\n\r\n")
    if not sep:
        return RawResponse(None, (), raw, error)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    headers = tuple(
        (name.strip(), value.strip())
        for name, _, value in (line.partition(":") for line in lines[1:])
    )
    if any(n.lower() == "transfer-encoding" and "chunked" in v.lower() for n, v in headers):
        rest = _unchunk(rest)
    return RawResponse(status, headers, rest, error)


def _unchunk(data: bytes) -> bytes:
    out = bytearray()
    pos = 0
    while True:
        line_end = data.find(b"\r\n", pos)
        if line_end < 0:
            return bytes(out)
        size = int(data[pos:line_end].split(b";")[0] or b"0", 16)
        if size == 0:
            return bytes(out)
        out += data[line_end + 2 : line_end + 2 + size]
        pos = line_end + 2 + size + 2


def tape_bytes(directory: Path) -> int:
    """The total size of a tape directory's segment files."""
    root = Path(directory)
    return sum(p.stat().st_size for p in root.glob("*.rtape")) if root.is_dir() else 0
