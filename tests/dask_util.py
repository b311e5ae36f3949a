"""Helpers of the Dask tests (skipped where distributed is absent)."""

import os

import pytest


@pytest.fixture
def killable_client():
    """A cluster of two single-threaded workers of the test's own, closed after it: a test
    that kills a worker never waits on the restart (slow on a loaded machine), and the next
    test starts with two live workers."""
    pytest.importorskip("distributed")
    from suffixlm.distributed import client_from_options

    with client_from_options(workers=2) as c:
        c.wait_for_workers(2, timeout=120)
        yield c


def kill_once_plugin(marker, key_part: str, also: str = ""):
    """A worker plugin that ends its worker process (``os._exit``) the first time a task
    whose key contains ``key_part`` (and ``also``) starts executing, once per ``marker``
    file: the class is made here, inside a function, so that it travels to the workers by
    value."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class KillOnce(WorkerPlugin):
        name = "kill-once"

        def __init__(self, marker, key_part, also):
            self.marker = str(marker)
            self.key_part = key_part
            self.also = also

        def transition(self, key, start, finish, **kw):
            k = key if isinstance(key, str) else str(key)
            if (finish == "executing" and self.key_part in k and self.also in k
                    and not os.path.exists(self.marker)):
                open(self.marker, "w").close()
                os._exit(1)

    return KillOnce(marker, key_part, also)
