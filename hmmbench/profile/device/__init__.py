"""The device backends of workload "profile" (CUDA through PyCUDA, OpenCL through PyOpenCL).

``cuda.py`` and ``opencl.py`` hold the backends (task, warp-group, CUDAMPF-style, generic
Viterbi/Forward, whole pipeline); they share the profiles' striping and generic tables
(``layout.py``), the warp-group kernels' variants and defines (``warp.py``), the host side of the
filters (``host.py``: launch order, the SSV -> MSV fallback, finishing integers into nats), the
database kept on the device across cells (``resident.py``; on CUDA ``cuda_resident.py``), the
whole pipeline on the device (``pipeline.py``) and a batch of models in one launch
(``batch.py``).
"""
