"""An EMM plugin backed by CuPy's device memory pool (cupy.cuda.MemoryPool).

    NUMBA_CUDA_MEMORY_MANAGER=cupy_manager python3 my_numba_program.py
    emm-certify --python cupy_manager            # PYTHONPATH=examples/python

Device memory comes from CuPy's pool, which caches freed blocks until reset() frees them all, so
the plugin declares pooling and not no_caching. Host memory is numba's own (HostOnly base), IPC
handles carry the offset of the pool block inside its driver allocation (GetIpcHandleMixin asks
the driver for the allocation's base), and memory info is the device's (cuMemGetInfo): CuPy's
pool keeps what it caches, so free memory is what the driver sees.
"""
import cupy

from _common import (GetIpcHandleMixin, HostOnlyCUDAMemoryManager, MemoryInfo, MemoryPointer,
                     device_pointer, out_of_memory)


class CuPyMemoryManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    emmkit_capabilities = ("ipc", "memory_info", "pooling", "thread_safe")
    emmkit_defer_cleanup = ("holds the HostOnly guard (host frees deferred); CuPy's pool frees "
                            "device blocks to its cache at once")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._pool = None  # made in initialize(): no CUDA work without a context (REG-2, LIFE-4)

    def initialize(self):
        if self._pool is None:
            self._pool = cupy.cuda.MemoryPool()

    def memalloc(self, size):
        if self._pool is None:
            self.initialize()
        try:
            block = self._pool.malloc(size)
        except cupy.cuda.memory.OutOfMemoryError as error:
            raise out_of_memory("memalloc(%d)" % size, error) from error
        # The finalizer keeps the CuPy MemoryPointer alive until numba drops its pointer: the
        # block goes back to the pool then, and not before (FIN-1).
        return MemoryPointer(self.context, device_pointer(block.ptr), size,
                             finalizer=lambda block=block: None)

    def get_memory_info(self):
        free, total = cupy.cuda.runtime.memGetInfo()
        return MemoryInfo(free=free, total=total)

    def reset(self):
        super().reset()
        if self._pool is not None:
            self._pool.free_all_blocks()

    def defer_cleanup(self):
        return super().defer_cleanup()

    @property
    def interface_version(self):
        return 1


_numba_memory_manager = CuPyMemoryManager
