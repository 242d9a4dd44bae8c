"""A Python EMM plugin that needs no GPU, for the adapter tests: it hands out numba pointers over
made-up addresses, records every call in `events`, and misbehaves on chosen sizes."""
import contextlib
import ctypes
import itertools
import logging

from numba.cuda.cudadrv import driver as _driver

events = []
_serial = itertools.count()

OUT_OF_MEMORY = 1 << 50
RAISES_VALUE_ERROR = 13
NOT_IMPLEMENTED = 14
NO_DEVICE_POINTER = 15
BAD_POINTER_TYPE = 16
BARE_AUTOFREE = 17
FINALIZER_RAISES = 18
DRIVER_ERROR = 19


class _StrPointer:
    """Looks like a MemoryPointer but its device_pointer is text (no device_pointer_value)."""
    device_pointer = "0x1000"
    size = BAD_POINTER_TYPE


class Recording(_driver.BaseCUDAMemoryManager):
    emmkit_capabilities = ("memory_info", "ipc")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.allocations = {}

    def initialize(self):
        events.append("initialize")

    def reset(self):
        events.append("reset")

    def memalloc(self, size):
        if size == OUT_OF_MEMORY:
            raise _driver.CudaAPIError(2, "Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY")
        if size == DRIVER_ERROR:
            raise _driver.CudaAPIError(1, "Call to cuMemAlloc results in CUDA_ERROR_INVALID_VALUE")
        if size == RAISES_VALUE_ERROR:
            raise ValueError("thirteen is unlucky")
        if size == NOT_IMPLEMENTED:
            raise NotImplementedError("no device memory here")
        if size == NO_DEVICE_POINTER:
            return object()
        if size == BAD_POINTER_TYPE:
            return _StrPointer()
        # Made-up, distinct addresses: the first allocation of a size is at 0x100000 + size * 4 KiB.
        address = 0x100000 + size * 0x1000 + (next(_serial) << 32)
        key = address

        def finalize(size=size, key=key, allocations=self.allocations):
            allocations.pop(key, None)
            events.append(("freed", size))
            if size == FINALIZER_RAISES:
                raise RuntimeError("the finalizer of %d bytes failed" % size)

        memory = _driver.AutoFreePointer(self.context, ctypes.c_void_p(address), size,
                                         finalizer=finalize)
        if size == BARE_AUTOFREE:
            return memory
        self.allocations[key] = memory
        return memory.own()

    def memhostalloc(self, size, mapped=False, portable=False, wc=False):
        raise NotImplementedError("no host memory here")

    def mempin(self, owner, pointer, size, mapped=False):
        raise NotImplementedError("no pinning here")

    def get_memory_info(self):
        return _driver.MemoryInfo(free=100, total=200)

    def get_ipc_handle(self, memory):
        events.append(("ipc", memory.device_pointer_value, memory.size))
        handle = (ctypes.c_byte * 64)(*range(64))
        identity = {"pci_domain_id": 1, "pci_bus_id": 2, "pci_device_id": 3}
        return _driver.IpcHandle(memory, handle, memory.size, source_info=identity, offset=5)

    @contextlib.contextmanager
    def defer_cleanup(self):
        events.append("enter")
        try:
            yield
        finally:
            events.append("exit")

    @property
    def interface_version(self):
        return 1


# numba 0.56 makes the driver module's logger when the driver starts; _PendingDeallocs logs
# with it, so a test that never starts the driver provides it.
if not hasattr(_driver, "_logger"):
    _driver._logger = logging.getLogger("numba.cuda.cudadrv.driver")


class QueuedFrees(_driver.HostOnlyCUDAMemoryManager):
    """Derived from numba's HostOnlyCUDAMemoryManager, with no CUDA work: memalloc hands out
    made-up addresses tracked in the base's `allocations`, and a release queues its free in the
    base's `deallocations`, whose clear() (the host's flush point) runs it."""
    emmkit_capabilities = ("memory_info",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.deallocations.memory_capacity = 1 << 40  # numba sets it in initialize()

    def initialize(self):
        pass

    def memalloc(self, size):
        address = 0x200000 + (next(_serial) << 32)
        allocations, deallocations = self.allocations, self.deallocations

        def finalize(size=size, key=address):
            allocations.pop(key, None)
            deallocations.add_item(lambda handle: events.append(("freed", handle)), size, size)

        memory = _driver.AutoFreePointer(self.context, ctypes.c_void_p(address), size,
                                         finalizer=finalize)
        allocations[address] = memory
        return memory.own()

    def get_memory_info(self):
        return _driver.MemoryInfo(free=100, total=200)

    def get_ipc_handle(self, memory):
        raise NotImplementedError("no IPC here")

    @property
    def interface_version(self):
        return 1
