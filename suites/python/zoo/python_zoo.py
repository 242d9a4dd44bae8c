"""The known-bad Python plugin zoo: one numba EMM plugin per clause family, each breaking the
contract in one way, to prove the adapter shows the violation instead of hiding it (manifest.tsv
names the clause each one must fail). All but the broken part is numba's own default manager.
"""
import contextlib

from numba.cuda.cudadrv import driver as _driver

NumbaCUDAMemoryManager = _driver.NumbaCUDAMemoryManager
AutoFreePointer = _driver.AutoFreePointer
MemoryPointer = _driver.MemoryPointer
IpcHandle = _driver.IpcHandle


class _Declared(NumbaCUDAMemoryManager):
    emmkit_capabilities = ("ipc", "memory_info")
    emmkit_defer_cleanup = "numba's default: HostOnly queue disabled while active"


class TooSmallBlock(_Declared):
    """ALLOC-1/ALLOC-2: reports `size` bytes but allocates half of them."""

    def memalloc(self, size):
        real = super().memalloc(max(1, size // 2))
        return MemoryPointer(self.context, real.device_pointer, size, owner=None,
                             finalizer=lambda real=real: None)


class NeverFrees(_Declared):
    """LIFE-7: the finalizer forgets the block; reset() cannot give it back."""
    emmkit_capabilities = ("ipc", "memory_info", "no_caching")

    def memalloc(self, size):
        ptr = self._attempt_allocation(lambda: _driver.driver.cuMemAlloc(size))
        return MemoryPointer(self.context, ptr, size, finalizer=lambda: None)


class BareAutoFreePointer(_Declared):
    """ALLOC-5: returns the AutoFreePointer itself (refct 0), not its own()."""

    def memalloc(self, size):
        ptr = self._attempt_allocation(lambda: _driver.driver.cuMemAlloc(size))
        finalizer = _driver._alloc_finalizer(self, ptr, ptr, size)
        return AutoFreePointer(self.context, ptr, size, finalizer=finalizer)


class IpcWithoutSourceInfo(_Declared):
    """IPC-1: the handle carries no source_info (the device identity)."""

    def get_ipc_handle(self, memory):
        handle = super().get_ipc_handle(memory)
        return IpcHandle(memory, handle.handle, handle.size, source_info=None,
                         offset=handle.offset)


class MemoryInfoWrongError(_Declared):
    """INFO-2: declares no memory info but raises RuntimeError, not NotImplementedError."""
    emmkit_capabilities = ("ipc",)

    def initialize(self):
        pass

    def get_memory_info(self):
        raise RuntimeError("memory info is not available")


class OutOfMemoryWrongError(_Declared):
    """ALLOC-3: reports out of memory as MemoryError, not numba's CudaAPIError."""

    def memalloc(self, size):
        if size >= (1 << 40):
            raise MemoryError("too big")
        return super().memalloc(size)


class ResetForgetsParent(_Declared):
    """LIFE-10: reset() never calls HostOnlyCUDAMemoryManager's, so the parent's allocations
    table and its pending frees survive it (NBEP 7: an override "must also call the method from
    super()")."""

    def reset(self):
        pass


class GuardWithoutParent(_Declared):
    """DEFER-3: defer_cleanup() is a scope of its own that never holds the parent's, so host
    frees inside it are not deferred."""

    @contextlib.contextmanager
    def defer_cleanup(self):
        yield


class ConstructorTouchesCuda(_Declared):
    """REG-2: the constructor asks the driver for the device count even for context=None; the
    version probe Numba builds that way must do no CUDA work."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _driver.driver.get_device_count()


class InterfaceVersionTwo(_Declared):
    """REG-1: reports interface version 2; loading refuses it (exit 2)."""

    @property
    def interface_version(self):
        return 2
