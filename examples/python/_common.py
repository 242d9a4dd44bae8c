"""What the example Python EMM plugins share: numba's classes, in either package layout, and the
translation of a library's out-of-memory error into numba's (ALLOC-3: Numba treats only
CudaAPIError(CUDA_ERROR_OUT_OF_MEMORY) as out of memory)."""
import contextlib
import threading

from numba.cuda.cudadrv import driver as _driver

try:  # numba 0.56 has the enums module; numba-cuda 0.30 does not (its driver uses cuda-bindings)
    from numba.cuda.cudadrv import enums as _enums
except ImportError:
    _enums = None

BaseCUDAMemoryManager = _driver.BaseCUDAMemoryManager
GetIpcHandleMixin = _driver.GetIpcHandleMixin
HostOnlyCUDAMemoryManager = _driver.HostOnlyCUDAMemoryManager
MemoryPointer = _driver.MemoryPointer
MemoryInfo = _driver.MemoryInfo
CudaAPIError = _driver.CudaAPIError

# The CUresult value is 2 in every CUDA version.
CUDA_ERROR_OUT_OF_MEMORY = getattr(_enums, "CUDA_ERROR_OUT_OF_MEMORY", 2)


def device_pointer(address):
    """A pointer value numba-cuda reads: a cuda-bindings CUdeviceptr, else the int."""
    binding = getattr(_driver, "binding", None)
    if binding is not None and hasattr(binding, "CUdeviceptr"):
        return binding.CUdeviceptr(int(address))
    return int(address)


def out_of_memory(call, cause):
    """numba's out-of-memory error for `call`, chained to the library's own error."""
    error = CudaAPIError(CUDA_ERROR_OUT_OF_MEMORY, "%s: %s" % (call, cause))
    error.__cause__ = cause
    return error


class ReleasedAfterReset:
    """What a caching plugin's finalizers share with it (they must not keep the plugin itself
    alive): the reset() count, and the trim of the library's cache (`empty_cache`, e.g. a CuPy
    pool's free_all_blocks, never a method of the plugin) for a block released after a reset
    (LIFE-7). Nothing is freed to the driver
    inside a defer_cleanup() scope (spec §8), so a trim asked for inside one runs when the last
    scope ends."""

    def __init__(self, empty_cache=None):
        self.generation = 0
        self.empty_cache = empty_cache
        self._lock = threading.Lock()
        self._scopes = 0
        self._trim_later = False

    def trim(self):
        with self._lock:
            if self._scopes > 0:
                self._trim_later = True
                return
            self._trim_later = False
        if self.empty_cache is not None:
            self.empty_cache()

    @contextlib.contextmanager
    def scope(self, parent):
        """A defer_cleanup() scope: the HostOnly base's `parent` scope, and no trim inside it."""
        with parent:
            with self._lock:
                self._scopes += 1
            try:
                yield
            finally:
                with self._lock:
                    self._scopes -= 1
                    trim = self._scopes == 0 and self._trim_later
                if trim:
                    self.trim()
