"""The NEP 49 clauses that need real NumPy (NEP49-4 and NEP49-15 to NEP49-22), one function each.

Run inside emm-certify's clause child by the NumPy bridge (numpy_bridge.cpp embeds this file),
never on its own. `_emm_nep49` is the bridge's module: the subject's capsule, NumPy's default
handler, and PyDataMem_SetHandler. Each scenario raises Fail saying what was expected and seen;
run() turns any other exception into a failure naming it.
"""

import asyncio
import contextvars
import gc
import pickle
import sys
import tempfile
import threading

import numpy as np

import _emm_nep49 as _k

try:
    from numpy._core import multiarray as _ma
except ImportError:  # NumPy 1.x
    from numpy.core import multiarray as _ma

get_name = _ma.get_handler_name
get_version = _ma.get_handler_version
DEFAULT = "default_allocator"
NOTES = []


class Fail(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Fail(message)


class installed:
    """The subject as the current handler of this context, restored on exit."""

    def __init__(self, capsule):
        self.capsule = capsule
        self.old = None

    def __enter__(self):
        self.old = _k.set_handler(self.capsule)
        return self

    def __exit__(self, *exc):
        _k.set_handler(self.old)
        self.old = None
        return False


def is_default(capsule):
    return capsule is _k.default_handler()


def nep49_4():
    cap = _k.subject()
    name = _k.capsule_name(cap)
    check(name == "mem_handler",
          f"expected a PyCapsule named 'mem_handler', seen {name!r}: NumPy 2.1 and later refuse "
          "it in PyDataMem_SetHandler, earlier ones accept it and then fail every allocation; "
          "create it with PyCapsule_New(&handler, \"mem_handler\", destructor)")
    if _k.adopted():
        NOTES.append("the kit made the capsule (a --nep49-library handler)")
    with installed(cap):
        a = np.arange(1000.0)
        got = get_name(a)
    check(got == _k.struct_name(),
          f"an array made with the capsule installed reports the handler {got!r}, expected "
          f"{_k.struct_name()!r}")
    check(a.sum() == 499500.0, "an array made through the handler does not hold its values")


def nep49_15():
    with installed(_k.subject()):
        for what, make in (("np.empty(2**60, np.uint8)", lambda: np.empty(2**60, np.uint8)),
                           ("np.zeros(2**60, np.uint8)", lambda: np.zeros(2**60, np.uint8))):
            try:
                make()
            except MemoryError:
                pass
            else:
                raise Fail(f"{what} succeeded: the handler returned a block of 2**60 bytes "
                           "instead of NULL")
        a = np.arange(16.0)
        try:
            a.resize(2**57, refcheck=False)
        except MemoryError:
            pass
        else:
            raise Fail("a.resize(2**57) (2**60 bytes) succeeded: expected realloc to return NULL "
                       "and NumPy to raise MemoryError")
        check(a.shape == (16,) and a.sum() == 120.0,
              f"after a refused resize the array holds {a.shape} with sum {a.sum()}, expected "
              "its 16 elements unchanged (NULL from realloc leaves the block valid)")
        b = np.arange(1000.0)
        check(b.sum() == 499500.0, "the handler no longer works after refusing an allocation")


def nep49_16():
    cap = _k.subject()
    default = is_default(cap)
    base = sys.getrefcount(cap)
    old = _k.set_handler(cap)
    try:
        check(old is _k.default_handler(),
              f"PyDataMem_SetHandler returned {old!r}, expected the previous handler (NumPy's "
              "default in a fresh context)")
        if not default:
            extra = sys.getrefcount(cap) - base
            check(extra == 1, f"with the capsule installed it has {extra} more references, "
                  "expected 1 (the context's)")
        check(get_name() == _k.struct_name(),
              f"get_handler_name() is {get_name()!r} with the handler installed, expected "
              f"{_k.struct_name()!r}")
    finally:
        back = _k.set_handler(old)
    check(back is cap, f"restoring the previous handler returned {back!r}, expected the capsule "
          "that was installed")
    del back
    if default:
        NOTES.append("the subject is NumPy's default handler, whose references NumPy shares: "
                     "the capsule's reference count is not compared")
    else:
        left = sys.getrefcount(cap) - base
        check(left == 0, f"after restoring, the capsule has {left:+d} references, expected none "
              "left over")
    check(get_name() == DEFAULT,
          f"after restoring, get_handler_name() is {get_name()!r}, expected {DEFAULT!r}")


def nep49_17():
    name, version = _k.struct_name(), _k.struct_version()
    with installed(_k.subject()):
        check(get_name() == name, f"get_handler_name() is {get_name()!r}, expected {name!r}")
        check(get_version() == version,
              f"get_handler_version() is {get_version()!r}, expected {version}")
        a = np.arange(10.0)
        view = a[2:5]
        reshaped = a.reshape(2, 5)
    check(get_name(a) == name and get_version(a) == version,
          f"an owning array reports ({get_name(a)!r}, {get_version(a)!r}), expected "
          f"({name!r}, {version})")
    for what, v in (("a slice", view), ("a reshape", reshaped)):
        check(get_name(v) is None and get_version(v) is None,
              f"{what} (a view) reports ({get_name(v)!r}, {get_version(v)!r}), expected "
              "(None, None): views own no data")
    check(get_name(reshaped.base) == name, "the base of a view does not report the handler")


def nep49_18():
    cap = _k.subject()
    name = _k.struct_name()
    default = is_default(cap)
    base = sys.getrefcount(cap)
    with installed(cap):
        arrays = [np.arange(1000.0) for _ in range(4)]
    if not default:
        held = sys.getrefcount(cap) - base
        check(held == 4, f"4 arrays made under the handler hold {held} references to its capsule, "
              "expected 4 (one each: the capsule must live as long as they do)")
    check(get_name() == DEFAULT, f"the current handler is {get_name()!r} after restoring, "
          f"expected {DEFAULT!r}")
    for a in arrays:
        check(get_name(a) == name, f"after the current handler changed, an array reports "
              f"{get_name(a)!r}, expected {name!r} (the handler it was made with)")
    a = arrays[0]
    a.resize(100000, refcheck=False)
    check(a[:1000].sum() == 499500.0 and not a[1000:].any(),
          "growing an array (realloc through its own handler) lost its values")
    a.resize(10, refcheck=False)
    check(a.sum() == 45.0, "shrinking an array (realloc through its own handler) lost its values")
    check(get_name(a) == name, f"after resize the array reports {get_name(a)!r}, expected {name!r}")
    del a, arrays
    gc.collect()
    if default:
        NOTES.append("the subject is NumPy's default handler: the capsule's reference count is "
                     "not compared")
    else:
        left = sys.getrefcount(cap) - base
        check(left == 0, f"after the arrays went, the capsule has {left:+d} references, expected "
              "none left over")


def nep49_19():
    cap = _k.subject()
    name = _k.struct_name()
    seen = {}

    def look():
        seen["started"] = get_name()

    with installed(cap):
        thread = threading.Thread(target=look)
        thread.start()
        thread.join()
    check(seen.get("started") == DEFAULT,
          f"a thread started while the handler was current saw {seen.get('started')!r}, expected "
          f"{DEFAULT!r} (each thread starts with NumPy's default)")

    def install():
        _k.set_handler(cap)
        seen["made"] = get_name(np.arange(10.0))

    thread = threading.Thread(target=install)
    thread.start()
    thread.join()
    check(seen.get("made") == name,
          f"an array made in a thread that installed the handler reports {seen.get('made')!r}, "
          f"expected {name!r}")
    check(get_name() == DEFAULT, f"after another thread installed the handler, this thread's "
          f"handler is {get_name()!r}, expected {DEFAULT!r}")


def nep49_20():
    cap = _k.subject()
    name = _k.struct_name()

    async def current():
        return get_name()

    async def change():
        _k.set_handler(None)
        return get_name()

    async def main():
        _k.set_handler(cap)
        inherited = await asyncio.create_task(current())
        changed = await asyncio.create_task(change())
        sibling = await asyncio.create_task(current())
        return inherited, changed, sibling, get_name()

    inherited, changed, sibling, parent = asyncio.run(main())
    check(inherited == name, f"a child task saw {inherited!r}, expected its parent's {name!r}")
    check(changed == DEFAULT, f"a task that restored the default saw {changed!r}")
    check(sibling == name, f"a sibling of a task that changed the handler saw {sibling!r}, "
          f"expected {name!r}")
    check(parent == name, f"the parent task saw {parent!r} after a child changed the handler, "
          f"expected {name!r}")
    check(get_name() == DEFAULT, f"outside asyncio.run the handler is {get_name()!r}, "
          f"expected {DEFAULT!r}")


class _LengthHint:
    def __iter__(self):
        return iter(())

    def __length_hint__(self):
        return 10


def nep49_21():
    with installed(_k.subject()):
        a = np.fromstring("", sep=" ")
        check(a.size == 0, "np.fromstring('', sep=' ') is not empty")
        with tempfile.TemporaryFile() as f:
            b = np.fromfile(f, sep=" ")
        check(b.size == 0, "np.fromfile(empty file, sep=' ') is not empty")
        c = np.arange(8.0)
        c.resize(0, refcheck=False)
        check(c.size == 0, "resize(0) left elements")
        d = np.fromiter(_LengthHint(), dtype=np.float64)
        check(d.size == 0, "np.fromiter of an empty iterator with a length hint is not empty")
        e = np.arange(100, dtype=">i8")[::-1].copy()
        check((np.sort(e) == np.arange(100)).all(), "np.sort of a non-native array is wrong")
        check((np.argsort(e) == np.arange(99, -1, -1)).all(),
              "np.argsort of a non-native array is wrong")
        p = np.argpartition(e, 10)
        check(e[p[10]] == 10, "np.argpartition of a non-native array is wrong")
        for protocol in (2, 5):
            x = np.arange(100.0)
            y = pickle.loads(pickle.dumps(x, protocol=protocol))
            check((x == y).all(), f"a pickle round trip (protocol {protocol}) changed the values")
        o = np.empty(10, dtype=object)
        o[:] = [str(i) for i in range(10)]
        check(list(o.copy()) == [str(i) for i in range(10)], "copying an object array failed")
        z = np.zeros(5, dtype=object)
        check(all(v == 0 for v in z), "np.zeros(dtype=object) is not all 0")
        np.empty((2, 0, 2))
        np.zeros((0, 3))
        del a, b, c, d, e, p, x, y, o, z
    gc.collect()


def nep49_22():
    n = 200000
    expected = n * (n - 1) // 2
    text = " ".join(map(str, range(n)))
    with installed(_k.subject()):
        a = np.fromstring(text, sep=" ", dtype=np.int64)
        with tempfile.TemporaryFile("w+") as f:
            f.write(text)
            f.flush()
            f.seek(0)
            b = np.fromfile(f, sep=" ", dtype=np.int64)
    for what, v in (("np.fromstring", a), ("np.fromfile", b)):
        check(v.size == n and int(v.sum()) == expected,
              f"{what} of {n} numbers with sep=' ' gave {v.size} numbers summing to "
              f"{int(v.sum())}, expected {n} summing to {expected}")
    check(get_name(a) == _k.struct_name(), "the text reader's array does not use the handler")


def run(clause_id):
    """(failure or "", notes) for one clause, in a copy of the current context."""
    del NOTES[:]
    scenario = globals().get("nep49_" + clause_id.split("-")[-1])
    if scenario is None:
        return (f"no NumPy scenario for {clause_id}", [])
    try:
        contextvars.copy_context().run(scenario)
        return ("", list(NOTES))
    except Fail as failure:
        return (str(failure), list(NOTES))
    except BaseException as error:  # what NumPy raised under the handler
        return (f"NumPy raised {type(error).__name__}: {error} under the handler, expected no "
                "error", list(NOTES))
