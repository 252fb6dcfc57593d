"""Throwaway certificates for TLS tests, made with openssl: CAs and the leaves they sign,
each a (certificate, key) pair of files, valid for a day."""

from __future__ import annotations

import subprocess
from pathlib import Path

Pair = tuple[Path, Path]
"""A certificate file and its key file."""


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def ca(d: Path, name: str) -> Pair:
    """A self-signed CA called `name`: `d/name.crt` and `d/name.key`."""
    cert, key = d / f"{name}.crt", d / f"{name}.key"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
        "-keyout", str(key), "-out", str(cert),
    )  # fmt: skip
    return cert, key


def leaf(d: Path, signer: Pair, name: str, *, cn: str, extensions: str) -> Pair:
    """A leaf for subject CN `cn` with `extensions` (openssl extfile lines, e.g.
    `subjectAltName=IP:127.0.0.1`), signed by `signer`: `d/name.crt` and `d/name.key`."""
    cert, key, csr, ext = (d / f"{name}.{x}" for x in ("crt", "key", "csr", "ext"))
    _openssl(
        "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={cn}",
        "-keyout", str(key), "-out", str(csr),
    )  # fmt: skip
    ext.write_text(extensions + "\n")
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(signer[0]), "-CAkey", str(signer[1]),
        "-CAcreateserial", "-days", "1", "-extfile", str(ext), "-out", str(cert),
    )  # fmt: skip
    return cert, key
