"""``kraftlog shell`` in a real pseudo-terminal (pexpect): tab completion of a path, history with
the up arrow, Ctrl-C dropping the line, Ctrl-D leaving with exit 0."""

import os
import sys

import pytest

from conftest import REPO

pexpect = pytest.importorskip("pexpect", reason="pexpect is not installed")

PROMPT = r"\[offset 5000 2025-01-01T00:37:08\.358Z epoch 9\] "


@pytest.fixture
def console():
    env = dict(os.environ, PYTHONPATH=str(REPO), TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1")
    child = pexpect.spawn(sys.executable, ["-m", "kraftlog.cli.main", "shell", str(REPO / "fixtures/single-node"),
                                           "--offset", "5000"], env=env, encoding="utf-8", timeout=60,
                          dimensions=(40, 200))
    child.expect(PROMPT + "/image>")
    yield child
    if child.isalive():
        child.terminate(force=True)  # this child only, by its pid


def test_completion_history_ctrl_c_and_ctrl_d(console):
    # the screen is redrawn in pieces, so effects are checked, not the echoed keys
    console.send("cd topics/byN\t")  # one completion: byName/; "cd topics/byN" alone would fail
    console.expect("ame/")  # the completed rest of the word
    console.send("\r")
    console.expect(PROMPT + "/image/topics/byName>")
    console.send("cat ord\t")  # completes the topic, then the partition is typed
    console.expect("ers/")
    console.send("0\r")
    console.expect('"leaderEpoch": 6,')
    console.expect('"partitionEpoch": 22,')
    console.expect(PROMPT + "/image/topics/byName>")

    console.send("cd ..\r")
    console.expect(PROMPT + "/image/topics>")
    console.send("cd byName\r")
    console.expect(PROMPT + "/image/topics/byName>")
    console.send("\x1b[A\x1b[A\r")  # up arrow twice: "cd .." again
    console.expect(PROMPT + "/image/topics>")

    console.send("cd byId")
    console.send("\x03")  # Ctrl-C: the line is dropped, not run
    console.send("pwd\r")
    console.expect("/image/topics\r\n")
    console.expect(PROMPT + "/image/topics>")

    console.send("\x04")  # Ctrl-D
    console.expect(pexpect.EOF)
    console.close()
    assert console.exitstatus == 0
