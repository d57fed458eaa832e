"""The garbage collector's thresholds while kraftlog holds long-lived objects (``files.heap``)."""

import gc

import pytest

from kraftlog.files.heap import READING, REPLAYING, rare_collections


@pytest.fixture
def defaults():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_the_highest_asked_for_holds_until_the_last_holder_ends_in_any_order(defaults):
    reading, task = rare_collections(READING), rare_collections((100_000, 50, 100))
    reading.__enter__()
    assert gc.get_threshold() == (700, 1000, 1000)
    task.__enter__()
    assert gc.get_threshold() == (100_000, 1000, 1000)
    reading.__exit__(None, None, None)  # the first to begin ends first
    assert gc.get_threshold() == (100_000, 50, 100)
    with rare_collections(REPLAYING):
        assert gc.get_threshold() == (100_000, 50, 1000)
    assert gc.get_threshold() == (100_000, 50, 100)
    task.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)


def test_thresholds_someone_else_set_meanwhile_are_theirs(defaults):
    with rare_collections(READING):
        gc.set_threshold(700, 10, 7)
    assert gc.get_threshold() == (700, 10, 7)
    with rare_collections(REPLAYING):  # what it finds now is what it puts back
        assert gc.get_threshold() == (700, 10, 1000)
    assert gc.get_threshold() == (700, 10, 7)


def test_an_exception_puts_the_thresholds_back(defaults):
    with pytest.raises(KeyError), rare_collections(REPLAYING):
        raise KeyError
    assert gc.get_threshold() == (700, 10, 10)
