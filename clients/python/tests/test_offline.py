"""Parts that need no server: retries and idempotency keys (fake transport), error fields, the
real transport against a local stub, the webhook verifier."""

import base64
import hashlib
import hmac
import http.server
import json
import os
import threading
import time
import unittest
from typing import Any, Dict, List, Optional, Tuple
from unittest import mock

from _support import fail_on_unclosed

from tokenproxy import (
    APIConnectionError,
    APITimeoutError,
    InternalServerError,
    InvalidRequestError,
    NotFoundError,
    RateLimitError,
    TokenProxy,
    TokenProxyError,
    WebhookVerificationError,
    verify_webhook,
)
from tokenproxy import _client

Answer = Tuple[int, Dict[str, str], Any]


class FakeTransport:
    def __init__(self, answers: List[Optional[Answer]]) -> None:
        self.answers = answers
        self.calls: List[Dict[str, Any]] = []

    def __call__(self, method: str, url: str, headers: Dict[str, str], body: Optional[bytes], timeout: float):
        self.calls.append({"method": method, "url": url, "headers": dict(headers), "body": body})
        answer = self.answers.pop(0) if self.answers else (500, {}, {})
        if answer is None:
            raise APIConnectionError("socket hang up", code="connection_error")
        status, headers_out, payload = answer
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return status, headers_out, raw


def fake_client(answers: List[Optional[Answer]], max_retries: int = 3) -> Tuple[TokenProxy, FakeTransport]:
    c = TokenProxy(api_key="svc_sk_test", base_url="https://tp.example", max_retries=max_retries)
    fake = FakeTransport(answers)
    c._transport = fake
    return c, fake


REAL_SLEEP = time.sleep
CREATED = {"token_id": "abc", "sanitized_key": "svc_hb_x", "name": "n", "rate_limit": None}


def stub_client_sleep(test: unittest.TestCase) -> List[float]:
    """The waits the client would have slept. Only the client's own reference is patched: the
    global time.sleep, which every other module and thread shares, stays as it is."""
    waits: List[float] = []
    patcher = mock.patch.object(_client, "sleep", waits.append)
    patcher.start()
    test.addCleanup(patcher.stop)
    return waits


class RetryTest(unittest.TestCase):
    def setUp(self) -> None:
        self.waits = stub_client_sleep(self)

    def test_retries_network_5xx_429_with_one_idempotency_key(self) -> None:
        c, fake = fake_client([None, (503, {}, {}), (429, {"retry-after": "0"}, {}), (201, {}, CREATED)])
        token = c.tokens.create(name="n", provider="openai", real_key="sk-x", allowed_hosts=["a.example"])
        self.assertEqual((token.id, token.sanitized_key), ("abc", "svc_hb_x"))
        self.assertEqual(len(fake.calls), 4)
        self.assertEqual(len(self.waits), 3)
        self.assertEqual(self.waits[2], 0.0)
        self.assertEqual(fake.calls[0]["url"], "https://tp.example/v1/tokens")
        keys = {call["headers"]["Idempotency-Key"] for call in fake.calls}
        self.assertEqual(len(keys), 1)
        body = json.loads(fake.calls[0]["body"])
        self.assertEqual(
            body, {"name": "n", "provider": "openai", "real_key": "sk-x", "allowed_hosts": ["a.example"]}
        )

    def test_gives_up_after_max_retries_and_never_retries_4xx(self) -> None:
        c, fake = fake_client([(500, {}, {}), (500, {}, {})], max_retries=1)
        with self.assertRaises(InternalServerError):
            c.tokens.list()
        self.assertEqual(len(fake.calls), 2)
        c, fake = fake_client([(429, {"retry-after": "3600"}, {"error": {"code": "rate_limited", "message": "x"}})])
        with self.assertRaises(RateLimitError):
            c.account.get()
        self.assertEqual(len(fake.calls), 1)
        c, fake = fake_client([(400, {}, {"error": {"code": "invalid_parameter", "message": "no", "param": "x"}})])
        with self.assertRaises(InvalidRequestError) as cm:
            c.keys.create(name="k", provider="openai", real_key="sk")
        self.assertEqual((cm.exception.code, cm.exception.param), ("invalid_parameter", "x"))
        self.assertEqual(len(fake.calls), 1)

    def test_own_idempotency_key_and_query_encoding(self) -> None:
        c, fake = fake_client([(200, {}, {"object": "list", "data": [], "has_more": False, "next_cursor": None})])
        c.logs.list(token_id="t1", authorized=False, limit=5)
        self.assertEqual(fake.calls[0]["url"], "https://tp.example/v1/logs?token_id=t1&authorized=false&limit=5")
        c, fake = fake_client([(200, {}, {"key_id": "key_1"})])
        c.keys.rotate("key_1", real_key="sk-new", idempotency_key="my-key")
        self.assertEqual(fake.calls[0]["headers"]["Idempotency-Key"], "my-key")
        self.assertEqual(fake.calls[0]["url"], "https://tp.example/v1/keys/key_1/rotate")

    def test_deletes_carry_one_idempotency_key_across_retries(self) -> None:
        deleted = {"webhook_id": "wh_1", "url": "https://h.example", "events": ["*"], "enabled": True}
        c, fake = fake_client([None, (200, {}, deleted)])
        c.webhooks.delete("wh_1")
        self.assertEqual([call["method"] for call in fake.calls], ["DELETE", "DELETE"])
        keys = {call["headers"].get("Idempotency-Key") for call in fake.calls}
        self.assertEqual(len(keys), 1)
        self.assertIsNotNone(keys.pop())
        for call in (
            lambda: c.api_keys.delete("ak_1", idempotency_key="mine"),
            lambda: c.keys.delete("key_1", idempotency_key="mine"),
            lambda: c.tokens.revoke("t1", idempotency_key="mine"),
            lambda: c.webhooks.test("wh_1", idempotency_key="mine"),
            lambda: c.events.redeliver("evt_1", webhook_id="wh_1", idempotency_key="mine"),
        ):
            c, fake = fake_client([(200, {}, {})])
            call()
            self.assertEqual(fake.calls[0]["headers"]["Idempotency-Key"], "mine")
        c, fake = fake_client([(200, {}, {"object": "list", "data": [], "has_more": False})])
        c.tokens.list()
        self.assertNotIn("Idempotency-Key", fake.calls[0]["headers"])

    def test_request_log_error_code(self) -> None:
        item = {
            "request_id": "req_1",
            "timestamp": "2026-11-23T04:10:00.123Z",
            "token_id": "t1",
            "origin": None,
            "ip": "203.0.113.7",
            "country": None,
            "pop": "fra1",
            "path": "/openai/v1/models",
            "status": 403,
            "authorized": False,
            "latency_ms": 0,
        }
        page = {"object": "list", "data": [dict(item, error_code="origin_not_allowed"), item], "has_more": False, "next_cursor": None}
        c, _ = fake_client([(200, {}, page)])
        logs = c.logs.list().data
        self.assertEqual(logs[0].error_code, "origin_not_allowed")
        # An older server sends no error_code: None, not a failure.
        self.assertIsNone(logs[1].error_code)

    def test_connection_error_after_retries(self) -> None:
        c = TokenProxy(api_key="svc_sk_test", base_url="https://127.0.0.1:1", max_retries=1)
        with self.assertRaises(APIConnectionError):
            c.account.get()

    def test_stubbing_the_retry_wait_leaves_time_sleep_alone(self) -> None:
        self.assertIs(time.sleep, REAL_SLEEP)
        c, _ = fake_client([(503, {"retry-after": "2"}, {}), (200, {}, {"object": "list", "data": []})])
        c.tokens.list()
        self.assertEqual(self.waits, [2.0])


class ApiKeyCheckTest(unittest.TestCase):
    """A key that cannot go into a header is refused at once, and the message never holds it."""

    def test_refuses_keys_that_cannot_be_sent_without_quoting_them(self) -> None:
        secret = "svc_sk_SECRETSECRETSECRET"
        for key, what in [
            (secret + "\n", "a line break at position 26"),
            (" " + secret, "a space or tab at position 1"),
            ("svc_sk_\u2026", "the non-ASCII character U+2026 at position 8"),
            (secret + "\x00", "the control character U+0000 at position 26"),
        ]:
            with self.assertRaises(ValueError) as cm:
                TokenProxy(api_key=key, base_url="https://tp.example")
            message = str(cm.exception)
            self.assertIn(what.split(" at ")[0], message)
            self.assertIn("position " + what.split("position ")[1], message)
            self.assertNotIn("SECRET", message)
        with mock.patch.dict(os.environ, {"TOKENPROXY_API_KEY": secret + "\r\n"}):
            with self.assertRaises(ValueError) as cm:
                TokenProxy(base_url="https://tp.example")
            self.assertNotIn("SECRET", str(cm.exception))
        TokenProxy(api_key=secret, base_url="https://tp.example")


class ErrorFieldsTest(unittest.TestCase):
    """The fields follow the Node client's toError and parseJson (clients/node/src/responses.ts)."""

    def error(self, status: int, headers: Dict[str, str], body: Any) -> TokenProxyError:
        c, _ = fake_client([(status, headers, body)], max_retries=0)
        with self.assertRaises(TokenProxyError) as cm:
            c.account.get()
        return cm.exception

    def test_a_body_that_is_not_json(self) -> None:
        headers = {"x-request-id": "req_lb", "content-type": "text/html"}
        err = self.error(502, headers, b"<html><h1>502 Bad Gateway</h1></html>")
        self.assertIsInstance(err, InternalServerError)
        self.assertEqual(
            (err.status, err.code, err.message, err.request_id, err.type, err.param, err.headers),
            (502, "http_502", "The API answered with status 502.", "req_lb", None, None, headers),
        )
        self.assertEqual(self.error(503, {}, b"\xff\xfe").code, "http_503")

    def test_an_error_body_without_a_code(self) -> None:
        err = self.error(404, {"x-request-id": "req_h"}, {"error": {"message": "gone", "request_id": "req_b"}})
        self.assertIsInstance(err, NotFoundError)
        self.assertEqual((err.code, err.message, err.request_id), ("http_404", "gone", "req_b"))
        self.assertEqual(self.error(400, {}, {"error": "no object"}).code, "http_400")
        self.assertEqual(self.error(400, {}, {"error": {"code": 7}}).code, "http_400")

    def test_undecodable_bytes_do_not_hide_the_code(self) -> None:
        # Node decodes the body with U+FFFD for bad bytes, so its JSON still parses.
        err = self.error(400, {}, b'{"error":{"code":"invalid_parameter","message":"caf\xe9"}}')
        self.assertEqual((err.code, err.message), ("invalid_parameter", "caf\ufffd"))

    def test_empty_strings_in_the_body_are_kept(self) -> None:
        # Node's `??` falls back only when the field is missing.
        err = self.error(400, {"x-request-id": "req_h"}, {"error": {"code": "", "message": "", "request_id": ""}})
        self.assertEqual((err.code, err.message, err.request_id), ("", "", ""))

    def test_a_success_body_that_is_not_json(self) -> None:
        headers = {"x-request-id": "req_ok", "content-type": "text/plain"}
        err = self.error(200, headers, b"OK")
        self.assertIs(type(err), TokenProxyError)
        self.assertEqual(
            (err.status, err.code, err.request_id, err.headers), (200, "invalid_response", "req_ok", headers)
        )


class StubAPI(http.server.BaseHTTPRequestHandler):
    """/v1/tokens answers a page, /v1/account a load balancer's HTML 502, /v1/logs drops the
    connection, /v1/keys never answers, /v1/audit sends its body a byte at a time, /v1/webhooks its
    headers."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        path = self.path.split("?")[0]
        if path == "/v1/tokens":
            self.answer(200, "application/json", b'{"object":"list","data":[],"has_more":false}')
        elif path == "/v1/account":
            self.answer(502, "text/html", b"<html>502 Bad Gateway</html>")
        elif path == "/v1/keys":
            self.server.release.wait(10)  # type: ignore[attr-defined]
        elif path == "/v1/audit":
            body = b'{"object":"list","data":[],"has_more":false}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.trickle(body)
        elif path == "/v1/webhooks":
            self.trickle(b"X-Slowly: " + b"a" * 45 + b"\r\n", head=b"HTTP/1.1 200 OK\r\n")
        self.close_connection = True

    def trickle(self, slow: bytes, head: bytes = b"") -> None:
        """Writes `head` at once, then `slow` a byte every 0.1 s until the test releases the server."""
        try:
            self.wfile.write(head)
            for byte in slow:
                if self.server.release.wait(0.1):  # type: ignore[attr-defined]
                    break
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
        except OSError:
            pass  # the client gave up, as it should

    def answer(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Request-Id", "req_stub")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class RealTransportTest(unittest.TestCase):
    """The transport closes every response and every connection it does not keep: answers, error
    answers, retries, drops and timeouts leave no socket to the garbage collector. (This stub answers
    in HTTP/1.0 and closes, so nothing is kept; test_connections.py covers kept connections.)"""

    def setUp(self) -> None:
        fail_on_unclosed(self)
        self.waits = stub_client_sleep(self)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StubAPI)
        server.release = threading.Event()  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.addCleanup(server.release.set)  # type: ignore[attr-defined]
        base_url = f"http://127.0.0.1:{server.server_address[1]}"
        self.client = TokenProxy(api_key="svc_sk_test", base_url=base_url, max_retries=1, timeout=0.5)

    def test_success(self) -> None:
        self.assertEqual(self.client.tokens.list().data, [])

    def test_error_answer_retried_then_raised(self) -> None:
        with self.assertRaises(InternalServerError) as cm:
            self.client.account.get()
        self.assertEqual((cm.exception.code, cm.exception.request_id), ("http_502", "req_stub"))
        self.assertEqual(len(self.waits), 1)

    def test_dropped_connection_retried_then_raised(self) -> None:
        with self.assertRaises(APIConnectionError) as cm:
            self.client.logs.list()
        self.assertEqual(cm.exception.code, "connection_error")
        self.assertEqual(len(self.waits), 1)

    def test_timeout_retried_then_raised(self) -> None:
        with self.assertRaises(APITimeoutError):
            self.client.keys.list()
        self.assertEqual(len(self.waits), 1)

    def test_timeout_holds_for_an_answer_that_trickles(self) -> None:
        # Each byte comes well within the timeout, the whole answer (4.5 s) never does.
        with self.assertRaises(APITimeoutError):
            self.client.audit.list()
        self.assertEqual(len(self.waits), 1)

    def test_timeout_holds_for_headers_that_trickle(self) -> None:
        # The status line comes at once, each header byte within the timeout, the headers never.
        started = time.monotonic()
        with self.assertRaises(APITimeoutError):
            self.client.webhooks.list()
        self.assertEqual(len(self.waits), 1)
        # Two attempts of 0.5 s each (the retry's wait is stubbed), not the header's 5.7 s.
        self.assertLess(time.monotonic() - started, 3.0)


def sign(secret: str, msg_id: str, ts: int, body: bytes) -> str:
    key = base64.b64decode(secret[len("whsec_"):])
    digest = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


class VerifyWebhookTest(unittest.TestCase):
    secret = "whsec_" + base64.b64encode(os.urandom(24)).decode()
    other = "whsec_" + base64.b64encode(os.urandom(24)).decode()
    payload = json.dumps(
        {"id": "evt_1", "type": "token.revoked", "created_at": "2030-01-01T00:00:00.000Z", "data": {"token_id": "a"}}
    ).encode()

    def headers(self, sig: str, ts: Optional[int] = None, msg_id: str = "evt_1") -> Dict[str, str]:
        return {
            "Webhook-Id": msg_id,
            "Webhook-Timestamp": str(int(time.time()) if ts is None else ts),
            "Webhook-Signature": sig,
        }

    def test_accepts_a_signed_payload(self) -> None:
        ts = int(time.time())
        event = verify_webhook(self.payload, self.headers("v1," + sign(self.secret, "evt_1", ts, self.payload), ts), self.secret)
        self.assertEqual((event.id, event.type, event.data), ("evt_1", "token.revoked", {"token_id": "a"}))
        good = "v1," + sign(self.secret, "evt_1", ts, self.payload)
        bad = "v1," + sign(self.other, "evt_1", ts, self.payload)
        self.assertEqual(verify_webhook(self.payload.decode(), self.headers(f"{bad} {good}", ts), self.secret).id, "evt_1")

    def test_refuses_tampering_and_stale_timestamps(self) -> None:
        ts = int(time.time())
        good = "v1," + sign(self.secret, "evt_1", ts, self.payload)
        cases = [
            (self.payload + b" ", self.headers(good, ts)),
            (self.payload, self.headers(good, ts, "evt_2")),
            (self.payload, self.headers("v1," + sign(self.other, "evt_1", ts, self.payload), ts)),
            (self.payload, self.headers(good.replace("v1,", "v2,"), ts)),
            (self.payload, self.headers("v1," + sign(self.secret, "evt_1", ts - 301, self.payload), ts - 301)),
            (self.payload, self.headers("v1," + sign(self.secret, "evt_1", ts + 301, self.payload), ts + 301)),
            (self.payload, {"webhook-id": "evt_1"}),
        ]
        for body, headers in cases:
            with self.assertRaises(WebhookVerificationError):
                verify_webhook(body, headers, self.secret)


if __name__ == "__main__":
    unittest.main()
