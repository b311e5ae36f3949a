"""Helpers of the Dask tests (skipped where distributed is absent)."""

import os


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
