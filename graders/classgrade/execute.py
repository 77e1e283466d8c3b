"""Running grading jobs: N at a time on this machine, or on a Dask cluster.

Both executors yield one outcome per job as jobs finish, in whatever order; a job that
fails to run at all (a lost Dask worker) still yields an outcome saying why.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from . import job as job_module


def _failed(job: dict[str, Any], exc: BaseException, where: str) -> dict[str, Any]:
    return {"name": job["name"], "status": "crashed", "files": {}, "exit_code": None,
            "duration": 0.0, "host": where, "slot": None,
            "reason": f"the grading job failed: {type(exc).__name__}: {exc}"[:500]}


class LocalExecutor:
    """``jobs`` gradings at once in threads of this process, each grading being its own
    process group. On an interrupt the running graders are killed and nothing more starts."""

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        self.description = f"{self.jobs} at a time on this machine"

    def run(self, jobs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        stop = threading.Event()
        running: set = set()
        lock = threading.Lock()

        def guarded(job: dict[str, Any]) -> dict[str, Any] | None:
            if stop.is_set():
                return None
            return job_module.grade_job(job, watch)

        def watch(proc: Any, started: bool) -> None:
            with lock:
                if not started:
                    running.discard(proc)
                    return
                running.add(proc)
                if stop.is_set():
                    job_module.kill_group(proc)

        pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="grade")
        futures: dict[Future, dict[str, Any]] = {pool.submit(guarded, j): j for j in jobs}
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in done:
                    try:
                        outcome = future.result()
                    except Exception as exc:  # noqa: BLE001 - a job's failure is its row
                        outcome = _failed(futures[future], exc, "this machine")
                    if outcome is not None:
                        yield outcome
        finally:
            stop.set()
            with lock:
                for proc in list(running):
                    job_module.kill_group(proc)
            pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor:
    """The same jobs on a Dask cluster (``tcp://host:8786``), or on a local cluster of
    ``jobs`` single-threaded worker processes (``local``). Each worker machine needs this
    package installed (``pip install "tinytrain-grader[instructor,cluster]"``); the
    submissions travel inside the jobs, so no shared file system is needed."""

    def __init__(self, address: str, jobs: int) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise RuntimeError('--dask needs the cluster extra: pip install -e ".[cluster]"') from exc
        self.cluster = self.client = None
        if address == "local":
            self.cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1,
                                        processes=True, dashboard_address=None)
            address = self.cluster.scheduler_address
        try:
            self.client = Client(address, timeout="30s")
        except (OSError, TimeoutError) as exc:
            self.close()
            raise RuntimeError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
        workers = self.client.scheduler_info().get("workers", {})
        threads = sum(w.get("nthreads", 1) for w in workers.values())
        self.description = (f"Dask cluster at {address} ({len(workers)} workers, "
                            f"{threads} threads)")

    def run(self, jobs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        from distributed import as_completed

        futures = {}
        for j in jobs:
            # a fresh key per run: a rerun must not be answered from a cached result
            future = self.client.submit(job_module.grade_job, j, pure=False,
                                        key=f"tinytrain-grade-{j['name']}-{uuid.uuid4().hex}")
            futures[future] = j
        try:
            for future in as_completed(list(futures)):
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - a lost worker costs its row only
                    yield _failed(futures[future], exc, "a Dask worker")
        finally:
            # running tasks finish on their workers (Dask cannot stop a running thread);
            # each is bounded by its own wall-clock limit
            with contextlib.suppress(Exception):
                self.client.cancel(list(futures))

    def close(self) -> None:
        if getattr(self, "client", None) is not None:
            with contextlib.suppress(Exception):
                self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()
