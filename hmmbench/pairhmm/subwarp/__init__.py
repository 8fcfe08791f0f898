"""The sub-warp backend family of workload "pairhmm": p threads per pair, k pairs per warp.

``cuda.py`` (``cuda-subwarp``, :class:`~.cuda.SubwarpBackend`) and ``opencl.py``
(``opencl-subwarp``) share the bins and host layout (``layout.py``), the float64 rescue's
configurations (``rescue.py``) and host staging (``staging.py``). The CUDA side keeps its device
resources across calls (``device.py``), runs one call's chunks and launches (``call.py``; small
calls: ``small.py``), builds kernels ahead of time (``build.py``) and merges calls in flight into
one (``batched.py``, shared with OpenCL). ``variants.py`` lists the variants and families that
``hmmbench run`` can select.
"""
