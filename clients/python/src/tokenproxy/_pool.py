"""Where a call's connection goes (straight to the server, or through a proxy) and the small pool of
kept-alive connections a client reuses between calls."""

import base64
import http.client
import math
import os
import re
import select
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
import weakref
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from ._errors import APIConnectionError

#: Idle connections a client keeps. More threads than this still each get a connection; the extra
#: ones are closed when their call ends instead of waiting in the pool.
MAX_IDLE = 10
#: Stop using a connection this long before the server said it would close it (`Keep-Alive:
#: timeout=N`), so a call is not sent just as the server closes it. Node's agent subtracts the same
#: second from the hint.
_KEEP_ALIVE_MARGIN = 1.0


@dataclass(frozen=True)
class Route:
    """How a URL is reached. The proxy decision is urllib's own (``getproxies``, ``proxy_bypass``,
    so ``HTTPS_PROXY``, ``HTTP_PROXY`` and ``NO_PROXY`` work as they did with urllib), made on every
    call as urllib's opener made it. Connections are pooled per route: a kept connection is only ever
    reused for the same server through the same proxy."""

    scheme: str
    #: host[:port] the TCP connection goes to: the server's, or the proxy's.
    address: str
    #: host[:port] of the server behind an HTTP CONNECT tunnel (an https URL through a proxy).
    tunnel: Optional[str] = None
    #: The request line names the whole URL (an http URL through a proxy).
    absolute: bool = False
    #: ``Basic …`` for a proxy URL with user and password; kept out of the repr.
    proxy_auth: Optional[str] = field(default=None, repr=False)

    def connection(self, context: ssl.SSLContext, timeout: float) -> http.client.HTTPConnection:
        """A new, not yet connected, connection for this route."""
        conn: http.client.HTTPConnection
        if self.scheme == "https":
            conn = http.client.HTTPSConnection(self.address, timeout=timeout, context=context)
        else:
            conn = http.client.HTTPConnection(self.address, timeout=timeout)
        if self.tunnel is not None:
            auth = {} if self.proxy_auth is None else {"Proxy-Authorization": self.proxy_auth}
            conn.set_tunnel(self.tunnel, headers=auth)
        # http.client would otherwise reconnect by itself on a closed connection, on a socket the
        # deadline does not watch and that no one counted as fresh.
        conn.auto_open = 0
        return conn

    def target(self, url: str) -> str:
        """The request-target: the whole URL for a proxy, else the path and query."""
        if self.absolute:
            return url
        parts = urllib.parse.urlsplit(url)
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def headers(self, headers: Dict[str, str]) -> Dict[str, str]:
        if self.absolute and self.proxy_auth is not None:
            return {**headers, "Proxy-Authorization": self.proxy_auth}
        return headers


def route_for(url: str) -> Route:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    # urllib's Request.host: the URL's authority, percent-decoded.
    address = urllib.parse.unquote(parts.netloc)
    if scheme not in ("http", "https"):
        # urllib's words for it.
        raise APIConnectionError(
            f"Could not reach the tokenproxy API: unknown url type: {scheme}", code="connection_error"
        )
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or (address and urllib.request.proxy_bypass(address)):
        return Route(scheme, address)
    # The parser urllib's ProxyHandler uses, so a proxy URL means what it meant before.
    proxy_type, user, password, proxy_address = urllib.request._parse_proxy(proxy)  # type: ignore[attr-defined]
    auth = _basic(user, password) if user and password else None
    proxy_address = urllib.parse.unquote(proxy_address)
    if scheme == "https":
        # urllib tunnels an https URL through any proxy with CONNECT, over plain TCP to the proxy.
        return Route("https", proxy_address, tunnel=address, proxy_auth=auth)
    if proxy_type in (None, "http"):
        return Route("http", proxy_address, absolute=True, proxy_auth=auth)
    raise APIConnectionError(
        f"An http:// base_url through a {proxy_type}:// proxy is not supported: use an http:// "
        "proxy address, or an https:// base_url.",
        code="connection_error",
    )


def _basic(user: str, password: str) -> str:
    pair = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
    return "Basic " + base64.b64encode(pair.encode()).decode("ascii")


def keep_for(headers: Dict[str, str]) -> float:
    """Seconds a connection may wait idle: what the server announced (`Keep-Alive: timeout=72`, as
    Node's HTTP server sends) less a margin; with no announcement, until it is found closed."""
    found = re.search(r"timeout\s*=\s*(\d+)", headers.get("keep-alive", ""))
    return float(found.group(1)) - _KEEP_ALIVE_MARGIN if found else math.inf


@dataclass
class _Idle:
    route: Route
    conn: http.client.HTTPConnection
    until: float

    def usable(self) -> bool:
        return time.monotonic() < self.until and not _closed_by_peer(self.conn.sock)


class Pool:
    """Idle kept-alive connections of one client, shared by its threads. http.client connections
    are not thread-safe: one is taken out under the lock and used by one call only, then given back
    once its answer was read in full. At most ``max_idle`` wait; the most recently used goes first,
    as it is the least likely to have been closed by the server."""

    def __init__(self, max_idle: int = MAX_IDLE) -> None:
        self._lock = threading.Lock()
        self._idle: List[_Idle] = []  # oldest first
        self._max_idle = max_idle
        self._closed = False
        _POOLS.add(self)

    def take(self, route: Route) -> Optional[http.client.HTTPConnection]:
        """A kept connection for ``route`` that still looks open, or None."""
        while True:
            with self._lock:
                idle = self._pop(route)
            if idle is None:
                return None
            if idle.usable():
                return idle.conn
            idle.conn.close()

    def give(self, route: Route, conn: http.client.HTTPConnection, seconds: float) -> None:
        """Keeps ``conn`` for ``seconds``; closes it instead when the pool is closed or full."""
        extra: Optional[http.client.HTTPConnection] = conn
        with self._lock:
            if not self._closed and seconds > 0:
                self._idle.append(_Idle(route, conn, time.monotonic() + seconds))
                extra = self._idle.pop(0).conn if len(self._idle) > self._max_idle else None
        if extra is not None:
            extra.close()

    def close(self) -> None:
        """Closes the idle connections; from now on every connection is closed after its call."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for entry in idle:
            entry.conn.close()

    def after_fork_in_child(self) -> None:
        """Starts a forked child's pool afresh. Another thread of the parent may have held the lock
        at the fork: in the child no one would ever release it, and the next call would wait for
        ever. The kept connections are the parent's: a call of the child on one would interleave
        both processes' bytes on one connection (and one TLS stream), corrupting it for both. The
        child's copies of their descriptors are closed, which sends nothing: no FIN while the parent
        still holds the connection, and no TLS close_notify (only ``unwrap()`` sends one, never
        ``close()``). Left open, they would keep the connection up after the parent closed it, for as
        long as the child lives."""
        self._lock = threading.Lock()
        idle, self._idle = self._idle, []
        for entry in idle:
            entry.conn.close()

    def _pop(self, route: Route) -> Optional[_Idle]:
        for index in range(len(self._idle) - 1, -1, -1):
            if self._idle[index].route == route:
                return self._idle.pop(index)
        return None


#: Every pool of the process, for the fork hook; weak, so that a pool still goes with its client.
_POOLS: "weakref.WeakSet[Pool]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for pool in list(_POOLS):
        pool.after_fork_in_child()


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere there is no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _closed_by_peer(sock: Optional[socket.socket]) -> bool:
    """An idle connection has nothing to read: anything readable is the server's close (or bytes it
    should not have sent), and either way the connection is done. The check urllib3 makes too."""
    if sock is None:
        return True
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    try:
        if hasattr(select, "poll"):  # select() fails on descriptors above FD_SETSIZE
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)
    except (OSError, ValueError):
        return True
