"""The backends behind ``tt.distributed``: ranks as threads of one process
(``threads``), or as MPI processes (``mpi``, on mpi4py)."""
