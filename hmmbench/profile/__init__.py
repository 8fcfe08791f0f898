"""Workload "profile": HMMER3 profile-HMM filters (SSV/MSV, Viterbi filter, generic Viterbi/Forward).

pyhmmer (HMMER 3.4) parses models and sequences and configures the profile; this package holds
the flat NumPy data model derived from it (:mod:`.model`), dataset loaders/generator
(:mod:`.datasets`) and the pipeline pass-count view (:mod:`.pipeline`).
"""
