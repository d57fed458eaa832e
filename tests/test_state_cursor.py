"""The cursor's image after any walk of moves equals ``rebuild`` at the same point, and the shell's
JSON tree has exactly the layout of the metadata-shell tree."""

import random

import pytest

from conftest import REPO
from kraftlog.files.logdir import find_nodes
from kraftlog.state.cursor import END, Cursor, Point, Unanswerable
from kraftlog.state.rebuild import rebuild
from kraftlog.state.tree import image_tree, node_json


def _copies():
    return [n for path in ("fixtures/single-node", "fixtures/three-nodes") for n in find_nodes(REPO / path)]


@pytest.mark.parametrize("node", _copies(), ids=lambda n: n.name)
def test_any_walk_of_moves_equals_rebuild(node):
    cursor = Cursor(node)
    first, last = rebuild(node, offset=0).image.provenance, rebuild(node).image.provenance
    r = random.Random(node.name)
    walk = [Point(offset=r.randrange(0, last.offset + 1)) for _ in range(12)]
    walk += [Point(time_ms=r.randrange(first.timestamp, last.timestamp + 1)) for _ in range(12)]
    r.shuffle(walk)
    # forward in small steps too, where only the records in between are applied
    walk += [Point(offset=o) for o in range(last.offset - 40, last.offset + 1, 7)] + [END]
    for point in walk:
        got = cursor.move(point).image
        expected = rebuild(node, offset=point.offset, time_ms=point.time_ms).image
        assert got.to_json(redact=False) == expected.to_json(redact=False), point
        assert (got.transaction is None) == (expected.transaction is None)


def test_a_time_move_after_an_offset_move_stops_where_rebuild_stops():
    """Forward by time is only taken when every record applied so far is at or before the time."""
    node = find_nodes(REPO / "fixtures/single-node")[0]
    cursor = Cursor(node)
    cursor.move(Point(offset=3000))
    t = rebuild(node, offset=2000).image.provenance.timestamp
    assert cursor.move(Point(time_ms=t)).image.to_json() == rebuild(node, time_ms=t).image.to_json()
    assert cursor.image.provenance.offset < 3000


def test_refused_moves_leave_the_cursor_where_it_was():
    node = find_nodes(REPO / "fixtures/single-node")[0]
    cursor = Cursor(node)
    cursor.move(Point(offset=4000))
    with pytest.raises(Unanswerable):
        cursor.move(Point(time_ms=0))
    assert cursor.image.provenance.offset == 4000
    assert cursor.move(Point(offset=4100)).image.to_json() == rebuild(node, offset=4100).image.to_json()


@pytest.mark.parametrize("offset", [100, 5000, 8432])
def test_json_tree_has_the_layout_of_the_shell_tree(offset):
    image = rebuild(find_nodes(REPO / "fixtures/single-node")[0], offset=offset).image
    checked = 0

    def walk(text_node, json_node):
        nonlocal checked
        if isinstance(text_node, dict):
            assert isinstance(json_node, dict) and set(text_node) == set(json_node)
            for name in text_node:
                walk(text_node[name], json_node[name])
        checked += 1

    walk(image_tree(image), node_json(image, []))
    assert checked > 20
    # a path resolved alone gives the same node as the whole tree does
    whole = node_json(image, [])
    for name in whole["topics"]["byName"]:
        assert node_json(image, ["topics", "byName", name]) == whole["topics"]["byName"][name]
    with pytest.raises(KeyError):
        node_json(image, ["topics", "byName", "no-such-topic"])


def test_a_move_interrupted_halfway_is_forgotten_and_the_next_move_starts_afresh(monkeypatch):
    node = find_nodes(REPO / "fixtures/single-node")[0]
    cursor = Cursor(node)
    cursor.move(Point(offset=3000))
    applied = 0
    real_apply = Cursor.apply

    def interrupted(self, entry):
        nonlocal applied
        applied += 1
        if applied == 50:
            raise KeyboardInterrupt
        real_apply(self, entry)

    monkeypatch.setattr(Cursor, "apply", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cursor.move(Point(offset=3500))
    monkeypatch.setattr(Cursor, "apply", real_apply)
    assert cursor.lost and cursor.point == Point(offset=3000)
    assert cursor.move(Point(offset=3500)).image.to_json() == rebuild(node, offset=3500).image.to_json()
