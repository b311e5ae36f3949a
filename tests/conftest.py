import pytest

from corpora import shared_path


@pytest.fixture
def shared():
    """Return a function giving ``shared/<parts>`` or skipping the test when absent."""

    def get(*parts):
        p = shared_path(*parts)
        if p is None:
            pytest.skip(f"../shared/{'/'.join(parts)} not available")
        return p

    return get
