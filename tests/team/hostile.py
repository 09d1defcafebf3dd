"""Hostile team servers speaking real HTTP on 127.0.0.1: one that drips its answer a byte at a
time, and one that answers whatever it is told to (a gzip bomb, thousands of entries, a
redirect), recording what it was sent."""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson


def snapshot_body(
    entries: dict[str, str] | None = None, checksums: dict[str, str] | None = None
) -> bytes:
    """A GET answer of the team memory API."""
    content: dict[str, Any] = {"entryChecksums": checksums or {}}
    if entries is not None:
        content["entries"] = entries
    return orjson.dumps({"checksum": "sha256:hostile", "content": content})


def gzip_bomb(prefix: bytes, block: bytes, count: int, suffix: bytes) -> bytes:
    """A valid gzip stream of ``prefix + block * count + suffix``, built without compressing
    the whole: ``block`` is deflated once after a full flush (no back-references across it), so
    its compressed form can be repeated. 500 MiB of text inflate from about 0.5 MB."""

    def deflated(data: bytes, mode: int) -> bytes:
        compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        return compressor.compress(data) + compressor.flush(mode)

    crc = zlib.crc32(prefix)
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(suffix, crc)
    size = len(prefix) + len(block) * count + len(suffix)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # gzip, deflate, no name, no mtime
    return b"".join(
        [
            header,
            deflated(prefix, zlib.Z_FULL_FLUSH),
            deflated(block, zlib.Z_FULL_FLUSH) * count,
            deflated(suffix, zlib.Z_FINISH),
            struct.pack("<II", crc, size & 0xFFFFFFFF),
        ]
    )


# -- a server that drips ---------------------------------------------------------------------


class DripServer:
    """Reads each request, then sends a valid 200 answer one byte every ``interval`` seconds
    (each read of the client gets a byte well within any per-read timeout)."""

    def __init__(self, body: bytes | None = None, interval: float = 0.5) -> None:
        body = snapshot_body({}) if body is None else body
        self.answer = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        self.interval = interval
        self.connections = 0
        self.accepted: list[float] = []  # time.monotonic() of each connection
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.05)
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    @property
    def url(self) -> str:
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            self.accepted.append(time.monotonic())
            thread = threading.Thread(target=self._drip, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            data = b""
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                for byte in self.answer:
                    if self._stop.wait(self.interval):
                        return
                    conn.sendall(bytes([byte]))

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        self._accept.join(timeout=5)
        for thread in self._threads:
            thread.join(timeout=5)


# -- a server that answers what it is told ---------------------------------------------------


@dataclass
class Canned:
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    body: bytes = b""


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _CannedHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        owner = self.server.owner
        owner.received.append(
            Received(self.command, self.path, {k.lower(): v for k, v in self.headers.items()})
        )
        canned = owner.answer(self.command)
        self.send_response(canned.status)
        for name, value in canned.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(canned.body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # a client that stopped reading (a bomb refused)
            self.wfile.write(canned.body)

    do_GET = do_PUT = _serve


class _CannedHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: CannedServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hung up on purpose


class CannedServer:
    """Answers every request with ``answer(method)``; ``received`` lists what came in."""

    def __init__(self, answer: Callable[[str], Canned], tls: ssl.SSLContext | None = None) -> None:
        self.answer = answer
        self.received: list[Received] = []
        self.scheme = "https" if tls is not None else "http"
        self._httpd = _CannedHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"{self.scheme}://{host!s}:{port}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def elapsed(action: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    result = action()
    return result, time.monotonic() - started


def self_signed(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A certificate for 127.0.0.1: the server's TLS context, and a client context trusting it."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cafile=str(cert_file))
    return server, client
