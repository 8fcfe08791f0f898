"""Workload "pairhmm": GATK's Pair-HMM forward algorithm (read x haplotype log10 likelihoods).

The data model (:mod:`.model`, ``PairSet``), datasets by name (:mod:`.datasets`), what the core
asks of the workload (:mod:`.workload`) and one package per backend family: the inter-task and
wavefront families (:mod:`.intertask`) and the sub-warp family (:mod:`.subwarp`), each with its
CUDA and OpenCL host modules and its own layout steps; the peers in :mod:`.peers`.
"""
