"""Getting a Dask client: a local cluster started here (one worker per GPU with dask-cuda, else
worker processes for the CPU backends) or an existing scheduler by address; every failure to
connect is one UserError, within the user's timeout."""
from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import subprocess
import time
from typing import Iterator, Optional

from ..errors import UserError
from .options import DEFAULT_TIMEOUT

#: Schemes a Dask scheduler address may use.
SCHEMES = ("tcp", "tls", "ucx", "inproc")
ADDRESS = re.compile(r"^(?P<scheme>[a-z]+)://(?P<host>\[[0-9a-fA-F:]+\]|[^\s:/]+):(?P<port>\d+)$")
#: Variables that keep NVLink multicast off on shared GPU hosts: passed explicitly to every
#: worker process we start (they inherit them anyway; this keeps them if a launcher does not).
KEEP_ENV = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")


def check_address(spec: str) -> None:
    """'local' or scheme://host:port; anything else is a usage error."""
    if spec == "local":
        return
    m = ADDRESS.match(spec)
    if not m or m["scheme"] not in SCHEMES or not 0 < int(m["port"]) < 65536:
        raise UserError(f"--cluster '{spec}': expected 'local' or a scheduler address such as "
                        "tcp://HOST:8786")


def import_distributed():
    try:
        import distributed
    except ImportError:
        raise UserError("--cluster needs Dask (pip install 'hmmbench[dask]')") from None
    return distributed


def gpu_count() -> int:
    """GPUs on this host as nvidia-smi lists them (0 when there is no driver)."""
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    n = sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
    if visible is not None and visible.strip():
        n = min(n, len([v for v in visible.split(",") if v.strip()]))
    return n if out.returncode == 0 else 0


def worker_env() -> dict:
    return {k: os.environ[k] for k in KEEP_ENV if k in os.environ}


#: Dask's nanny sets MALLOC_TRIM_THRESHOLD_=65536 in every worker it spawns, to hand freed memory
#: back to the system at once. That also fixes glibc's mmap threshold, so every large NumPy
#: temporary is mapped, faulted in page by page and unmapped again: a backend's host work ran 3x
#: slower in a worker (profile-numpy: 35 -> 100 ms a call). Our workers keep glibc's defaults.
TRIM_ENV = "MALLOC_TRIM_THRESHOLD_"


def start_local(n_workers: Optional[int], timeout: float):
    """(cluster, kind): dask-cuda's LocalCUDACluster, one worker per GPU, where GPUs and dask-cuda
    exist; else a LocalCluster of single-threaded worker processes (the CPU backends). Its
    scheduler and workers start with shard mode's settings (:data:`.settings.LOCAL_CONFIG`)."""
    import dask
    import_distributed()
    from .settings import LOCAL_CONFIG
    # a nanny started earlier in this process left the variable in its environment, which
    # spawned workers inherit (this process's own allocator read it at start, if ever)
    os.environ.pop(TRIM_ENV, None)
    with dask.config.set({f"distributed.nanny.pre-spawn-environ.{TRIM_ENV}": None,
                          **LOCAL_CONFIG}):
        return _start_local(n_workers, timeout)


def _start_local(n_workers: Optional[int], timeout: float):
    gpus = gpu_count()
    quiet = {"silence_logs": logging.ERROR, "dashboard_address": None,
             "preload": ["hmmbench.cluster.worker"]}    # its dask_setup: Ctrl-C is the client's
    if gpus:
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            LocalCUDACluster = None
        if LocalCUDACluster is not None:
            if n_workers and n_workers > gpus:
                raise UserError(f"--workers {n_workers}: this host has {gpus} GPUs "
                                "(dask-cuda runs one worker per GPU)")
            visible = list(range(gpus))[:n_workers or gpus]
            # The workers inherit this process's environment (KEEP_ENV included: dask-cuda
            # replaces a worker's env option with its CUDA_VISIBLE_DEVICES). No memory limits:
            # the shards stay resident, never paused, spilled or restarted for size; the host's
            # memory may also read small at start (it grows as used) and "auto" would size by it.
            return LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, threads_per_worker=1,
                                    memory_limit=0, device_memory_limit=0,
                                    death_timeout=timeout, **quiet), "dask-cuda"
    from distributed import LocalCluster
    n = n_workers or os.cpu_count() or 1
    # memory_limit=0: a benchmark holds its shards resident; Dask must not pause or spill them
    return LocalCluster(n_workers=n, threads_per_worker=1, processes=True, memory_limit=0,
                        env=worker_env(), death_timeout=timeout, **quiet), "processes"


@contextlib.contextmanager
def connect(spec: str, n_workers: Optional[int] = None,
            timeout: float = DEFAULT_TIMEOUT) -> Iterator[tuple]:
    """(client, kind) for ``--cluster SPEC``; the local cluster is closed on the way out, also on
    Ctrl-C. A scheduler that does not answer within ``timeout`` is a UserError."""
    check_address(spec)
    distributed = import_distributed()
    cluster = None
    interrupted = False
    try:
        if spec == "local":
            cluster, kind = start_local(n_workers, timeout)
            address = cluster
        else:
            address, kind = spec, "scheduler"
        try:
            # a local cluster's results come straight from the workers: relayed through the
            # scheduler they cross this process twice (measured 2x slower); a remote one keeps
            # the user's distributed.client.direct-to-workers (workers may be unreachable here)
            direct = True if cluster is not None else None
            client = distributed.Client(address, timeout=timeout, set_as_default=False,
                                        direct_to_workers=direct)
        except (OSError, TimeoutError) as exc:
            raise UserError(f"--cluster {spec}: cannot reach the Dask scheduler within "
                            f"{timeout:g} s ({type(exc).__name__}: {exc})".replace("\n", " ")) \
                from None
        # the client's own report of a lost scheduler (its reconnect attempts gave up after
        # ``timeout``, from Dask's event-loop thread, whatever this thread is doing then) would
        # be a second line beside lost_message; so would the INFO records (with tracebacks) of
        # the comms it closes on the way ("Batched Comm Closed"): while hmmbench's client is
        # open, distributed says nothing below a warning in this process
        client_log = logging.getLogger("distributed.client")
        client_log.addFilter(_no_reconnect_failure)
        dask_log = logging.getLogger("distributed")
        dask_level = dask_log.level
        dask_log.setLevel(max(dask_level, logging.WARNING))
        try:
            yield client, kind
            if scheduler_lost(client):   # a cell that failed on it became a record: no file
                _quiet_logs()
                raise UserError(lost_message(spec))
        except KeyboardInterrupt:
            interrupted = True
            # closing mid-computation cancels the pending gather and the nannies' work: asyncio
            # and distributed would log those as tracebacks on the way out
            for name in ("asyncio", "distributed"):
                logging.getLogger(name).setLevel(logging.CRITICAL)
            raise
        except BaseException as exc:
            # the scheduler gone mid-run: Dask cancels every future (a BaseException); the
            # client's own attempts to reconnect would log on the way out
            if isinstance(exc, (UserError, GeneratorExit)) or not scheduler_lost(client):
                raise
            _quiet_logs()
            raise UserError(lost_message(spec)) from None
        finally:
            with contextlib.suppress(Exception):
                client.close(timeout=closing_timeout(timeout, interrupted))
            client_log.removeFilter(_no_reconnect_failure)
            if dask_log.level == max(dask_level, logging.WARNING):  # not quietened further
                dask_log.setLevel(dask_level)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close(timeout=closing_timeout(timeout, interrupted))
            if interrupted:
                stop_worker_processes()


class SchedulerLost(BaseException):
    """The scheduler went away mid-run. A BaseException, as KeyboardInterrupt is: the runner
    turns a backend's failure into a record and goes on, but without a scheduler nothing can
    go on, and nothing may be written."""


def scheduler_lost(client) -> bool:
    """Whether the client lost its scheduler (it is reconnecting, or gave up)."""
    return client.status not in ("running", "newly-created")


#: After a Ctrl-C the client and the local cluster each get this long to close, then the worker
#: processes still running are stopped: they ignore the Ctrl-C (worker.dask_setup) and may be
#: mid-task, and with the user's timeout for each of the two closes a Ctrl-C could take a
#: minute (seen on a loaded machine: nothing printed for 60 s, the workers computing).
INTERRUPTED_CLOSE_S = 5.0


def stop_worker_processes() -> None:
    """Stops the processes a local cluster started that are still running (SIGTERM, then
    SIGKILL after 2 s): this process's multiprocessing children, which with ``--cluster local``
    are Dask's worker processes."""
    import multiprocessing
    children = multiprocessing.active_children()
    for child in children:
        child.terminate()
    for child in children:
        child.join(2)
        if child.is_alive():
            child.kill()
            child.join(2)


#: how long a failed call waits for the client to see a dropped scheduler: the comm error can
#: reach the call before the client's own stream has read the end (a loaded machine)
LOST_GRACE_S = 5.0


def failed_on_lost_scheduler(client, exc: BaseException) -> bool:
    """Whether a call's failure is the scheduler's loss: the client says so, or, for a comm
    error (Dask's are OSErrors), says so within LOST_GRACE_S."""
    if scheduler_lost(client):
        return True
    if not isinstance(exc, OSError):
        return False
    deadline = time.monotonic() + LOST_GRACE_S
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if scheduler_lost(client):
            return True
    return False


def lost_message(spec: str) -> str:
    return (f"--cluster {spec}: lost the Dask scheduler mid-run (killed, or its host or the "
            "network went down); nothing written")


def _no_reconnect_failure(record) -> bool:
    return not record.getMessage().startswith("Failed to reconnect to scheduler")


def _quiet_logs() -> None:
    """Dask's loggers (each of distributed's has a level of its own) say nothing more."""
    roots = ("asyncio", "distributed", "tornado")
    for name in [*roots, *logging.root.manager.loggerDict]:
        if name.split(".")[0] in roots:
            logging.getLogger(name).setLevel(logging.CRITICAL)


def closing_timeout(timeout: float, interrupted: bool) -> float:
    """How long closing may take: the user's timeout, or at most INTERRUPTED_CLOSE_S after a
    Ctrl-C."""
    return min(timeout, INTERRUPTED_CLOSE_S) if interrupted else timeout


def wait_for_workers(client, n: int, timeout: float) -> list:
    """The addresses of the scheduler's workers, in a stable order, once at least n are up."""
    try:
        client.wait_for_workers(n, timeout=timeout)
    except (TimeoutError, OSError):
        have = len(client.scheduler_info(n_workers=-1)["workers"])
        raise UserError(f"the Dask cluster has {have} workers, {n} needed (waited "
                        f"{timeout:g} s)") from None
    workers = client.scheduler_info(n_workers=-1)["workers"]
    return sorted(workers, key=lambda a: (workers[a].get("host", ""),
                                          _by_number(workers[a].get("name", a))))


def _by_number(name) -> tuple:
    """Worker names in natural order: dask-cuda and LocalCluster name them 0, 1, 2, ..."""
    name = str(name)
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


def versions() -> dict:
    """Dask, distributed and dask-cuda versions on the client."""
    out = {}
    for mod in ("dask", "distributed", "dask_cuda"):
        try:
            out[mod.replace("_", "-")] = __import__(mod).__version__
        except ImportError:
            out[mod.replace("_", "-")] = None
    return out


def worker_memory_limits(client) -> dict:
    """Each worker's memory limit in bytes as the scheduler reports it (Client.scheduler_info:
    the ``--memory-limit`` a worker was started with, Dask's default being the machine's
    memory shared among the workers); None where it has none (0)."""
    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:                  # a Dask before scheduler_info took n_workers: all of them
        info = client.scheduler_info()
    return {addr: (int(w.get("memory_limit") or 0) or None)
            for addr, w in info.get("workers", {}).items()}
