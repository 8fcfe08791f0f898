"""The inter-task and wavefront backend families of workload "pairhmm": a thread (inter-task) or
a warp / a block (intra-task, multi-warp) per pair, on CUDA (``cuda.py``) and OpenCL
(``opencl.py``). Both APIs share the pairs' placement (``layout.py``: length-sorted groups, the
pair-order permutation, scratch blocks) and the families' variant names (``variants.py``).
"""
