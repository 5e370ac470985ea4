"""Parts that need no server: retries and idempotency keys (fake transport), the webhook verifier."""

import base64
import hashlib
import hmac
import json
import os
import time
import unittest
from typing import Any, Dict, List, Optional, Tuple

from _support import ENV  # noqa: F401 - puts src/ on sys.path

from tokenproxy import (
    APIConnectionError,
    InternalServerError,
    InvalidRequestError,
    RateLimitError,
    TokenProxy,
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
        return status, headers_out, json.dumps(payload).encode()


def fake_client(answers: List[Optional[Answer]], max_retries: int = 3) -> Tuple[TokenProxy, FakeTransport]:
    c = TokenProxy(api_key="svc_sk_test", base_url="https://tp.example", max_retries=max_retries)
    fake = FakeTransport(answers)
    c._transport = fake
    return c, fake


CREATED = {"token_id": "abc", "sanitized_key": "svc_hb_x", "name": "n", "rate_limit": None}


class RetryTest(unittest.TestCase):
    def setUp(self) -> None:
        self._sleep = _client.time.sleep
        _client.time.sleep = lambda s: None  # type: ignore[assignment]

    def tearDown(self) -> None:
        _client.time.sleep = self._sleep  # type: ignore[assignment]

    def test_retries_network_5xx_429_with_one_idempotency_key(self) -> None:
        c, fake = fake_client([None, (503, {}, {}), (429, {"retry-after": "0"}, {}), (201, {}, CREATED)])
        token = c.tokens.create(name="n", provider="openai", real_key="sk-x", allowed_hosts=["a.example"])
        self.assertEqual((token.id, token.sanitized_key), ("abc", "svc_hb_x"))
        self.assertEqual(len(fake.calls), 4)
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
