"""HMMER3-exact NumPy references of the profile workload: the SIMD filters (SSV, MSV, Viterbi
filter; :mod:`.filters`) and the generic float DP (Viterbi, Forward, MSV; :mod:`.generic`)."""
