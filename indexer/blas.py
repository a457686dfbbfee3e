"""One BLAS thread for the whole process.

Its own module because two layers need it: the multilingual encoder (indexer/models/multilingual.py) and the
exact vector leg's matrix product (indexer/store/sqlite/exact.py); before, the store imported the model module
for it and the model module the store, a circle over one private function.
"""

from __future__ import annotations


def one_blas_thread() -> None:
    """NumPy's BLAS on one thread for the rest of the process (the encoder sets it when it loads, the exact leg
    before its first product).

    Its matrices are small and a matrix-vector product is memory-bound: more BLAS threads only fight the
    main model's sessions and each other (7,300 x 896 on a busy 2-core machine: 32 ms with OpenBLAS's 2
    threads, 4.5 ms with one). Set for good rather than around each call: threadpoolctl's limit is
    process-wide, so two threads each entering and leaving it (the indexer's multilingual thread and a
    search) could restore the default under the other one's feet; vectors then came out different in the
    last bits from one run to the next."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
