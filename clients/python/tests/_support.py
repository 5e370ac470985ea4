import gc
import os
import select
import signal
import sys
import unittest
import warnings
from typing import Any, Callable, List

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


class Forked:
    """``call`` run in a forked child of this process. ``result()`` is the repr of what it returned,
    or ``raised …``, or ``hung`` when the child did not finish within ``seconds`` (it is then
    killed). The child ends with ``os._exit``: nothing of the parent's test run goes on in it."""

    def __init__(self, call: Callable[[], object], seconds: float = 10.0) -> None:
        self._seconds = seconds
        self._reader, writer = os.pipe()
        with warnings.catch_warnings():
            # Python 3.12+ warns of forking a process that runs threads: what is tested here.
            warnings.simplefilter("ignore", DeprecationWarning)
            self._pid = os.fork()
        if self._pid == 0:
            try:
                os.close(self._reader)
                try:
                    outcome = repr(call())
                except BaseException as err:  # noqa: BLE001 - reported to the parent
                    outcome = f"raised {err!r}"
                os.write(writer, outcome.encode())
            finally:
                os._exit(0)
        os.close(writer)

    def result(self) -> str:
        try:
            ready, _, _ = select.select([self._reader], [], [], self._seconds)
            if not ready:
                os.kill(self._pid, signal.SIGKILL)
                return "hung"
            return os.read(self._reader, 65536).decode() or "no answer"
        finally:
            os.close(self._reader)
            os.waitpid(self._pid, 0)
