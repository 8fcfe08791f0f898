"""Scaling out on Dask (``hmmbench run --cluster``): one benchmark over every GPU of a host or
over many hosts, on Dask ``distributed`` (with ``dask-cuda``'s ``LocalCUDACluster`` for one worker
per GPU) -- never a scheduler, queue or protocol of our own.

Workload-free, like the runner: the workload supplies the atoms a unit is cut at and their cost
(:meth:`hmmbench.workload.Workload.shard_costs` / ``shard``).

:mod:`.options`   :class:`~.options.ClusterOptions`, the typed options the CLI builds once
                  (imports no Dask: without ``--cluster`` nothing of Dask is imported or started)
:mod:`.connect`   a client for ``local`` (a cluster started here, closed on the way out, Ctrl-C
                  included) or a scheduler address, within a timeout
:mod:`.settings`  what shard mode wants of the cluster, through Dask's configuration and a
                  worker plugin (work stealing and profilers off, a short GIL switch interval),
                  and what the cluster runs with, read back for the record
:mod:`.shards`    cost-balanced contiguous shards of whole atoms (batches, sequences)
:mod:`.worker`    what runs on a worker: probe, load or rebuild its shard, run a piece, fleet runs
:mod:`.sharded`   shard mode on the client: datasets and backends as stand-ins the ordinary runner
                  drives (warm-up and cross-check, repeats, records), data resident on workers
:mod:`.placement` one dataset's shards resident on the workers: each call of a piece on all of
                  them, its results kept there until read (or sent back with the call)
:mod:`.memory`    before anything is generated or placed: every worker's shards of a set
                  generated piece by piece, from its plan, against the worker's memory limit;
                  the client's cross-check against its own
:mod:`.timeline`  per-worker stage medians and the timeline of a sharded call
:mod:`.scaling`   the scaling study's efficiency and table
:mod:`.fleet`     fleet mode: the same matrix on every worker
:mod:`.command`   ``hmmbench run --cluster`` end to end
"""
