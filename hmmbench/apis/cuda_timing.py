"""Timing on a CUDA device: :class:`EventTimer` (per-stage seconds from CUDA events on one
stream) and the SM clock (:func:`sm_clock_mhz` through NVML, nvidia-smi as fallback;
:func:`sm_clock_cached` sampled at most once a second)."""
from __future__ import annotations

import ctypes
import subprocess
import time
from typing import Optional

from .cuda import device_attributes, driver


class EventTimer:
    """CUDA events around stages on one stream: ``with timer("kernel"): launch()``.

    ``seconds()`` synchronizes on the last event and returns {stage: seconds} (summed when a
    stage is entered several times).
    """

    def __init__(self, stream=None):
        self.stream = stream
        self._pairs: list = []

    def __call__(self, stage: str) -> "_EventSpan":
        return _EventSpan(self, stage)

    def seconds(self) -> dict:
        out: dict = {}
        if self._pairs:
            self._pairs[-1][2].synchronize()
        for stage, start, end in self._pairs:
            out[stage] = out.get(stage, 0.0) + end.time_since(start) / 1e3
        return out


class _EventSpan:
    """One stage of an :class:`EventTimer`: an event recorded on its stream on entry and on
    exit (a class of its own, not one built per span: a filter search opens a dozen spans)."""
    __slots__ = ("timer", "stage", "start")

    def __init__(self, timer: EventTimer, stage: str):
        self.timer, self.stage = timer, stage

    def __enter__(self):
        self.start = driver().Event()
        self.start.record(self.timer.stream)
        return self

    def __exit__(self, *exc):
        end = driver().Event()
        end.record(self.timer.stream)
        self.timer._pairs.append((self.stage, self.start, end))
        return False


_NVML: dict = {}


def _nvml_handle():
    """NVML device handle for the current CUDA device (by PCI bus id), or None."""
    if "handle" not in _NVML:
        _NVML["handle"] = None
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() == 0:
                handle = ctypes.c_void_p()
                bus = device_attributes()["pci_bus_id"].encode()
                if lib.nvmlDeviceGetHandleByPciBusId_v2(bus, ctypes.byref(handle)) == 0:
                    _NVML.update(lib=lib, handle=handle)
        except Exception:  # noqa: BLE001 - NVML is optional
            pass
    return _NVML["handle"]


def sm_clock_mhz() -> Optional[int]:
    """Current SM clock of the CUDA device in MHz (NVML; nvidia-smi as fallback), or None."""
    handle = _nvml_handle()
    if handle is not None:
        clock = ctypes.c_uint()
        if _NVML["lib"].nvmlDeviceGetClockInfo(handle, 1, ctypes.byref(clock)) == 0:  # 1 = SM
            return int(clock.value)
    try:
        bus = device_attributes()["pci_bus_id"]
        out = subprocess.run(["nvidia-smi", f"--id={bus}", "--query-gpu=clocks.sm",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=10)
        return int(out.stdout.split()[0])
    except Exception:  # noqa: BLE001
        return None


_CLOCK = {"t": -1e9, "mhz": None}


def sm_clock_cached() -> Optional[int]:
    """:func:`sm_clock_mhz`, sampled at most once a second: the query costs ~0.1 ms of wall time."""
    now = time.monotonic()
    if now - _CLOCK["t"] > 1.0:
        _CLOCK.update(t=now, mhz=sm_clock_mhz())
    return _CLOCK["mhz"]
