"""A module that imports cleanly: targets and exceptions for the embedding-core tests."""


class CustomError(Exception):
    pass


class Outer:
    class Inner:
        value = 42


counter = 0


def increment():
    global counter
    counter += 1


def fail(text):
    raise CustomError(text)
