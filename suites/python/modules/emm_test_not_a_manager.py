"""A class that is not a BaseCUDAMemoryManager subclass."""


class NotAManager:
    def __init__(self, context=None):
        self.context = context


_numba_memory_manager = NotAManager
