"""``memframe serve``'s request-line handler: the lines of one event-loop iteration leave in
one write, in order, and nothing waits past a flush or a line logged off the loop."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading

import httpx

from memframe.server import open_storage
from memframe.server.app import API_PATH, TeamMemoryApp
from memframe.server.serving import LineBatchHandler, RunningServer, ServeConfig


class CountingStream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def logger_with(handler: logging.Handler, name: str) -> logging.Logger:
    log = logging.getLogger(name)
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False
    return log


def test_one_iteration_one_write_in_order() -> None:
    stream = CountingStream()
    handler = LineBatchHandler(stream)
    log = logger_with(handler, "memframe.test.batch")

    async def burst() -> str:
        for n in range(5):
            log.info("line %d", n)
        before = stream.getvalue()
        await asyncio.sleep(0)  # one iteration: the queued flush runs
        await asyncio.sleep(0)
        return before

    before = asyncio.run(burst())
    assert before == ""  # nothing written while the iteration was still logging
    assert stream.getvalue() == "".join(f"line {n}\n" for n in range(5))
    assert stream.writes == 1


def test_a_line_off_the_loop_writes_the_waiting_ones_first() -> None:
    stream = CountingStream()
    handler = LineBatchHandler(stream)
    log = logger_with(handler, "memframe.test.order")

    async def main() -> None:
        log.info("on the loop")
        thread = threading.Thread(target=log.info, args=("from a thread",))
        thread.start()
        thread.join()
        assert stream.getvalue() == "on the loop\nfrom a thread\n"

    asyncio.run(main())
    assert stream.getvalue() == "on the loop\nfrom a thread\n"


def last_iteration(loop: asyncio.AbstractEventLoop, log: logging.Logger, line: str) -> None:
    loop.stop()  # this iteration is the loop's last: what it queues never runs
    log.info(line)


def test_flush_writes_what_waits_and_a_new_loop_is_served() -> None:
    stream = CountingStream()
    handler = LineBatchHandler(stream)
    log = logger_with(handler, "memframe.test.flush")
    loop = asyncio.new_event_loop()
    try:
        loop.call_soon(last_iteration, loop, log, "queued")
        loop.run_forever()
    finally:
        loop.close()
    assert stream.getvalue() == ""
    handler.flush()  # logging.shutdown does this at exit
    assert stream.getvalue() == "queued\n"

    loop = asyncio.new_event_loop()
    try:
        loop.call_soon(last_iteration, loop, log, "dropped flush")
        loop.run_forever()
    finally:
        loop.close()  # a flush queued on a loop that is gone ...

    async def later() -> None:
        log.info("next loop")  # ... is queued again on the loop that runs now
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(later())
    assert stream.getvalue() == "queued\ndropped flush\nnext loop\n"


def test_a_bare_line_joins_the_records_of_its_iteration_in_order() -> None:
    stream = CountingStream()
    handler = LineBatchHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log = logger_with(handler, "memframe.test.bare")

    async def burst() -> None:
        log.info("record one")
        handler.line('{"request": 1}')
        log.info("record two")
        assert stream.getvalue() == ""
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(burst())
    assert stream.getvalue() == 'record one\n{"request": 1}\nrecord two\n'
    assert stream.writes == 1
    handler.line("off the loop")  # no loop: written at once
    assert stream.getvalue().endswith("record two\noff the loop\n")
    assert stream.writes == 2


def test_the_app_hands_each_request_line_to_its_request_log(tmp_path) -> None:
    lines: list[str] = []
    storage = open_storage(str(tmp_path / "team.db"))
    captured = logging.getLogger("memframe.server")
    seen: list[logging.LogRecord] = []
    recorder = logging.Handler()
    recorder.emit = seen.append  # type: ignore[method-assign]
    captured.addHandler(recorder)
    level = captured.level
    captured.setLevel(logging.INFO)
    try:
        app = TeamMemoryApp(storage, request_log=lines.append)
        with RunningServer(app, ServeConfig(port=0)) as server:
            httpx.get(f"{server.url}{API_PATH}?repo=acme/app", timeout=10)
            httpx.get(f"{server.url}/healthz", timeout=10)
    finally:
        captured.removeHandler(recorder)
        captured.setLevel(level)
        storage.close()
    records = [json.loads(line) for line in lines]
    assert [(r["path"], r["status"]) for r in records] == [(API_PATH, 401), ("/healthz", 200)]
    assert not any(r.getMessage().startswith("{") for r in seen)  # not also a log record
