import gc
import os
import sys
import unittest
import warnings
from typing import Any, List

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
SERVER = BASE_URL is not None and CA_FILE is not None and len(API_KEYS) >= 3


def fail_on_unclosed(test: unittest.TestCase) -> None:
    """Makes ``test`` fail when it leaves a socket or file unclosed. Their ResourceWarning is raised
    in ``__del__``, where an exception is only printed, so it is caught by sys.unraisablehook."""
    leaks: List[str] = []
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, ResourceWarning):
            leaks.append(str(unraisable.exc_value))
        else:
            previous(unraisable)

    filters = warnings.catch_warnings()
    filters.__enter__()
    warnings.simplefilter("error", ResourceWarning)
    sys.unraisablehook = hook

    def restore() -> None:
        sys.unraisablehook = previous
        filters.__exit__(None, None, None)

    def check() -> None:
        gc.collect()  # what a reference cycle still holds
        if leaks:
            test.fail("left unclosed: " + "; ".join(leaks))

    # Cleanups run last in, first out: check while the hook is still in place.
    test.addCleanup(restore)
    test.addCleanup(check)
