"""The one command runner of the health program and the Slurm exporter (slurm/commands.py), on real processes:
what a command answered, and every wait bounded, a command that overran its timeout killed with what it started,
even when a child of it left its session holding the pipes."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from clusterforge.slurm import commands
from clusterforge.slurm.commands import KILL_WAIT_S, Answer, run


def test_an_answer_is_the_exit_status_and_both_outputs_and_says_why_in_one_line():
    answer = run(["sh", "-c", "echo out; echo first >&2; echo last >&2; exit 3"], 10)
    assert (answer.rc, answer.out, answer.err, answer.ok) == (3, "out\n", "first\nlast\n", False)
    assert answer.why == "exit 3: last"
    assert run(["true"], 10).ok
    assert Answer(1, "only this\n", "").why == "exit 1: only this"
    assert Answer(1, "", "").why == "exit 1: no output"
    assert Answer(1, "", "x" * 500).why == f"exit 1: {'x' * 120}"


def test_a_command_that_is_not_there_exits_127_as_the_shell_says():
    answer = run(["/nonexistent/nvidia-smi", "-q"], 10)
    assert answer.rc == commands.NOT_FOUND == 127
    assert answer.why == "exit 127: /nonexistent/nvidia-smi: No such file or directory"


def test_a_command_past_its_timeout_is_killed_and_its_words_do_not_name_the_bound():
    # The same words whatever the bound: a drain reason is made of them and must read the same on every run.
    start = time.monotonic()
    answer = run(["sleep", "30"], 0.3)
    assert answer.rc == commands.TIMED_OUT and answer.why == "gave no answer in time"
    assert 0.3 <= answer.seconds < 0.3 + KILL_WAIT_S and time.monotonic() - start < 0.3 + KILL_WAIT_S


def test_a_child_that_left_the_session_holding_the_pipes_does_not_hold_the_caller(tmp_path: Path):
    """The killed command's pipes stay open while a child that escaped its session runs: the runner stops reading
    after a bound instead of waiting for that child (the health program's wait after a kill had none)."""
    escaped = tmp_path / "escaped.pid"
    script = f"setsid sh -c 'echo $$ > {escaped}; exec sleep 30' & sleep 30"
    start = time.monotonic()
    try:
        answer = run(["sh", "-c", script], 0.5)
        took = time.monotonic() - start
        assert answer.rc == commands.TIMED_OUT
        assert took < 0.5 + 2 * KILL_WAIT_S + 1, took
        os.kill(int(escaped.read_text()), 0)  # the escaped child still runs: it was the one holding the pipes
    finally:
        if escaped.exists():
            os.kill(int(escaped.read_text()), signal.SIGKILL)


def test_kill_all_ends_every_command_still_running_from_another_thread():
    answers: list[Answer] = []
    waiting = threading.Thread(target=lambda: answers.append(run(["sleep", "30"], 60)))
    waiting.start()
    deadline = time.monotonic() + 10
    while not commands._running and time.monotonic() < deadline:
        time.sleep(0.01)
    commands.kill_all()
    waiting.join(timeout=10)
    assert not waiting.is_alive()
    assert answers[0].rc == -signal.SIGKILL
    assert not commands._running
