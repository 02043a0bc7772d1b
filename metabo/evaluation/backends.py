"""Make a joblib backend usable for :func:`~metabo.evaluation.parallel.evaluate_many`.

:func:`backend_context` is entered once around a whole build or tuning run:

- ``loky`` (processes, the default), ``threading``, ``sequential``, ``multiprocessing``:
  joblib's own, nothing to start;
- ``dask``: a :class:`distributed.Client` connected to the scheduler at ``address``
  (``tcp://host:8786``, started with ``dask scheduler`` and ``dask worker ADDRESS``) or,
  without one, to a :class:`distributed.LocalCluster` of ``n_jobs`` single-threaded
  worker processes started here and closed on exit. joblib's ``"dask"`` backend then
  sends each task to the cluster (it uses the default client, the one made here);
- ``ray``: ``ray.util.joblib.register_ray()`` and ``ray.init(address)`` (a local Ray
  of ``n_jobs`` CPUs without an address; shut down on exit if started here).

An evaluation with a time or memory limit forks one child per fit
(:mod:`metabo.evaluation.runner`), which daemonic processes may not do: the local
cluster's workers are started non-daemonic, and workers of a scheduler of your own must
be too (``DASK_DISTRIBUTED__WORKER__DAEMON=False dask worker ADDRESS``; a warning says
so when they are not).

The engine is Dask's or Ray's: metabo schedules nothing itself. A missing package is a
:class:`BackendError` naming the extra to install (``pip install 'metabo[dask]'``).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from metabo.exceptions import BackendError, InputDataError

logger = logging.getLogger(__name__)

LOCAL_BACKENDS = ("loky", "threading", "sequential", "multiprocessing")
BACKENDS = (*LOCAL_BACKENDS, "dask", "ray")


def check_backend(name: str, *, address: str | None = None, n_jobs: int = 1) -> None:
    """Raise :class:`~metabo.exceptions.InputDataError` for an unknown backend name, an
    ``address`` given to a backend without a scheduler, or ``n_jobs`` < 1."""
    if name not in BACKENDS:
        raise InputDataError(f"unknown backend {name!r}; use one of {', '.join(BACKENDS)}")
    if address is not None and name in LOCAL_BACKENDS:
        raise InputDataError(f"a scheduler address is for the dask and ray backends, not {name!r}")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise InputDataError(f"n_jobs must be a positive integer, got {n_jobs!r}")


def _missing(name: str, e: ImportError) -> BackendError:
    extra = {"dask": "dask", "ray": "ray"}[name]
    return BackendError(f"the {name} backend needs the {name} package ({e.name or e} is missing): "
                        f"pip install 'metabo[{extra}]'")


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # not Linux
        return max(os.cpu_count() or 1, 1)


def worker_count(n_jobs: int, *, address: str | None = None, what: str = "n_jobs") -> int:
    """The workers to start for ``n_jobs``: at most :func:`available_cores` unless a cluster
    at ``address`` runs them (one evaluation is one core; more workers than cores only
    add processes, and hundreds of them exhaust the machine). Logged when capped."""
    if address is not None:
        return n_jobs
    cores = available_cores()
    if n_jobs > cores:
        logger.warning("%s=%d is more than the cores available to this process (%d): starting %d workers",
                       what, n_jobs, cores, cores)
        return cores
    return n_jobs


@contextmanager
def backend_context(name: str, *, address: str | None = None, n_jobs: int = 1) -> Iterator[None]:
    """Within this block, joblib backend ``name`` runs tasks (module docstring).

    Args:
        name: ``loky``, ``threading``, ``sequential``, ``multiprocessing``, ``dask`` or ``ray``.
        address: the Dask scheduler (``tcp://127.0.0.1:8786``) or Ray cluster
            (``ray://...``, ``auto``) to use; None starts a local one.
        n_jobs: workers of a local cluster started here.
    """
    check_backend(name, address=address, n_jobs=n_jobs)
    if name == "dask":
        with _dask(address, n_jobs):
            yield
    elif name == "ray":
        with _ray(address, n_jobs):
            yield
    else:
        yield


@contextmanager
def _dask(address: str | None, n_jobs: int) -> Iterator[None]:
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError as e:
        raise _missing("dask", e) from e
    cluster = None
    if address is None:
        with dask.config.set({"distributed.worker.daemon": False}):  # they fork per evaluation
            cluster = LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=True, dashboard_address=None)
        logger.info("started a local Dask cluster of %d workers at %s", n_jobs, cluster.scheduler_address)
    try:
        try:
            client = Client(cluster if cluster is not None else address, timeout="10s")
        except OSError as e:
            raise BackendError(f"cannot reach the Dask scheduler at {address}: {e}; start one with "
                               f"'dask scheduler' and workers with 'dask worker {address}'") from e
        try:
            daemonic = client.run(_is_daemon)
            if any(daemonic.values()):
                logger.warning(
                    "Dask workers at %s are daemonic processes, which cannot fork the per-evaluation child "
                    "that enforces time and memory limits: start them with "
                    "DASK_DISTRIBUTED__WORKER__DAEMON=False", address)
            yield
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()


def _is_daemon() -> bool:
    return bool(multiprocessing.current_process().daemon)


@contextmanager
def _ray(address: str | None, n_jobs: int) -> Iterator[None]:
    try:
        import ray
        from ray.util.joblib import register_ray
    except ImportError as e:
        raise _missing("ray", e) from e
    register_ray()
    started = not ray.is_initialized()
    if started:
        options: dict[str, Any] = {"address": address} if address else {"num_cpus": n_jobs}
        try:
            ray.init(**options, log_to_driver=False)
        except ConnectionError as e:
            raise BackendError(f"cannot reach the Ray cluster at {address}: {e}") from e
    try:
        yield
    finally:
        if started:
            ray.shutdown()
