"""NumPy arrays in CUDA page-locked memory, allocated through an EMM plugin (NEP 49).

    import numpy as np
    from emm_nep49_pinned import emm_pinned, is_pinned

    with emm_pinned():                 # emm_pinned(mapped=True): also mapped into the device
        a = np.empty((4096, 4096))     # its data is the plugin's memhostalloc()
    assert is_pinned(a)

The handler is current for this thread (or asyncio task) inside the `with` block only; arrays
made there keep it, and their memory goes back through the plugin's finalizers when NumPy frees
them. The plugin is the one EMM_CUDA_MEMORY_MANAGER chooses (unset: the reference manager).
"""

import contextlib

import _emm_nep49_pinned as _native

try:
    from numpy._core import multiarray as _multiarray
except ImportError:  # NumPy 1.x
    from numpy.core import multiarray as _multiarray

handler = _native.handler
mapped_handler = _native.mapped_handler
NAMES = ("emm_pinned", "emm_pinned_mapped")


@contextlib.contextmanager
def emm_pinned(mapped=False):
    """Makes the pinned handler NumPy's current one for the duration of the block."""
    previous = _native.set_handler(mapped_handler if mapped else handler)
    try:
        yield
    finally:
        _native.set_handler(previous)


def is_pinned(array):
    """True when the array's data (or its base's) came from a pinned handler."""
    while array is not None and not array.flags.owndata:
        array = getattr(array, "base", None)
    return array is not None and _multiarray.get_handler_name(array) in NAMES


def live_blocks(mapped=False):
    """Blocks the handler gave NumPy that NumPy has not freed yet."""
    return _native.live_blocks(mapped)
