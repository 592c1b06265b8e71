"""Which scheduler addresses ``make grade`` and ``make worker`` accept.

Whoever reaches a Dask scheduler's port can run code on its workers, and a grading worker holds
the course's solutions: plain ``tcp://`` is accepted on loopback and private networks only;
``tls://`` (with Dask's certificate settings) anywhere.
"""

from __future__ import annotations

import ipaddress
import socket


def address_problem(address: str) -> str | None:
    """Why this scheduler address is refused, or None: tcp:// must stay on a private network."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme == "tls":
        return None
    if scheme != "tcp":
        return f"{address}: only tcp:// (on a private network) and tls:// are supported"
    host = rest.rsplit(":", 1)[0].strip("[]") if ":" in rest else rest
    try:
        ips = {ipaddress.ip_address(i[4][0].split("%")[0]) for i in socket.getaddrinfo(host, None)}
    except (socket.gaierror, ValueError) as exc:
        return f"{address}: cannot resolve {host!r} ({exc})"
    public = sorted(str(ip) for ip in ips if not (ip.is_loopback or ip.is_private))
    if public:
        return (
            f"{address} is a public address ({', '.join(public)}): plain tcp:// is refused there, "
            "because whoever reaches the scheduler's port runs code on the workers, which hold "
            "the solutions. Use tls:// with certificates (README: grading on a cluster), or keep "
            "the scheduler on loopback or a private network."
        )
    return None
