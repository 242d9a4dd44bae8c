"""Python EMM plugins for the CI tests that need no GPU: loading succeeds or fails by design."""
from numba.cuda.cudadrv.driver import (BaseCUDAMemoryManager, GetIpcHandleMixin,
                                       HostOnlyCUDAMemoryManager, MemoryInfo)


class _Bare(HostOnlyCUDAMemoryManager):
    """Loads like any plugin; every allocation needs the driver (a GPU). Leaves get_memory_info
    and get_ipc_handle to its subclasses."""

    def initialize(self):
        pass

    def memalloc(self, size):
        raise NotImplementedError("needs a GPU")

    @property
    def interface_version(self):
        return 1


class _NoDriver(GetIpcHandleMixin, _Bare):
    def get_memory_info(self):
        return MemoryInfo(free=0, total=0)


class WellFormed(_NoDriver):
    """Declares its capabilities; loading succeeds, certification needs a GPU."""

    emmkit_capabilities = ("ipc", "memory_info")


_numba_memory_manager = WellFormed


class VersionTwo(_NoDriver):
    @property
    def interface_version(self):
        return 2


class VersionMethod(_NoDriver):
    def interface_version(self):  # a method, not a property: Numba compares it with 1
        return 1


class RaisesWithoutContext(_NoDriver):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.context is None:
            raise RuntimeError("this plugin needs a context to start")


class BadCapabilities(_NoDriver):
    emmkit_capabilities = ("ipc", "teleportation")


class FakeDriverCapability(_NoDriver):
    emmkit_capabilities = ("runs_on_fake_driver",)


class Abstract(BaseCUDAMemoryManager):
    """Leaves every method abstract: ABCMeta refuses to instantiate it."""


# No emmkit_capabilities below: memory_info and ipc are inferred from what each class overrides
# (spec §8; python/include/emm/python/python_plugin.hpp).


class InfersMemoryInfoAndIpc(_NoDriver):
    """Its own get_memory_info and GetIpcHandleMixin's get_ipc_handle."""


class InfersIpcLikeRmm(_Bare):
    """Shaped like RMM's RMMNumbaManager: its own get_ipc_handle, a get_memory_info stub."""

    def get_ipc_handle(self, memory):
        return memory.handle

    def get_memory_info(self):
        """Returns nothing: the allocations come from a pool (NBEP 7 allows this)."""
        raise NotImplementedError()


class InfersNothingFromStubs(GetIpcHandleMixin, _Bare):
    """Writes the methods ABCMeta demands as stubs; its own get_ipc_handle stub hides the
    mixin's."""

    def get_memory_info(self):
        raise NotImplementedError

    def get_ipc_handle(self, memory):
        raise NotImplementedError(f"no IPC for {memory!r} here", 1)


class OverridesNothing(_Bare):
    """Keeps numba's abstract get_memory_info and get_ipc_handle (ABCMeta's check switched off)."""


OverridesNothing.__abstractmethods__ = frozenset()
