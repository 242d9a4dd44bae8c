"""Raises while it is imported: the loader must show this traceback."""


def _configure():
    raise ValueError("plugin configuration is broken")


_configure()
