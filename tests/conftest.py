import pytest
from suffixlm.corpora import shared_path


@pytest.fixture
def shared():
    """Return a function giving ``shared/<parts>`` or skipping the test when absent."""

    def get(*parts):
        p = shared_path(*parts)
        if p is None:
            pytest.skip(f"../shared/{'/'.join(parts)} not available")
        return p

    return get


def pytest_collection_modifyitems(config, items):
    # A test on the ../shared corpora is slow by definition: `-m "not slow"` leaves it out.
    for item in items:
        if "shared" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


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
