"""``kraftlog shell`` in script mode (-c and standard input): every ``cat`` after every ``at`` move
(forward, backward, by offset and by time) equals what ``replay`` prints for the same point."""

import json
import os
import random
import subprocess
import sys

import pytest

from conftest import CORPUS, REPO
from kraftlog.cli.main import main

SINGLE = REPO / "fixtures/single-node"
THREE = REPO / "fixtures/three-nodes"
REAL = CORPUS / "real/greenlemonT__kafka-temp/data/kafka1"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def documents(text: str) -> list:
    """The JSON documents ``cat`` printed one after another."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        doc, i = decoder.raw_decode(text, i)
        out.append(doc)
    return out


def replayed(capsys, path, point: list[str], node: list[str]) -> dict:
    code, out, _ = run(capsys, "replay", path, *node, *point)
    assert code == 0
    return json.loads(out)


CATS = "cat /image/provenance; cat /image/topics/byName; cat /image/cluster/brokers; cat /image/configs; " \
       "cat /image/features"


def as_replay(docs: list) -> dict:
    """The shell's nodes in the shape of ``replay``'s JSON, to compare value for value."""
    provenance, by_name, brokers, configs, features = docs
    return {
        "provenance": provenance,
        "topics": {name: {"topicId": t["id"], "partitions": {k: v for k, v in t.items() if k not in ("name", "id")}}
                   for name, t in by_name.items()},
        "brokers": brokers,
        "configs": {(k if ":" in k else k + ":"): v for k, v in configs.items()},
        "finalized": {k.removeprefix("finalized_"): v for k, v in features.items() if k.startswith("finalized_")},
    }


def replay_view(image: dict) -> dict:
    return {
        "provenance": image["provenance"],
        "topics": image["topics"],
        "brokers": image["brokers"],
        "configs": image["configs"],
        "finalized": {k: v for k, v in image["features"].items() if k != "metadata.version"},
    }


def points(path, node: list[str], seed: str) -> list[list[str]]:
    """A walk of points (offsets and times, forward and backward) inside the node's log."""
    from kraftlog.files.logdir import find_nodes
    from kraftlog.state.rebuild import rebuild

    copies = find_nodes(path)
    copy = next(c for c in copies if not node or c.node_id == int(node[1])) if len(copies) > 1 else copies[0]
    first, last = rebuild(copy, offset=0).image.provenance, rebuild(copy).image.provenance
    r = random.Random(seed)
    walk = []
    for _ in range(5):
        walk.append(["--offset", str(r.randrange(0, last.offset + 1))])
        walk.append(["--time", str(r.randrange(first.timestamp, last.timestamp + 1))])
    return walk


@pytest.mark.parametrize(("path", "node"), [(SINGLE, []), (THREE, ["--node", "3"]), (THREE, ["--node", "1"]),
                                            (REAL, [])], ids=["single-node", "three-nodes-3", "three-nodes-1", "real"])
def test_cat_after_each_move_equals_replay(capsys, path, node):
    if not path.is_dir():
        pytest.skip("the shared corpus (../shared/corpus) is absent")
    # the points are drawn from the path inside the repository or corpus, not from where it is checked out
    walk = points(path, node, path.relative_to(REPO if path.is_relative_to(REPO) else CORPUS).as_posix())
    script = "; ".join(f"at {p[1] if p[0] == '--offset' else 't:' + p[1]}; {CATS}" for p in walk)
    code, out, err = run(capsys, "shell", path, *node, "-c", script)
    assert code == 0, err
    docs = documents(out)
    assert len(docs) == 5 * len(walk)
    for i, point in enumerate(walk):
        assert as_replay(docs[5 * i:5 * i + 5]) == replay_view(replayed(capsys, path, point, node)), point


def test_starts_at_the_end_and_at_end_returns_there(capsys):
    expected = replayed(capsys, SINGLE, ["--offset", "99999999"], [])["provenance"]
    code, out, _ = run(capsys, "shell", SINGLE, "-c", "cat /image/provenance; at 100; at end; cat /image/provenance")
    assert code == 0
    assert documents(out) == [expected, expected]


def test_a_partition_leaf_and_navigation(capsys):
    code, out, err = run(capsys, "shell", SINGLE, "--offset", "5000", "-c",
                         "cd topics/byName/orders; pwd; cd ..; pwd; ls orders; cat orders/0")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:5] == ["/image/topics/byName/orders", "/image/topics/byName", "0", "1", "id"]
    partition = documents("\n".join(lines[6:]))[0]
    assert partition == replayed(capsys, SINGLE, ["--offset", "5000"], [])["topics"]["orders"]["partitions"]["0"]


def test_find_and_tree_use_the_replay_tree(capsys):
    _, tree, _ = run(capsys, "replay", SINGLE, "--offset", "5000", "--format", "tree")
    code, out, _ = run(capsys, "shell", SINGLE, "--offset", "5000", "-c", "tree /image")
    assert code == 0 and out == tree.removesuffix("\n")  # replay's print adds a newline
    code, out, _ = run(capsys, "shell", SINGLE, "--offset", "5000", "-c", "find /image/topics/byName -name 'orders'")
    assert out.splitlines() == ["/image/topics/byName/orders"]


def test_a_point_before_the_log_is_refused_and_the_image_stays(capsys):
    code, out, err = run(capsys, "shell", SINGLE, "--offset", "5000", "-c",
                         "at 2000-01-01T00:00:00Z; cat /image/provenance")
    assert code == 1
    assert "no record of the log lies at or before that point; the image stays at offset 5000" in err
    assert documents(out)[0]["offset"] == 5000


def test_starting_before_the_log_is_refused(capsys):
    code, out, err = run(capsys, "shell", SINGLE, "--time", "2000-01-01T00:00:00Z", "-c", "ls")
    assert (code, out) == (1, "")
    assert "no record of the log lies at or before that point" in err


def test_points_the_log_does_not_hold_are_refused(capsys, tmp_path):
    import shutil

    copy = tmp_path / "node"
    shutil.copytree(SINGLE, copy)
    (copy / "__cluster_metadata-0/00000000000000000000.log").unlink()
    code, out, err = run(capsys, "shell", copy, "-c", "at 100; cat /image/provenance; at 1500; at 1340; "
                         "cat /image/provenance")
    assert code == 1
    assert "the log starts at offset 1794 and no snapshot lies at or below that point" in err
    assert "offsets 1341-1793 are missing from the log and the point lies among them" in err
    assert [d["offset"] for d in documents(out)] == [8432, 1340]


def test_changes_next_and_prev_follow_one_partition(capsys):
    from kraftlog.files.logdir import find_nodes
    from kraftlog.state.rebuild import rebuild

    code, out, err = run(capsys, "shell", SINGLE, "--offset", "5000", "-c",
                         "changes /image/topics/byName/orders/0")
    assert code == 0, err
    lines = out.splitlines()
    offsets = [int(line.split()[2]) if line.startswith("*") else int(line.split()[1]) for line in lines
               if "the image is at" not in line]
    marker = lines.index("  -- the image is at offset 5000 --")
    assert int(lines[marker - 1].split()[1]) < 5000 < int(lines[marker + 1].split()[1])
    assert offsets == sorted(offsets) and len(offsets) > 3
    # the partition differs across each listed offset and nowhere else (checked with replay)
    node = find_nodes(SINGLE)[0]

    def value(offset):
        return rebuild(node, offset=offset).image.to_json()["topics"].get("orders", {}).get("partitions", {}).get("0")

    for offset in offsets[:6]:
        assert value(offset) != value(offset - 1)
    between = offsets[1] + (offsets[2] - offsets[1]) // 2
    assert value(between) == value(offsets[1])
    later = [o for o in offsets if o > 5000]
    earlier = [o for o in offsets if o < 5000]
    code, out, _ = run(capsys, "shell", SINGLE, "--offset", "5000", "-c",
                       "cd /image/topics/byName/orders/; next 0; cat /image/provenance; prev 0; cat /image/provenance; "
                       "prev 0; cat /image/provenance")
    assert [d["offset"] for d in documents(out)] == [later[0], earlier[-1], earlier[-2]]


def test_diff_against_another_point(capsys):
    code, out, _ = run(capsys, "shell", SINGLE, "--offset", "10", "-c", "diff 20")
    assert code == 0
    assert out.splitlines() == ["from offset 10 (now) to offset 20:", "+ brokers 2", "+ brokers 3"]


def test_secrets_are_redacted_unless_asked(capsys):
    from kraftlog.files.logdir import find_nodes
    from kraftlog.state.rebuild import rebuild

    image = rebuild(find_nodes(SINGLE)[0]).image
    users = [(m, u) for m, users in image.scram.to_json(False).items() for u in users]
    if not users:
        pytest.skip("the fixture has no SCRAM credential at its end")
    mechanism, user = users[0]
    _, out, _ = run(capsys, "shell", SINGLE, "-c", f"cat /image/scram/{mechanism}/{user}")
    assert documents(out)[0]["storedKey"] == "[redacted]"
    _, out, _ = run(capsys, "shell", SINGLE, "--no-redact", "-c", f"cat /image/scram/{mechanism}/{user}")
    assert documents(out)[0]["storedKey"] != "[redacted]"


def test_commands_on_standard_input_and_errors_make_exit_1():
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "kraftlog.cli.main", "shell", str(SINGLE), "--offset", "5000"],
                          input="pwd\ncd topics\nnosuch\nls /nowhere\npwd\n", capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 1
    assert done.stdout.splitlines() == ["/image", "/image/topics"]
    assert "nosuch: unknown command" in done.stderr and "ls: /nowhere: No such file or directory." in done.stderr


def test_points_inside_an_open_transaction_show_the_image_before_it(capsys):
    """Forward inside a transaction keeps the pre-Begin image; its End applies it (as replay)."""
    begin, end = next((t["begin"], t["end"]) for t in json.loads((SINGLE / "ground-truth.json").read_text())
                      ["transactions"] if t["outcome"] == "committed" and t["begin"] > 100)
    inside = [begin + 2, end - 1]
    code, out, err = run(capsys, "shell", SINGLE, "--offset", inside[0], "-c",
                         f"{CATS}; at {inside[1]}; {CATS}; at {end}; {CATS}")
    assert code == 0, err
    assert f"a metadata transaction begun at offset {begin} is still open there" in err
    docs = documents(out)
    for i, offset in enumerate(inside + [end]):
        assert as_replay(docs[5 * i:5 * i + 5]) == replay_view(replayed(capsys, SINGLE, ["--offset", str(offset)], []))
    assert docs[0]["offset"] == docs[5]["offset"] == begin - 1 and docs[10]["offset"] == end
