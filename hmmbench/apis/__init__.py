"""Host glue per GPU API, shared by every workload: device choice, compilation and caching,
event timing, device buffers. Workload packages build their backends on these."""
