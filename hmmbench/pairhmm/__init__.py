"""Workload "pairhmm": GATK's Pair-HMM forward algorithm (read x haplotype log10 likelihoods).

The data model (:mod:`.model`, ``PairSet``), datasets by name (:mod:`.datasets`), the layout
steps both APIs share (:mod:`.layouts`, ``subwarp_layout``), the host glue per API
(:mod:`.cuda`, :mod:`.cuda_subwarp`, :mod:`.opencl`) and what the core asks of the workload
(:mod:`.workload`).
"""
