"""An EMM plugin backed by PyTorch's CUDA caching allocator.

    NUMBA_CUDA_MEMORY_MANAGER=torch_manager python3 my_numba_program.py
    emm-certify --python torch_manager           # PYTHONPATH=examples/python

Device memory comes from torch.cuda.caching_allocator_alloc and goes back with
caching_allocator_delete when numba's last reference goes; the caching allocator keeps freed
blocks until reset() empties its cache (torch.cuda.empty_cache), so the plugin declares pooling
and not no_caching. IPC handles carry the offset inside the allocator's segment
(GetIpcHandleMixin), memory info is the device's (cuMemGetInfo through torch).
"""
import torch

from _common import (GetIpcHandleMixin, HostOnlyCUDAMemoryManager, MemoryInfo, MemoryPointer,
                     device_pointer, out_of_memory)


class TorchMemoryManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    emmkit_capabilities = ("ipc", "memory_info", "pooling", "thread_safe")
    emmkit_defer_cleanup = ("holds the HostOnly guard (host frees deferred); device frees go "
                            "to PyTorch's cache at once")

    def initialize(self):
        pass  # PyTorch sets its allocator up on first use

    def _device(self):
        return self.context.device.id if self.context is not None else 0

    def memalloc(self, size):
        device = self._device()
        try:
            address = torch.cuda.caching_allocator_alloc(size, device=device)
        except torch.cuda.OutOfMemoryError as error:
            raise out_of_memory("memalloc(%d)" % size, error) from error

        def finalize(address=address):
            torch.cuda.caching_allocator_delete(address)

        return MemoryPointer(self.context, device_pointer(address), size, finalizer=finalize)

    def get_memory_info(self):
        free, total = torch.cuda.mem_get_info(self._device())
        return MemoryInfo(free=free, total=total)

    def reset(self):
        super().reset()
        torch.cuda.empty_cache()

    def defer_cleanup(self):
        return super().defer_cleanup()

    @property
    def interface_version(self):
        return 1


_numba_memory_manager = TorchMemoryManager
