"""An EMM plugin backed by CuPy's device memory pool (cupy.cuda.MemoryPool).

    NUMBA_CUDA_MEMORY_MANAGER=cupy_manager python3 my_numba_program.py
    emm-certify --python cupy_manager            # with examples/python on PYTHONPATH

Device memory comes from a CuPy pool of the plugin's own. The pool caches freed blocks, so the
plugin declares pooling and not no_caching. reset() empties the cache, and blocks released after
a reset go straight back to the driver (LIFE-7). Host memory is numba's own (the HostOnly base).
IPC handles carry the block's offset inside its driver allocation (GetIpcHandleMixin asks the
driver for the allocation's base). Memory info is the device's (cudaMemGetInfo): the pool's cache
is memory in use.
"""
import cupy

from _common import (GetIpcHandleMixin, HostOnlyCUDAMemoryManager, MemoryInfo, MemoryPointer,
                     device_pointer, out_of_memory)


class _PoolState:
    """What the finalizers share with the plugin; they must not keep the plugin itself alive."""

    def __init__(self):
        self.pool = None
        self.generation = 0


class CuPyMemoryManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    emmkit_capabilities = ("ipc", "memory_info", "pooling", "thread_safe")
    emmkit_defer_cleanup = ("holds the HostOnly guard (host frees deferred); device blocks go "
                            "back to CuPy's pool at once")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._state = _PoolState()  # the pool is made in initialize(): REG-2, LIFE-4

    def _device(self):
        return cupy.cuda.Device(self.context.device.id if self.context is not None else 0)

    def initialize(self):
        if self._state.pool is None:
            self._state.pool = cupy.cuda.MemoryPool()

    def memalloc(self, size):
        self.initialize()
        try:
            with self._device():
                block = self._state.pool.malloc(size)
        except cupy.cuda.memory.OutOfMemoryError as error:
            raise out_of_memory("memalloc(%d)" % size, error) from error
        state, generation, held = self._state, self._state.generation, [block]

        def finalize():
            held.clear()  # the last reference to CuPy's pointer: the block returns to the pool
            if state.generation != generation:
                state.pool.free_all_blocks()  # released after reset(): back to the driver

        return MemoryPointer(self.context, device_pointer(block.ptr), size, finalizer=finalize)

    def get_memory_info(self):
        with self._device():
            free, total = cupy.cuda.runtime.memGetInfo()
        return MemoryInfo(free=free, total=total)

    def reset(self):
        super().reset()
        self._state.generation += 1
        if self._state.pool is not None:
            self._state.pool.free_all_blocks()

    def defer_cleanup(self):
        return super().defer_cleanup()

    @property
    def interface_version(self):
        return 1


_numba_memory_manager = CuPyMemoryManager
