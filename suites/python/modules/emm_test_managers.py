"""Python EMM plugins for the CI tests that need no GPU: loading succeeds or fails by design."""
from numba.cuda.cudadrv.driver import (BaseCUDAMemoryManager, GetIpcHandleMixin,
                                       HostOnlyCUDAMemoryManager, MemoryInfo)


class _NoDriver(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    """Loads like any plugin; every allocation needs the driver (a GPU)."""

    def initialize(self):
        pass

    def memalloc(self, size):
        raise NotImplementedError("needs a GPU")

    def get_memory_info(self):
        return MemoryInfo(free=0, total=0)

    @property
    def interface_version(self):
        return 1


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
