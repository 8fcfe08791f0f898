"""HMMER3's constants that the references and the data model share."""

#: HMMER's p7P transition order in gm->tsc.
TRANSITIONS = ("MM", "IM", "DM", "BM", "MD", "DD", "MI", "II")
T_MM, T_IM, T_DM, T_BM, T_MD, T_DD, T_MI, T_II = range(8)

LOG2 = 0.69314718055994529          # eslCONST_LOG2
