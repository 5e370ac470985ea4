"""Connection reuse, against a local HTTP/1.1 server of the test's own that counts the connections
it accepts and the requests each one carries: calls share a kept connection, a connection the server
closed is replaced without an error, the deadline still cuts a trickling answer and its connection
is not kept, threads share a bounded pool, close() closes what is kept, a forked child opens its own."""

import gc
import http.server
import json
import os
import socket
import struct
import threading
import time
import unittest
import urllib.parse
from typing import Any, Callable, Dict, List, Optional, Tuple
from unittest import mock

from _support import Forked, fail_on_unclosed

from tokenproxy import APIConnectionError, APITimeoutError, NotFoundError, TokenProxy
from tokenproxy._pool import MAX_IDLE

LIST = b'{"object":"list","data":[],"has_more":false,"next_cursor":null}'
#: (connection number, request number on that connection, method, path, headers)
Seen = Tuple[int, int, str, str, Dict[str, str]]


class CountingServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # the threads test connects many at once

    def __init__(self, idle_timeout: Optional[float] = None, delay: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), KeptAPI)
        self.idle_timeout = idle_timeout
        self.delay = delay
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.accepted = 0
        self.open = 0
        self.seen: List[Seen] = []

    def paths(self, path: str) -> List[Tuple[int, int]]:
        """(connection, request number on it) of each request for ``path``."""
        with self.lock:
            return [(conn, nth) for conn, nth, _, p, _ in self.seen if p == path]


class KeptAPI(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive. /v1/tokens answers a page, /v1/tokens/<id> that token (404 for
    `missing`); /v1/logs drops a request that is not the first on its connection
    (the server closing a kept connection as a call arrives), /v1/anomalies drops every request;
    /v1/audit trickles its body; /v1/providers answers `Connection: close`, /v1/events in HTTP/1.0,
    /v1/usage announces `Keep-Alive: timeout=1`; /v1/webhooks sends a status line, then resets the
    connection. POST /v1/keys drops a request that is not the first on its connection too."""

    protocol_version = "HTTP/1.1"
    server: CountingServer

    def setup(self) -> None:
        self.timeout = self.server.idle_timeout  # read by setup: the server's idle timeout
        super().setup()
        self.number, self.served = self.count(+1), 0

    def finish(self) -> None:
        super().finish()
        self.count(-1)

    def count(self, step: int) -> int:
        with self.server.lock:
            self.server.open += step
            self.server.accepted += max(step, 0)
            return self.server.accepted

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.route()

    def do_POST(self) -> None:  # noqa: N802
        self.route()

    def route(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = urllib.parse.urlsplit(self.path).path  # a proxy gets the whole URL
        self.served += 1
        with self.server.lock:
            self.server.seen.append((self.number, self.served, self.command, path, dict(self.headers)))
        time.sleep(self.server.delay)
        if path == "/v1/anomalies" or (self.served > 1 and path in ("/v1/logs", "/v1/keys")):
            self.close_connection = True  # no answer at all
        elif self.command == "POST":
            self.answer(201, b'{"token_id":"t1","key_id":"k1","sanitized_key":"svc_hb_x"}')
        elif path.startswith("/v1/tokens/"):
            token = path.rsplit("/", 1)[1]
            if token == "missing":
                self.answer(404, b'{"error":{"code":"not_found","message":"no such token"}}')
            else:
                self.answer(200, json.dumps({"token_id": token}).encode())
        elif path == "/v1/audit":
            self.trickle()
        elif path == "/v1/events":
            self.raw(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: %d\r\n\r\n%s" % (len(LIST), LIST))
        elif path == "/v1/webhooks":
            self.reset_after(b"HTTP/1.1 200 OK\r\n")
        else:
            extra = {"/v1/providers": ("Connection", "close"), "/v1/usage": ("Keep-Alive", "timeout=1")}
            self.answer(200, LIST, extra.get(path))

    def answer(self, status: int, body: bytes, header: Optional[Tuple[str, str]] = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if header is not None:
            self.send_header(*header)
        self.end_headers()
        self.wfile.write(body)

    def raw(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()

    def reset_after(self, data: bytes) -> None:
        """Sends ``data``, then resets the connection once the client has surely read it."""
        self.raw(data)
        time.sleep(0.5)
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()  # really closed, with a reset, when finish() closes rfile and wfile
        self.close_connection = True

    def trickle(self) -> None:
        """The head at once, then the body a byte every 0.1 s: each byte well within the timeout,
        the whole body never."""
        self.raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(LIST))
        try:
            for byte in LIST:
                if self.server.release.wait(0.1):
                    break
                self.raw(bytes([byte]))
        except OSError:
            pass  # the client gave up, as it should
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass


def wait_for(condition: Callable[[], bool], seconds: float = 3.0) -> bool:
    """The server sees a close a moment after the client made it."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


class ConnectionsTest(unittest.TestCase):
    def setUp(self) -> None:
        fail_on_unclosed(self)

    def serve(self, **options: Any) -> CountingServer:
        server = CountingServer(**options)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.addCleanup(server.release.set)
        return server

    def client(self, server: CountingServer, timeout: float = 5.0) -> TokenProxy:
        # No retries of the client's own: whatever is survived here, the transport survived.
        c = TokenProxy(
            api_key="svc_sk_test", base_url=f"http://127.0.0.1:{server.server_address[1]}", max_retries=0, timeout=timeout
        )
        self.addCleanup(c.close)
        return c

    def test_sequential_calls_share_one_connection(self) -> None:
        server = self.serve()
        c = self.client(server)
        c.tokens.list()
        self.assertEqual(c.tokens.get("t1").id, "t1")
        # An error status is an answer: raised to the caller, read in full, its connection kept.
        with self.assertRaises(NotFoundError):
            c.tokens.get("missing")
        c.tokens.create(name="n", provider="openai", real_key="sk-x", allowed_hosts=["a.example"])
        c.tokens.list()
        self.assertEqual(server.accepted, 1)
        self.assertEqual([nth for _, nth, _, _, _ in server.seen], [1, 2, 3, 4, 5])

    def test_a_connection_the_server_closed_while_idle_is_replaced(self) -> None:
        server = self.serve(idle_timeout=1.0)
        c = self.client(server)
        c.tokens.list()
        self.assertTrue(wait_for(lambda: server.open == 0))  # the server's idle timeout passed
        c.tokens.list()
        c.tokens.list()
        self.assertEqual(server.accepted, 2)
        self.assertEqual(server.paths("/v1/tokens"), [(1, 1), (2, 1), (2, 2)])

    def test_a_kept_connection_closed_as_the_call_arrives_is_sent_again_once(self) -> None:
        server = self.serve()
        c = self.client(server)
        c.tokens.list()
        self.assertEqual(c.logs.list().data, [])
        # Sent on the kept connection, which closed without a byte of answer, then on a fresh one.
        self.assertEqual(server.paths("/v1/logs"), [(1, 2), (2, 1)])
        # A create too: it carries its Idempotency-Key, the same both times.
        self.assertEqual(c.keys.create(name="k", provider="openai", real_key="sk-x").id, "k1")
        posts = [(conn, nth, headers) for conn, nth, method, _, headers in server.seen if method == "POST"]
        self.assertEqual([(conn, nth) for conn, nth, _ in posts], [(2, 2), (3, 1)])
        self.assertEqual(len({headers["Idempotency-Key"] for _, _, headers in posts}), 1)
        # The fresh connection is kept in turn.
        c.tokens.list()
        self.assertEqual(server.accepted, 3)

    def test_sent_again_only_once_and_only_when_nothing_was_answered(self) -> None:
        server = self.serve()
        c = self.client(server)
        c.tokens.list()
        with self.assertRaises(APIConnectionError) as cm:
            c.anomalies.list()  # dropped on the kept connection, and on the fresh one
        self.assertEqual(cm.exception.code, "connection_error")
        self.assertEqual(server.paths("/v1/anomalies"), [(1, 2), (2, 1)])
        c.tokens.list()
        with self.assertRaises(APIConnectionError):
            c.webhooks.list()  # reset after its status line: answered, badly; not sent again
        self.assertEqual(server.paths("/v1/webhooks"), [(3, 2)])

    def test_a_request_that_is_not_repeatable_is_not_sent_again(self) -> None:
        server = self.serve()
        c = self.client(server)
        c.tokens.list()
        url = c.base_url + "/keys"
        with self.assertRaises(APIConnectionError):
            # A POST without an Idempotency-Key (the client always adds one; its transport does not).
            c._transport("POST", url, {"Content-Type": "application/json"}, b"{}", 5.0)
        self.assertEqual([nth for conn, nth, method, _, _ in server.seen if method == "POST"], [2])

    def test_the_deadline_cuts_a_trickling_answer_on_a_kept_connection_and_drops_it(self) -> None:
        server = self.serve()
        c = self.client(server, timeout=1.0)
        c.tokens.list()
        started = time.monotonic()
        with self.assertRaises(APITimeoutError):
            c.audit.list()  # on the kept connection: the deadline watches a reused socket too
        self.assertLess(time.monotonic() - started, 3.0)  # not the 6 s the body takes
        self.assertEqual(server.paths("/v1/audit"), [(1, 2)])
        c.tokens.list()
        c.tokens.list()
        # The connection the deadline shut down was not used again; the next one is kept.
        self.assertEqual(server.paths("/v1/tokens"), [(1, 1), (2, 1), (2, 2)])

    def test_answers_that_end_their_connection_are_not_kept(self) -> None:
        server = self.serve()
        c = self.client(server)
        for call in (c.providers.list, c.events.list, c.usage.get):
            call()  # Connection: close; HTTP/1.0; a keep-alive timeout too short to use
            c.tokens.list()
            c.tokens.list()  # on the connection the call before opened
        self.assertEqual(server.accepted, 4)
        self.assertEqual(server.paths("/v1/tokens"), [(2, 1), (2, 2), (3, 1), (3, 2), (4, 1), (4, 2)])

    def test_threads_share_a_bounded_pool(self) -> None:
        server = self.serve(delay=0.01)
        c = self.client(server)
        errors: List[BaseException] = []

        def work(name: str) -> None:
            try:
                for n in range(5):
                    # Each thread reads back its own token: answers never cross between threads.
                    self.assertEqual(c.tokens.get(f"{name}-{n}").id, f"{name}-{n}")
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)

        def run(threads: int) -> None:
            workers = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(threads)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join(30)
            self.assertEqual(errors, [])

        run(MAX_IDLE - 2)
        # Fewer threads than the pool holds: a connection is only opened while all others are busy.
        self.assertLessEqual(server.accepted, MAX_IDLE - 2)
        run(MAX_IDLE + 6)
        # What is kept afterwards is bounded; the extra connections were closed. And they were
        # reused meanwhile: 120 calls in all.
        self.assertTrue(wait_for(lambda: server.open <= MAX_IDLE), server.open)
        self.assertLess(server.accepted, (MAX_IDLE + 6) * 5)
        c.close()
        self.assertTrue(wait_for(lambda: server.open == 0), server.open)

    def test_close_and_the_context_manager_close_kept_connections(self) -> None:
        server = self.serve()
        c = self.client(server)
        c.tokens.list()
        c.tokens.list()
        self.assertEqual(server.open, 1)  # kept
        c.close()
        self.assertTrue(wait_for(lambda: server.open == 0))
        # Still usable after close(), one connection per call, none left open.
        c.tokens.list()
        self.assertTrue(wait_for(lambda: server.open == 0))
        with self.client(server) as managed:
            managed.tokens.list()
            self.assertEqual(server.open, 1)
        self.assertTrue(wait_for(lambda: server.open == 0))

    def test_a_client_dropped_without_close_closes_its_connections(self) -> None:
        server = self.serve()
        c = TokenProxy(api_key="svc_sk_test", base_url=f"http://127.0.0.1:{server.server_address[1]}")
        c.tokens.list()
        self.assertEqual(server.open, 1)
        del c
        gc.collect()  # the client and its resources point at each other
        self.assertTrue(wait_for(lambda: server.open == 0))

    def test_a_forked_child_opens_its_own_connection_and_leaves_the_parents(self) -> None:
        server = self.serve()
        c = self.client(server)
        c.tokens.get("parent")
        # Another thread holds the pool's lock at the fork, as a thread taking or giving back a
        # connection may: the child has no such thread to release it.
        holding, release = threading.Event(), threading.Event()

        def hold() -> None:
            with c._pool._lock:
                holding.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        self.assertTrue(holding.wait(5))
        child = Forked(lambda: c.tokens.get("child").id)
        release.set()
        holder.join()
        self.assertEqual(child.result(), "'child'")
        self.assertEqual(c.tokens.get("parent").id, "parent")
        # The child's call went on a connection of its own; the parent's kept one still works.
        self.assertEqual(server.paths("/v1/tokens/child"), [(2, 1)])
        self.assertEqual(server.paths("/v1/tokens/parent"), [(1, 1), (1, 2)])

    def test_http_proxy_from_the_environment_is_used_and_kept(self) -> None:
        proxy = self.serve()
        proxy_url = f"http://user:pa%20ss@127.0.0.1:{proxy.server_address[1]}"
        with mock.patch.dict(os.environ, {"HTTP_PROXY": proxy_url, "http_proxy": proxy_url, "NO_PROXY": "", "no_proxy": ""}):
            c = TokenProxy(api_key="svc_sk_test", base_url="http://tokenproxy.invalid:8443", max_retries=0)
            self.addCleanup(c.close)
            c.tokens.list()
            c.tokens.list()
        self.assertEqual(proxy.accepted, 1)
        self.assertEqual(proxy.paths("/v1/tokens"), [(1, 1), (1, 2)])
        headers = proxy.seen[0][4]
        self.assertEqual(headers["Host"], "tokenproxy.invalid:8443")
        self.assertEqual(headers["Proxy-Authorization"], "Basic dXNlcjpwYSBzcw==")  # user:pa ss

    def test_no_proxy_still_bypasses_the_proxy(self) -> None:
        server = self.serve()
        closed_port = "http://127.0.0.1:1"
        env = {"HTTP_PROXY": closed_port, "http_proxy": closed_port, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        with mock.patch.dict(os.environ, env):
            self.client(server).tokens.list()
        self.assertEqual(server.accepted, 1)


if __name__ == "__main__":
    unittest.main()
