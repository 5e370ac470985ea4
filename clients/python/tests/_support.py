import os
import sys

# Tests run from a checkout, without installing the package.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

ENV = os.environ
BASE_URL = ENV.get("TOKENPROXY_TEST_BASE_URL")
CA_FILE = ENV.get("TOKENPROXY_TEST_CA_FILE")
API_KEYS = [k for k in ENV.get("TOKENPROXY_TEST_API_KEYS", "").split(",") if k]
FREE_API_KEY = ENV.get("TOKENPROXY_TEST_FREE_API_KEY")
DROP_URL = ENV.get("TOKENPROXY_TEST_DROP_URL")
#: A TCP pass-through to the server that counts connections (the Node side checks the count).
COUNT_URL = ENV.get("TOKENPROXY_TEST_COUNT_URL")
HAS_WEBHOOKS = ENV.get("TOKENPROXY_TEST_HAS_WEBHOOKS") == "1"
SERVER = BASE_URL is not None and CA_FILE is not None and len(API_KEYS) >= 3
