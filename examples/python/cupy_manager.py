"""An EMM plugin backed by CuPy's device memory pool (cupy.cuda.MemoryPool).

    NUMBA_CUDA_MEMORY_MANAGER=cupy_manager python3 my_numba_program.py
    emm-certify --python cupy_manager            # with examples/python on PYTHONPATH

Device memory comes from a CuPy pool of the plugin's own. The pool caches freed blocks, so the
plugin declares pooling and not no_caching. reset() empties the cache, and blocks released after
a reset go back to the driver (LIFE-7): at once, or when the last defer_cleanup() scope ends
(nothing is freed to the driver inside a scope, spec §8). Host memory is numba's own (the HostOnly base).
IPC handles carry the block's offset inside its driver allocation (GetIpcHandleMixin asks the
driver for the allocation's base). Memory info is the device's (cudaMemGetInfo): the pool's cache
is memory in use.
"""
import cupy

from _common import (GetIpcHandleMixin, HostOnlyCUDAMemoryManager, MemoryInfo, MemoryPointer,
                     ReleasedAfterReset, device_pointer, out_of_memory)



class CuPyMemoryManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    emmkit_capabilities = ("ipc", "memory_info", "pooling", "thread_safe")
    emmkit_defer_cleanup = ("holds the HostOnly guard (host frees deferred); device blocks go "
                            "back to CuPy's pool at once, and a block released after reset() "
                            "empties the pool only when the last scope ends")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._pool = None  # made in initialize(): REG-2, LIFE-4
        self._total = None  # the device's memory, read on first use
        self._released = ReleasedAfterReset()

    def _device(self):
        return cupy.cuda.Device(self.context.device.id if self.context is not None else 0)

    def _device_total(self):
        if self._total is None:
            with self._device():
                self._total = cupy.cuda.runtime.memGetInfo()[1]
        return self._total

    def initialize(self):
        if self._pool is None:
            self._pool = cupy.cuda.MemoryPool()
            self._released.empty_cache = self._pool.free_all_blocks

    def memalloc(self, size):
        self.initialize()
        if size > self._device_total():
            # Refused before CuPy sees it: CuPy 14's pool crashed the process (SIGSEGV) on
            # requests larger than the device (ALLOC-3 asks for 1 PiB, twice the device and
            # SIZE_MAX - 100) instead of raising its OutOfMemoryError.
            raise out_of_memory("memalloc(%d)" % size,
                                MemoryError("more than the device's %d bytes" %
                                            self._device_total()))
        try:
            with self._device():
                block = self._pool.malloc(size)
        except cupy.cuda.memory.OutOfMemoryError as error:
            raise out_of_memory("memalloc(%d)" % size, error) from error
        released, generation, held = self._released, self._released.generation, [block]

        def finalize():
            held.clear()  # the last reference to CuPy's pointer: the block returns to the pool
            if released.generation != generation:
                released.trim()  # released after reset(): back to the driver

        return MemoryPointer(self.context, device_pointer(block.ptr), size, finalizer=finalize)

    def get_memory_info(self):
        with self._device():
            free, total = cupy.cuda.runtime.memGetInfo()
        return MemoryInfo(free=free, total=total)

    def reset(self):
        super().reset()
        self._released.generation += 1
        if self._pool is not None:
            self._pool.free_all_blocks()

    def defer_cleanup(self):
        return self._released.scope(super().defer_cleanup())

    @property
    def interface_version(self):
        return 1


_numba_memory_manager = CuPyMemoryManager
