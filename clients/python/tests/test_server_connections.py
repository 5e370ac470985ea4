"""Connection reuse over TLS, against the real ``tokenproxy serve`` started by
test/clients/python.test.ts: through a TCP relay of the test's own, which counts the connections it
accepts and, when told, breaks the next request on a connection it already carries; and through an
``HTTPS_PROXY`` tunnel."""

import os
import socket
import threading
import time
import unittest
import urllib.parse
import uuid
from typing import Callable, List, Optional, Tuple
from unittest import mock

from _support import API_KEYS, BASE_URL, CA_FILE, SERVER, Forked, fail_on_unclosed

from tokenproxy import NotFoundError, TokenProxy


class Relay:
    """Passes TCP through to ``upstream`` (or, as a proxy, to the target of an HTTP CONNECT)."""

    def __init__(self, upstream: Tuple[str, int], connect: bool = False) -> None:
        self._upstream = upstream
        self._connect = connect
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: List[socket.socket] = []
        self._armed: Optional[str] = None
        self._armed_below = 0
        self.accepted = 0
        self.open = 0
        self.heads: List[bytes] = []
        #: How each armed break was used, once it was.
        self.broke: List[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, how: str) -> None:
        """Breaks the next request sent on a connection accepted so far: ``drop`` closes the
        connection without forwarding it (the server closed an idle connection as the call came),
        ``swallow`` forwards it and closes the connection as the answer arrives (the server did the
        work, the client never hears of it)."""
        with self._lock:
            self._armed, self._armed_below = how, self.accepted + 1

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            _close(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                self.accepted += 1
                self.open += 1
                self._sockets.append(client)
                number = self.accepted
            threading.Thread(target=self._serve, args=(client, number), daemon=True).start()

    def _serve(self, client: socket.socket, number: int) -> None:
        up: Optional[socket.socket] = None
        swallow = threading.Event()
        try:
            up = socket.create_connection(self._read_connect(client) if self._connect else self._upstream)
            with self._lock:
                self._sockets.append(up)
            threading.Thread(target=self._back, args=(up, client, swallow), daemon=True).start()
            while True:
                data = client.recv(65536)
                how = self._trigger(number) if data else "end"
                if how in ("end", "drop"):
                    break
                if how == "swallow":
                    swallow.set()
                up.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self.open -= 1
            _close(client)
            if up is not None:
                _close(up)

    def _trigger(self, number: int) -> Optional[str]:
        with self._lock:
            if self._armed is None or number >= self._armed_below:
                return None
            how, self._armed = self._armed, None
            self.broke.append(how)
            return how

    def _back(self, up: socket.socket, client: socket.socket, swallow: threading.Event) -> None:
        try:
            while True:
                data = up.recv(65536)
                if not data or swallow.is_set():
                    break
                client.sendall(data)
        except OSError:
            pass
        _close(client)

    def _read_connect(self, client: socket.socket) -> Tuple[str, int]:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                raise OSError("no CONNECT")
            head += chunk
        with self._lock:
            self.heads.append(head)
        host, _, port = head.split(b" ")[1].decode().rpartition(":")
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        return host, int(port)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked reading it
    except OSError:
        pass
    sock.close()


def wait_for(condition: Callable[[], bool], seconds: float = 3.0) -> bool:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


# Its own account (the fifth): the tokens created here must not show in other tests' lists.
@unittest.skipUnless(SERVER and len(API_KEYS) >= 5, "no server: run through npm test (test/clients/python.test.ts)")
class ServerConnectionsTest(unittest.TestCase):
    def setUp(self) -> None:
        fail_on_unclosed(self)
        parts = urllib.parse.urlsplit(BASE_URL)
        self.host, self.port = parts.hostname or "localhost", parts.port or 443

    def relay(self, connect: bool = False) -> Relay:
        relay = Relay((self.host, self.port), connect)
        self.addCleanup(relay.close)
        return relay

    def client(self, relay: Optional[Relay] = None) -> TokenProxy:
        # The server's host name, so the certificate still fits; no retries of the client's own.
        base_url = BASE_URL if relay is None else f"https://{self.host}:{relay.port}/v1"
        c = TokenProxy(api_key=API_KEYS[4], base_url=base_url, ca_file=CA_FILE, max_retries=0)
        self.addCleanup(c.close)
        return c

    def test_calls_share_one_tls_connection_until_close(self) -> None:
        relay = self.relay()
        c = self.client(relay)
        self.assertEqual(c.account.get().plan, "unlimited")
        c.tokens.list()
        c.providers.list()
        with self.assertRaises(NotFoundError):
            c.tokens.get("no_such_token")
        c.account.get()
        self.assertEqual((relay.accepted, relay.open), (1, 1))
        c.close()
        self.assertTrue(wait_for(lambda: relay.open == 0))

    def test_a_kept_connection_closed_as_the_call_arrives_is_replaced(self) -> None:
        relay = self.relay()
        c = self.client(relay)
        c.account.get()
        relay.arm("drop")
        self.assertEqual(c.account.get().plan, "unlimited")
        # Sent on the kept connection, which the relay closed, then on a fresh one, kept in turn.
        self.assertEqual(relay.broke, ["drop"])
        c.account.get()
        self.assertEqual(relay.accepted, 2)

    def test_a_create_whose_answer_was_lost_on_a_kept_connection_makes_one_token(self) -> None:
        relay = self.relay()
        c = self.client(relay)
        c.account.get()
        relay.arm("swallow")
        name = f"kept-{uuid.uuid4()}"
        created = c.tokens.create(name=name, provider="openai", real_key="sk-test-0123456789abcdefWXYZ", allowed_hosts=["a.example"])
        self.assertTrue(created.sanitized_key.startswith("svc_hb_"))
        self.assertEqual((relay.broke, relay.accepted), (["swallow"], 2))
        # Sent twice with one Idempotency-Key: the server answered the second from the first.
        self.assertEqual([t.id for t in c.tokens.list(limit=100) if t.name == name], [created.id])

    def test_a_forked_child_leaves_the_parents_tls_connection_alone(self) -> None:
        relay = self.relay()
        c = self.client(relay)
        c.account.get()
        # The child drops its copy of the kept TLS connection and calls on one of its own.
        self.assertEqual(Forked(lambda: c.account.get().plan).result(), "'unlimited'")
        self.assertEqual(c.account.get().plan, "unlimited")
        # Nothing the child did reached the parent's connection (a TLS close_notify would have
        # ended it, and the parent's call would have needed a third).
        self.assertEqual((relay.accepted, relay.broke), (2, []))

    def test_https_proxy_tunnels_and_keeps_its_tunnel(self) -> None:
        proxy = self.relay(connect=True)
        url = f"http://user:secret@127.0.0.1:{proxy.port}"
        with mock.patch.dict(os.environ, {"HTTPS_PROXY": url, "https_proxy": url, "NO_PROXY": "", "no_proxy": ""}):
            c = self.client()
            for _ in range(3):
                self.assertEqual(c.account.get().plan, "unlimited")
        self.assertEqual(proxy.accepted, 1)
        head = proxy.heads[0].decode()
        self.assertTrue(head.startswith(f"CONNECT {self.host}:{self.port} HTTP/1."), head)
        self.assertIn("Proxy-Authorization: Basic dXNlcjpzZWNyZXQ=\r\n", head)  # user:secret


if __name__ == "__main__":
    unittest.main()
