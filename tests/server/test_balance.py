"""``ConnectionBalance``: the workers' shared connection counts and the decision to close one
connection, across real spawned processes (as uvicorn's supervisor spawns its workers)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection

import pytest

from memframe.server.serving import ConnectionBalance

SPAWN = multiprocessing.get_context("spawn")


def _worker(balance: ConnectionBalance, opened: int, pipe: Connection) -> None:
    """A stand-in worker: joins, opens ``opened`` connections, then answers commands."""
    balance.join()
    for _ in range(opened):
        balance.opened()
    while True:
        command = pipe.recv()
        if command == "shed":
            pipe.send(balance.should_shed())
        elif command == "open":
            balance.opened()
            pipe.send(None)
        elif command == "close":
            balance.closed()
            pipe.send(None)
        elif command == "counts":
            pipe.send(balance.counts())
        else:
            return


class Worker:
    def __init__(self, balance: ConnectionBalance, opened: int) -> None:
        self.pipe, theirs = SPAWN.Pipe()
        self.process = SPAWN.Process(target=_worker, args=(balance, opened, theirs))
        self.process.start()
        theirs.close()

    def ask(self, command: str) -> object:
        self.pipe.send(command)
        return self.pipe.recv()

    def end(self) -> None:
        if self.process.is_alive():
            self.pipe.send("exit")
        self.process.join(timeout=30)
        self.pipe.close()


Start = Callable[[ConnectionBalance, int], "Worker"]


@pytest.fixture
def workers() -> Iterator[Start]:
    started: list[Worker] = []

    def start(balance: ConnectionBalance, opened: int) -> Worker:
        worker = Worker(balance, opened)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        if worker.process.is_alive():
            worker.process.kill()
        worker.end()


def test_one_worker_is_not_balanced() -> None:
    with pytest.raises(ValueError, match="2 or more workers"):
        ConnectionBalance(1)


def test_the_worker_with_more_connections_closes_one_the_others_do_not(workers: Start) -> None:
    balance = ConnectionBalance(2, interval=60)
    balance.join()  # this process: a worker with no connection
    loaded = workers(balance, 3)
    assert loaded.ask("counts") == {os.getpid(): 0, loaded.process.pid: 3}
    assert loaded.ask("shed") is True
    assert loaded.ask("shed") is False  # at most one per interval
    assert balance.should_shed() is False  # the idle worker never sheds


def test_within_the_margin_nothing_is_closed(workers: Start) -> None:
    balance = ConnectionBalance(2, margin=2, interval=0)
    balance.join()
    balance.opened()
    worker = workers(balance, 2)  # 2 against 1: inside the margin
    assert worker.ask("shed") is False
    assert balance.should_shed() is False
    balance.closed()  # now 2 against 0
    assert worker.ask("shed") is True
    worker.ask("close")  # 1 against 0
    assert worker.ask("shed") is False


def test_many_connections_shed_only_past_an_eighth(workers: Start) -> None:
    balance = ConnectionBalance(2, margin=2, interval=0)
    balance.join()
    for _ in range(32):
        balance.opened()
    worker = workers(balance, 35)  # 35 against 32: 3 more, under an eighth (4)
    assert worker.ask("shed") is False
    worker.ask("open")  # 36 against 32
    assert worker.ask("shed") is True


def test_a_dead_workers_slot_is_not_a_peer_and_is_taken_over(workers: Start) -> None:
    balance = ConnectionBalance(2, interval=0)
    gone = workers(balance, 5)
    assert gone.ask("counts") == {gone.process.pid: 5}
    gone.process.kill()
    gone.end()  # reaped: its pid no longer exists
    balance.join()
    for _ in range(3):
        balance.opened()
    # the dead worker's 5 connections are no one's: no live peer to move connections to
    assert balance.counts() == {os.getpid(): 3}
    assert balance.should_shed() is False
    # the restarted worker takes the dead one's slot, from 0 connections
    restarted = workers(balance, 0)
    assert restarted.ask("counts") == {os.getpid(): 3, restarted.process.pid: 0}
    assert balance.should_shed() is True


def test_more_processes_than_slots_are_left_unbalanced(workers: Start) -> None:
    balance = ConnectionBalance(2, interval=0)
    first, second = workers(balance, 4), workers(balance, 0)
    first.ask("counts"), second.ask("counts")  # both have joined
    balance.join()  # a third process: no slot left, so it counts nothing and never sheds
    balance.opened()
    balance.opened()
    balance.closed()
    assert balance.counts() == {first.process.pid: 4, second.process.pid: 0}
    assert balance.should_shed() is False
    assert first.ask("shed") is True


def test_counts_never_go_below_zero() -> None:
    balance = ConnectionBalance(2)
    balance.join()
    balance.closed()
    assert balance.counts() == {os.getpid(): 0}
