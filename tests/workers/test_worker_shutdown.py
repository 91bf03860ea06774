"""``mnemogate worker`` stops on SIGTERM whatever state Redis is in.

arq 0.28's own ``Worker.close()`` gives up before ``on_shutdown`` when a job task was cancelled
while it recorded its result, or when Redis is down or hung; the SQLite connection threads then
stayed open and the process never exited (seen in CI). Real worker subprocesses, real Redis
(a private redis-server, or the test Redis behind a proxy that stops forwarding).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path

import pytest
from redis import Redis

from shared.settings import load_settings
from tests.fakes.tcp_proxy import PausableProxy
from tests.fakes.upstream import free_port
from tests.waiting import READY_TIMEOUT_S
from tests.workers.test_learning_faults import (
    enqueue_all,
    learn_payload,
    migrate,
    private_redis,
    sql,
    wait_until,
)
from workers.worker import _sleep_unless_signalled, _Stop, build_worker

#: Seconds a worker may take to exit after SIGTERM: its own bounds (2 s per Redis call at
#: shutdown; 2.2-7.4 s measured under load) plus scheduling noise on a loaded machine (20 s
#: was exceeded there); a hung worker never exits, so the suite's wait bound serves.
EXIT_WITHIN_S = READY_TIMEOUT_S


def _wait_started(log: Path) -> None:
    wait_until(lambda: "Starting worker" in log.read_text(errors="replace"), 30, "worker start")


def _stop(proc: subprocess.Popen[bytes], log: Path) -> float:
    """SIGTERM ``proc``; return its exit time in seconds, or fail with its log."""
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=EXIT_WITHIN_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)  # its threads' stacks go to the log (faulthandler)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        pytest.fail(f"worker did not exit after SIGTERM; its log:\n{log.read_text()[-8000:]}")
    return time.monotonic() - started


def test_worker_exits_on_sigterm_when_redis_is_down(tmp_path, worker_process):
    db = str(tmp_path / "down.db")
    migrate(db)
    port = free_port()
    with private_redis(port):
        proc = worker_process(db, redis_url=f"redis://127.0.0.1:{port}/0")
        log = tmp_path / "worker-0.log"
        _wait_started(log)
    # Redis is gone; the worker is polling a dead server
    took = _stop(proc, log)
    assert proc.returncode == 0
    print(f"exited {took:.2f}s after SIGTERM with Redis down")


def test_worker_exits_on_sigterm_when_redis_hangs_after_a_job(tmp_path, redis_url, worker_process):
    db = str(tmp_path / "hang.db")
    migrate(db)
    target = Redis.from_url(redis_url)
    host_port = target.connection_pool.connection_kwargs["port"]
    db_index = target.connection_pool.connection_kwargs.get("db", 0)
    target.close()
    proxy = PausableProxy(int(host_port))
    try:
        proc = worker_process(db, redis_url=f"redis://127.0.0.1:{proxy.port}/{db_index}")
        log = tmp_path / "worker-0.log"
        _wait_started(log)
        asyncio.run(enqueue_all(redis_url, db, [learn_payload(1, owner="khang")]))
        # the job's memory is stored just before arq records the result in Redis: hang Redis
        # now, so SIGTERM finds the job task waiting on Redis (or the worker polling it)
        wait_until(lambda: sql(db, "SELECT COUNT(*) FROM memories") != [(0,)], what="the job")
        proxy.pause()
        took = _stop(proc, log)
        print(f"exited {took:.2f}s after SIGTERM with Redis hung")
    finally:
        proxy.close()
    facts = sql(db, "SELECT content FROM memories WHERE category != 'turn'")
    assert facts == [("User prefers Zorblang1 for scripting",)]


def test_worker_outlives_a_redis_restart_and_runs_jobs_after_it(tmp_path, worker_process):
    db = str(tmp_path / "blip.db")
    migrate(db)
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    log = tmp_path / "worker-0.log"
    with private_redis(port):
        proc = worker_process(db, redis_url=url)
        _wait_started(log)
    # Redis is down: the worker says it will restart, and waits instead of exiting
    wait_until(lambda: "worker restarts in" in log.read_text(), 60, "the restart notice")
    assert proc.poll() is None, log.read_text()[-3000:]
    with private_redis(port):  # back on the same port (empty: it keeps nothing on disk)
        asyncio.run(enqueue_all(url, db, [learn_payload(7, owner="kblip")]))
        wait_until(
            lambda: sql(db, "SELECT COUNT(*) FROM memories WHERE category != 'turn'") == [(1,)],
            30,
            "the job enqueued after the restart",
        )
        assert "worker restarts in" in log.read_text()
        assert proc.poll() is None
        _stop(proc, log)
    assert proc.returncode == 0


def test_a_signal_dispatched_as_the_restart_wait_ends_stops_the_next_worker(tmp_path, redis_url):
    """A SIGTERM read by the loop in the iteration that ends a restart wait is dispatched when
    the loop next runs, inside the next worker's ``run()`` (asyncio keeps the handler of the
    moment it read the signal): it must stop that worker, not the finished wait.

    The dispatched handler is placed in the loop's ready queue as asyncio leaves it; the worker
    is real, on the test Redis. A fallback stop after the suite's wait bound (SIGUSR1) ends a
    worker that ignored the SIGTERM, and the test then fails.
    """
    db = str(tmp_path / "late.db")
    migrate(db)
    settings = load_settings({}, db_path=db, redis_url=redis_url)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        stop = _Stop()
        assert not _sleep_unless_signalled(loop, 0.0, stop)
        worker = build_worker(settings, "arq:queue")
        stop.worker = worker
        worker.on_stop = stop.signalled.append
        for sig in (signal.SIGINT, signal.SIGTERM):  # the wait's handlers stay out of the run
            loop.remove_signal_handler(sig)
        sleeper = loop.create_task(asyncio.sleep(0))
        loop.run_until_complete(sleeper)
        loop.call_soon(stop.during(sleeper), signal.SIGTERM)
        fallback = loop.call_later(EXIT_WITHIN_S, worker.handle_sig, signal.SIGUSR1)
        worker.run()
        fallback.cancel()
        assert signal.SIGTERM in stop.signalled
        assert signal.SIGUSR1 not in stop.signalled, "the late SIGTERM did not stop the worker"
    finally:
        asyncio.set_event_loop(None)
        loop.close()
