"""Against a real ``tokenproxy serve`` started by test/clients/python.test.ts (env TOKENPROXY_TEST_*)."""

import http.server
import re
import threading
import time
import unittest
from typing import Any, Dict, List

from _support import (
    API_KEYS,
    BASE_URL,
    CA_FILE,
    COUNT_URL,
    DROP_URL,
    FREE_API_KEY,
    SERVER,
    fail_on_unclosed,
)

import tokenproxy
from tokenproxy import (
    PermissionDeniedError,
    APICertificateError,
    APIConnectionError,
    AuthenticationError,
    Budget,
    ConflictError,
    CreatedToken,
    InvalidRequestError,
    NotFoundError,
    PlanLimitError,
    RateLimit,
    Token,
    TokenProxy,
    TokenProxyError,
    WebhookVerificationError,
    verify_webhook,
)

SANITIZED = re.compile(r"^svc_hb_[1-9A-HJ-NP-Za-km-z]{43}$")
TOKEN_ID = re.compile(r"^[1-9A-HJ-NP-Za-km-z]{43}$")


def client(api_key: str, base_url: Any = None, **kwargs: Any) -> TokenProxy:
    return TokenProxy(api_key=api_key, base_url=base_url or BASE_URL, ca_file=CA_FILE, **kwargs)


def create(c: TokenProxy, name: str = "web app") -> CreatedToken:
    return c.tokens.create(
        name=name,
        provider="openai",
        real_key="sk-test-0123456789abcdefWXYZ",
        allowed_hosts=["app.example.com", "localhost"],
    )


@unittest.skipUnless(SERVER, "no server: run through npm test (test/clients/python.test.ts)")
class ServerTest(unittest.TestCase):
    def setUp(self) -> None:
        fail_on_unclosed(self)

    def test_tokens_create_list_get_revoke(self) -> None:
        c = client(API_KEYS[0])
        created = c.tokens.create(
            name="web app",
            provider="openai",
            real_key="sk-test-0123456789abcdefWXYZ",
            allowed_hosts=["app.example.com"],
            allowed_ips=["10.0.0.0/8"],
            rate_limit={"requests": 100, "window": "1m"},
        )
        self.assertIsInstance(created, CreatedToken)
        self.assertRegex(created.sanitized_key, SANITIZED)
        self.assertRegex(created.id, TOKEN_ID)
        self.assertEqual(created.authorized_origins, ["app.example.com"])
        self.assertEqual(created.authorized_ips, ["10.0.0.0/8"])
        self.assertEqual(created.rate_limit, RateLimit(requests=100, window="1m"))
        self.assertTrue(created.proxy_base_url.endswith("/openai"))
        self.assertNotIn(created.sanitized_key, repr(created))

        got = c.tokens.get(created.id)
        self.assertIsInstance(got, Token)
        self.assertEqual(got.id, created.id)
        self.assertEqual(got.status, "active")
        self.assertIn(created.id, [t.id for t in c.tokens.list().data])

        revoked = c.tokens.revoke(created.id)
        self.assertEqual(revoked.status, "revoked")
        self.assertIsNotNone(revoked.revoked_at)
        self.assertEqual(c.tokens.revoke(created.id).revoked_at, revoked.revoked_at)
        self.assertIn(created.id, [t.id for t in c.tokens.list(status="revoked")])

    def test_keys_create_get_rotate_delete(self) -> None:
        c = client(API_KEYS[0])
        key = c.keys.create(name="prod", provider="openai", real_key="sk-prod-0123456789abcdefAAAA")
        self.assertTrue(key.id.startswith("key_"))
        self.assertEqual(key.hint, "AAAA")
        token = c.tokens.create(name="x", provider="openai", key_id=key.id, allowed_hosts=["a.example"])
        self.assertEqual(token.real_key_ref, key.id)
        self.assertEqual(c.keys.get(key.id).token_count, 1)
        rotated = c.keys.rotate(key.id, real_key="sk-prod-0123456789abcdefBBBB")
        self.assertEqual(rotated.hint, "BBBB")
        self.assertIn(key.id, [k.id for k in c.keys.list()])
        self.assertIsNotNone(c.keys.delete(key.id).deleted_at)
        self.assertEqual(c.tokens.get(token.id).status, "revoked")
        with self.assertRaises(ConflictError) as cm:
            c.keys.rotate(key.id, real_key="sk-x-0123456789abcdef")
        self.assertEqual(cm.exception.code, "key_deleted")

    def test_account_providers_logs_anomalies(self) -> None:
        c = client(API_KEYS[0])
        account = c.account.get()
        self.assertTrue(account.id.startswith("acct_"))
        self.assertEqual(account.plan, "unlimited")
        updated = c.account.update(name="renamed", alert_email="ops@example.com")
        self.assertEqual((updated.name, updated.alert_email), ("renamed", "ops@example.com"))
        self.assertIsNone(c.account.update(alert_email=None).alert_email)
        self.assertEqual(c.account.update().name, "renamed")
        self.assertIn("openai", [p.id for p in c.providers.list()])
        self.assertEqual(c.logs.list(authorized=False).data, [])
        self.assertEqual(c.anomalies.list().data, [])

    def test_api_keys_scopes_and_the_audit_log(self) -> None:
        c = client(API_KEYS[3])
        reader = c.api_keys.create(name="py-dashboards", scope="read")
        self.assertEqual((reader.name, reader.scope), ("py-dashboards", "read"))
        self.assertTrue(reader.id.startswith("ak_"))
        self.assertTrue(reader.api_key.startswith("svc_sk_"))
        self.assertNotIn(reader.api_key, repr(reader))
        ops = c.api_keys.create(name="py-ops")
        self.assertEqual(ops.scope, "full")
        names = [k.name for k in c.api_keys.list()]
        self.assertIn("py-dashboards", names)
        self.assertIn("py-ops", names)

        read_only = client(reader.api_key)
        read_only.tokens.list()
        with self.assertRaises(PermissionDeniedError) as refused:
            create(read_only)
        self.assertEqual(refused.exception.code, "insufficient_scope")

        token = create(client(ops.api_key), "py-audited")
        entries = c.audit.list(object_id=token.id).data
        self.assertEqual(len(entries), 1)
        self.assertEqual(entries[0].action, "token.created")
        self.assertEqual((entries[0].actor.type, entries[0].actor.id, entries[0].actor.name), ("api_key", ops.id, "py-ops"))
        created = [e.object_id for e in c.audit.list(action="api_key.created")]
        self.assertEqual(created[:2], [ops.id, reader.id])

        self.assertEqual(c.api_keys.delete(reader.id).id, reader.id)
        with self.assertRaises(AuthenticationError):
            read_only.tokens.list()
        # The account is shared with the kill-switch test, which counts the tokens it revokes.
        c.tokens.revoke(token.id)

    def test_update_revoke_all_and_usage(self) -> None:
        c = client(API_KEYS[3])
        a = create(c, "a")
        b = create(c, "b")
        edited = c.tokens.update(a.id, name="a2", allowed_hosts=["*.example.org"], rate_limit={"requests": 5, "window": "1m"})
        self.assertEqual((edited.id, edited.name, edited.authorized_origins), (a.id, "a2", ["*.example.org"]))
        self.assertEqual(edited.rate_limit, RateLimit(requests=5, window="1m"))
        self.assertIsNone(c.tokens.update(a.id, rate_limit=None).rate_limit)
        self.assertEqual(c.tokens.update(a.id).name, "a2")
        revoked = c.tokens.revoke_all()
        self.assertEqual(sorted(t.id for t in revoked), sorted([a.id, b.id]))
        self.assertTrue(all(isinstance(t, Token) and t.status == "revoked" for t in revoked))
        self.assertEqual(c.tokens.revoke_all(), [])
        usage = c.usage.get(window="24h", bucket="1h")
        self.assertEqual(len(usage.buckets), 24)
        self.assertEqual(usage.forwarded, 0)
        self.assertEqual(usage.refused_by_reason["origin_or_ip_not_allowed"], 0)
        self.assertEqual((usage.spend or {}).get("cost_micros"), 0)

    def test_budgets_on_tokens_and_the_account(self) -> None:
        c = client(API_KEYS[3])
        t = c.tokens.create(
            name="budgeted",
            provider="openai",
            allowed_hosts=["app.example.com"],
            real_key="sk-python-budget-0000000000",
            budget={"amount_usd": 20, "period": "month"},
        )
        self.assertEqual(t.budget, Budget(period="month", amount_usd=20))
        changed = c.tokens.update(t.id, budget={"tokens": 2000000, "period": "day"})
        self.assertEqual(changed.budget, Budget(period="day", tokens=2000000))
        account = c.account.update(budget={"amount_usd": 100, "period": "total"})
        self.assertEqual(account.budget, Budget(period="total", amount_usd=100))
        usage = c.usage.get()
        scopes = {(b["scope"], b["token_id"]) for b in usage.budgets or []}
        self.assertIn(("token", t.id), scopes)
        self.assertIn(("account", None), scopes)
        self.assertIsNone(c.tokens.update(t.id, budget=None).budget)
        self.assertIsNone(c.account.update(budget=None).budget)
        c.tokens.revoke(t.id)  # leaves the account's active tokens as the other tests expect

    def test_errors_carry_status_code_param_and_request_id(self) -> None:
        c = client(API_KEYS[0])
        with self.assertRaises(NotFoundError) as nf:
            c.tokens.get("1" * 43)
        self.assertEqual((nf.exception.status, nf.exception.code), (404, "token_not_found"))
        self.assertRegex(nf.exception.request_id or "", r"^req_")
        self.assertIsInstance(nf.exception, TokenProxyError)
        with self.assertRaises(InvalidRequestError) as bad:
            c.tokens.create(
                name="x", provider="openai", real_key="sk-0123456789abc", allowed_hosts=["https://a.example/p"]
            )
        self.assertEqual((bad.exception.code, bad.exception.param), ("invalid_parameter", "allowed_hosts[0]"))
        wrong = "svc_sk_" + "1" * 43
        with self.assertRaises(AuthenticationError) as auth:
            client(wrong).account.get()
        self.assertEqual(auth.exception.code, "invalid_api_key")
        self.assertNotIn(wrong, str(auth.exception) + repr(client(wrong)))

        assert FREE_API_KEY is not None
        free = client(FREE_API_KEY)
        made = [create(free, f"free {i}") for i in range(3)]
        try:
            with self.assertRaises(PlanLimitError) as limit:
                create(free, "fourth")
            self.assertEqual((limit.exception.status, limit.exception.code), (403, "plan_limit_exceeded"))
        finally:
            for token in made:
                free.tokens.revoke(token.id)

    def test_pagination_across_pages(self) -> None:
        c = client(API_KEYS[1])
        ids = [create(c, f"t{i}").id for i in range(5)][::-1]
        first = c.tokens.list(limit=2)
        self.assertEqual([t.id for t in first.data], ids[:2])
        self.assertTrue(first.has_more)
        self.assertIsInstance(first.next_cursor, str)
        second = first.next_page()
        assert second is not None
        self.assertEqual([t.id for t in second.data], ids[2:4])
        self.assertEqual([t.id for t in c.tokens.list(limit=2)], ids)

    @unittest.skipUnless(DROP_URL, "no dropping proxy")
    def test_retry_after_dropped_connection_creates_one_token(self) -> None:
        c = client(API_KEYS[2], base_url=DROP_URL, max_retries=2)
        created = create(c, "retried")
        self.assertRegex(created.sanitized_key, SANITIZED)
        direct = client(API_KEYS[2])
        self.assertEqual([t.id for t in direct.tokens.list()], [created.id])
        self.assertEqual(len(direct.keys.list().data), 1)

    def test_custom_ca_is_required_for_the_self_signed_server(self) -> None:
        c = TokenProxy(api_key=API_KEYS[0], base_url=BASE_URL, max_retries=0)
        with self.assertRaises(APIConnectionError) as cm:
            c.account.get()
        self.assertRegex(str(cm.exception.__cause__), r"(?i)certificate")

    @unittest.skipUnless(COUNT_URL, "no counting proxy")
    def test_untrusted_certificate_says_how_to_trust_it_and_is_not_retried(self) -> None:
        c = TokenProxy(api_key=API_KEYS[0], base_url=COUNT_URL, max_retries=2)
        with self.assertRaises(APICertificateError) as cm:
            c.tokens.create(
                name="x", provider="openai", real_key="sk-test-0123456789abcdefWXYZ", allowed_hosts=["a.com"]
            )
        err = cm.exception
        self.assertIsInstance(err, APIConnectionError)
        self.assertEqual(err.code, "certificate_untrusted")
        self.assertIsNone(err.status)
        self.assertIn("ca_file='tokenproxy-data/tls/cert.pem'", err.message)
        self.assertNotIn(API_KEYS[0], str(err))
        # Trusting the generated certificate works through the same hop (the Node side counts 2).
        self.assertEqual(client(API_KEYS[0], base_url=COUNT_URL).account.get().plan, "unlimited")

    def test_webhooks_and_a_real_delivery(self) -> None:
        received: List[Dict[str, Any]] = []

        class Receiver(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                received.append({"body": body, "headers": dict(self.headers.items())})
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            c = client(API_KEYS[0])
            url = f"http://127.0.0.1:{server.server_address[1]}/hook"
            hook = c.webhooks.create(url=url, events=["token.revoked"])
            self.assertTrue(hook.id.startswith("wh_"))
            self.assertTrue(hook.secret.startswith("whsec_"))
            self.assertEqual(c.webhooks.get(hook.id).url, url)
            self.assertIn(hook.id, [w.id for w in c.webhooks.list()])
            token = create(c, "watched")
            c.tokens.revoke(token.id)
            deadline = time.time() + 20
            while not received and time.time() < deadline:
                time.sleep(0.1)
            self.assertTrue(received, "no webhook delivery within 20 s")
            event = verify_webhook(received[0]["body"], received[0]["headers"], hook.secret)
            self.assertEqual(event.type, "token.revoked")
            with self.assertRaises(WebhookVerificationError):
                verify_webhook(received[0]["body"] + b" ", received[0]["headers"], hook.secret)
            self.assertIn(event.id, [e.id for e in c.events.list(type="token.revoked")])
            deliveries = c.webhooks.deliveries(hook.id).data
            for _ in range(50):
                if deliveries and deliveries[0].status == "delivered":
                    break
                time.sleep(0.1)
                deliveries = c.webhooks.deliveries(hook.id).data
            self.assertEqual((deliveries[0].event_id, deliveries[0].event_type), (event.id, "token.revoked"))
            self.assertEqual(deliveries[0].status, "delivered")
            self.assertEqual(c.webhooks.delete(hook.id).id, hook.id)
        finally:
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    unittest.main()

_ = tokenproxy
