"""An EMM plugin backed by PyTorch's CUDA caching allocator.

    NUMBA_CUDA_MEMORY_MANAGER=torch_manager python3 my_numba_program.py
    emm-certify --python torch_manager           # with examples/python on PYTHONPATH

Device memory comes from torch.cuda.caching_allocator_alloc. It goes back with
caching_allocator_delete when numba's last reference goes. The caching allocator keeps freed
blocks, so the plugin declares pooling and not no_caching. reset() empties the cache
(torch.cuda.empty_cache), and blocks released after a reset empty it again (LIFE-7), at once or
when the last defer_cleanup() scope ends (nothing is freed to the driver inside a scope, spec §8). IPC handles
carry the offset inside the allocator's segment (GetIpcHandleMixin). Memory info is the device's
(torch.cuda.mem_get_info).
"""
import torch

from _common import (GetIpcHandleMixin, HostOnlyCUDAMemoryManager, MemoryInfo, MemoryPointer,
                     ReleasedAfterReset, device_pointer, out_of_memory)


class TorchMemoryManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    emmkit_capabilities = ("ipc", "memory_info", "pooling", "thread_safe")
    emmkit_defer_cleanup = ("holds the HostOnly guard (host frees deferred); device blocks go "
                            "back to PyTorch's cache at once, and a block released after "
                            "reset() empties the cache only when the last scope ends")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._released = ReleasedAfterReset(torch.cuda.empty_cache)

    def _device(self):
        return self.context.device.id if self.context is not None else 0

    def initialize(self):
        pass  # PyTorch sets its allocator up on first use

    def memalloc(self, size):
        device = self._device()
        try:
            address = torch.cuda.caching_allocator_alloc(size, device=device)
        except torch.cuda.OutOfMemoryError as error:
            raise out_of_memory("memalloc(%d)" % size, error) from error
        released, generation = self._released, self._released.generation

        def finalize():
            torch.cuda.caching_allocator_delete(address)
            if released.generation != generation:
                released.trim()  # released after reset(): back to the driver

        return MemoryPointer(self.context, device_pointer(address), size, finalizer=finalize)

    def get_memory_info(self):
        free, total = torch.cuda.mem_get_info(self._device())
        return MemoryInfo(free=free, total=total)

    def reset(self):
        super().reset()
        self._released.generation += 1
        torch.cuda.empty_cache()

    def defer_cleanup(self):
        return self._released.scope(super().defer_cleanup())

    @property
    def interface_version(self):
        return 1


_numba_memory_manager = TorchMemoryManager
