"""The client's address, for rate limits and logs.

The peer address of the TCP connection is the client unless the peer is a trusted reverse
proxy (``Settings.trusted_proxies``). Then ``X-Forwarded-For`` is read from the right: each
trusted proxy appended the address it received the request from, so the first address from
the right that is *not* a trusted proxy is the client. Anything to its left was written by
the client itself and is ignored (a client cannot choose its own rate-limit bucket).

``uvicorn``'s own proxy-header handling is switched off by ``gpu-advisor serve``
(``proxy_headers=False``) so that this is the one place that decides.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from functools import lru_cache

from starlette.types import Scope

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class TrustedProxies:
    def __init__(self, networks: Iterable[str]) -> None:
        self.networks: tuple[Network, ...] = tuple(ipaddress.ip_network(n, strict=False) for n in networks)

    def __bool__(self) -> bool:
        return bool(self.networks)

    def trusts(self, address: str) -> bool:
        ip = _ip(address)
        return ip is not None and any(ip.version == n.version and ip in n for n in self.networks)


@lru_cache(maxsize=4096)
def _ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def client_address(scope: Scope, trusted: TrustedProxies) -> str:
    """The client's address as a string ("unknown" when the server did not say)."""
    client = scope.get("client")
    peer = str(client[0]) if client else "unknown"
    if not trusted or not trusted.trusts(peer):
        return peer
    hops: list[str] = []
    for name, value in scope.get("headers", []):
        if name == b"x-forwarded-for":
            hops.extend(h.strip() for h in value.decode("latin-1").split(","))
    hops = [h for h in hops if h]
    for hop in reversed(hops):
        if _ip(hop) is None:
            return peer  # a trusted proxy passed on garbage: fall back to the proxy itself
        if not trusted.trusts(hop):
            return str(_ip(hop))
    # every hop is a trusted address: the leftmost one sent the request
    return str(_ip(hops[0])) if hops else peer


def bucket_of(address: str) -> str:
    """The rate-limit identity of an address: IPv4 as is, IPv6 by its /64 (one subscriber
    usually holds a whole /64, and could otherwise rotate through it)."""
    ip = _ip(address)
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip) if ip is not None else address
