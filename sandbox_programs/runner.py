"""R, the trusted runner. It runs INSIDE the sandbox: one per program, as the sandbox's own
process.

sandbox.py never imports this file. sandbox_isolation.py reads its text and starts it as
``python -s -S -B -c <this text> JOB CHAN MODE`` inside a fresh bwrap (plain path), or the zygote
(zygote.py) execs the same text with the same argv as pid 2 of a fresh sandbox. Imported (linters,
doctest collection), it only defines its functions. Stdlib C modules only, for a fast start.

What it receives
  * argv: JOB and CHAN, two descriptor numbers; MODE, one of "stdio", "call", "assert".
    stdin, stdout and stderr are the program's own (stdio mode: the test's input and output).
  * On JOB, read once and then closed, one frame (see `send`) holding ``marshal`` of
      stdio:   the candidate's source, which then runs here as ``__main__``;
      call:    (secret, source, [(fn_name, marshal((args, kwargs)), cap), ...]), cap: the most
               bytes (marshal) a value equal to the expected one takes (never sent to C);
      assert:  (secret, source, [test statements, ...]).
What it sends back
  * On CHAN: b"hello" first (the sandbox works). In call and assert mode then one frame per test,
    ``secret + marshal((i, kind, ...))`` with kind ok/bad/error/dead (call) or pass/fail/error/dead
    (assert), and finally ``secret + marshal(("done",))``. The parent drops anything not so
    prefixed.
  * stdio mode reports only through stdout, stderr and its exit status.

Call and assert mode fork C, the candidate process, *before* R reads the secret or the tests. C runs
the code and answers calls over a pipe with values that ``marshal`` accepts (exact builtin types
only: a Counter or a namedtuple crosses as its plain value, `as_plain`); R checks them again
(`plain`) and either forwards them (call mode: the parent compares them) or runs the test
statements itself, the candidate's functions being proxies into C (assert mode;
objects of a class the tests define cross both ways as data, `flatten`, and C is sent the code
with the names the tests read, `names_read`, and answers with the values of those it defines).
R is non-dumpable (prctl), so C can neither read its memory nor open its descriptors.
"""
import _ctypes
import builtins
import marshal
import os
import sys

PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
# call mode: the most memory (sys.getsizeof of every object) a returned value may take to leave the
# sandbox. The parent decodes it: 6 MB of marshalled empty sets are 250 MB of objects, and what R
# can build under the sandbox's memory limit would otherwise be built again in the parent.
MAX_VALUE_BYTES = 64 << 20
# how deep a returned value may nest to be compared (sandbox_checks.MAX_VALUE_DEPTH, the same); R
# measures it while it checks the value's types, so the parent never walks a value it cannot use
# (its own walk of 500,000 one-element lists cost it ~1 s of CPU per call)
MAX_VALUE_DEPTH = 100
# call mode: the most elements of a returned set (or keys of a dict) that may share one hash
MAX_SAME_HASH = 64
PR_SET_DUMPABLE = 4


def send(fd, b):
    """Write one frame: 4-byte little-endian length, then the payload.

    >>> r, w = os.pipe(); send(w, b"hello"); os.read(r, 9)
    b'\\x05\\x00\\x00\\x00hello'
    """
    b = len(b).to_bytes(4, "little") + b
    while b:
        b = b[os.write(fd, b):]


def readn(fd, n):
    parts, got = [], 0
    while got < n:
        c = os.read(fd, min(n - got, 1 << 20))
        if not c:
            return None
        parts.append(c)
        got += len(c)
    return b"".join(parts)


def recv(fd, cap=1 << 28):
    """Read one frame; None at EOF or if it announces more than `cap` bytes.

    >>> r, w = os.pipe(); send(w, b"abc"); os.close(w); recv(r), recv(r)
    (b'abc', None)
    """
    h = readn(fd, 4)
    if h is None:
        return None
    n = int.from_bytes(h, "little")
    return None if n > cap else readn(fd, n)


def exit_(code=None):
    """``exit()`` and ``quit()`` as in a normal interpreter (-S skips site, which defines them)."""
    raise SystemExit(code)


def dll_prctl():
    """libc's prctl through _ctypes (ctypes itself is a slow import)."""
    class Int(_ctypes._SimpleCData):
        _type_ = "i"

    class Fn(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = Int
    return Fn(_ctypes.dlsym(_ctypes.dlopen(None), "prctl"))


class Dead(Exception):
    pass


class CandidateError(Exception):
    pass


class Untransferable(CandidateError):
    pass


def plain(v, depth=0, budget=None):
    """`v` itself if it is built from exact builtin plain types only, else TypeError. With
    `budget`, [bytes so far, cap]: TypeError as well once its objects take more than the cap.

    >>> plain([1, (2.0, "x"), {None: b""}])
    [1, (2.0, 'x'), {None: b''}]
    >>> plain([True, type("I", (int,), {})(1)])
    Traceback (most recent call last):
    TypeError: value of type I cannot leave the sandbox
    >>> plain([set()] * 4, budget=[0, 800])
    Traceback (most recent call last):
    TypeError: value of more than 800 bytes cannot leave the sandbox
    """
    t = type(v)
    if t not in PLAIN or depth > 500:
        raise TypeError("value of type %s cannot leave the sandbox" % t.__name__)
    if budget is not None:
        budget[0] += sys.getsizeof(v)
        if budget[0] > budget[1]:
            raise TypeError("value of more than %d bytes cannot leave the sandbox" % budget[1])
        if len(budget) > 2 and t in (list, tuple, set, frozenset, dict) and depth >= budget[2]:
            budget[2] = depth + 1  # the levels of containers seen so far (sandbox_checks.nesting)
    if t is list or t is tuple or t is set or t is frozenset:
        for x in v:
            plain(x, depth + 1, budget)
    elif t is dict:
        for k, x in v.items():
            plain(k, depth + 1, budget)
            plain(x, depth + 1, budget)
    if budget is not None and (t is set or t is frozenset or t is dict) and len(v) > MAX_SAME_HASH:
        colliding(v)
    return v


# In C: how a value of a subclass of a plain type is read as its base type's value, with the base
# type's own methods (an overriding __iter__, __eq__ or items() is never asked)
SUBCLASSED = ((dict, lambda v: dict(dict.items(v))), (list, list.copy),
              (tuple, lambda v: tuple(tuple.__iter__(v))), (set, lambda v: set(set.__iter__(v))),
              (frozenset, lambda v: frozenset(frozenset.__iter__(v))), (int, int.__int__),
              (float, float.__float__), (str, str.__str__), (bytes, lambda v: bytes(memoryview(v))))


def as_plain(v, depth=0):
    """In C: `v` with each value of a subclass of a plain type -- a Counter, defaultdict or
    OrderedDict, a namedtuple, an IntEnum -- replaced by the plain value that its base type holds
    (`SUBCLASSED`), as a judge that compares with ``==`` (APPS, TACO) or serialises the value
    (LeetCode) reads it; anything else as it is. MBPP's own solution of its freq_count task returns
    a Counter: it could not leave C, a wrong answer. An int subclass whose ``__eq__`` lies crosses
    as its true value.

    >>> from collections import Counter, namedtuple
    >>> as_plain([Counter("aab"), namedtuple("P", "x y")(1, 2), 3])
    [{'a': 2, 'b': 1}, (1, 2), 3]
    """
    t = type(v)
    if t in ATOMS or depth > 500:
        return v
    if t is list or t is tuple or t is set or t is frozenset:
        return v if set(map(type, v)) <= ATOMS else t([as_plain(x, depth + 1) for x in v])
    if t is dict:
        return {as_plain(k, depth + 1): as_plain(x, depth + 1) for k, x in v.items()}
    for base, read in SUBCLASSED:
        if isinstance(v, base):
            return as_plain(read(v), depth + 1)
    return v


def colliding(keys):
    """TypeError if more than MAX_SAME_HASH of `keys` share a hash. An int's hash is its value
    modulo 2**61 - 1, the same in every process: ``{k * (2**61 - 1) for k in range(7000)}`` is
    built in quadratic time, and the parent built it again (decoding it) and twice more
    (comparing it): seconds of its CPU, outside the sandbox's limits and under the GIL, for each
    value. Refused here, what the parent builds takes linear time.

    >>> colliding(set(range(100)))
    >>> colliding({k * ((1 << 61) - 1) for k in range(100)})
    Traceback (most recent call last):
    TypeError: a set whose elements' hashes collide cannot leave the sandbox
    """
    seen = {}
    for k in keys:
        h = hash(k)
        seen[h] = n = seen.get(h, 0) + 1
        if n > MAX_SAME_HASH:
            raise TypeError("a %s whose elements' hashes collide cannot leave the sandbox"
                            % type(keys).__name__)


def text(e):
    """``str(e)``, never raising: the str of an int past the int/str conversion limit raises
    ValueError, which in R's handlers ended R and lost the remaining tests.

    >>> text(ValueError(10 ** 5000))
    '<ValueError that cannot be shown>'
    """
    try:
        return "%s" % (e,)
    except Exception:
        return "<%s that cannot be shown>" % type(e).__name__


def raised(r):
    """The exception R raises for C's ("error", type name, text) reply: a builtin exception type of
    that name (so a test's ``except ValueError`` works), else CandidateError. Never AssertionError,
    and never StopIteration or StopAsyncIteration: raised from a function that ``map``, ``filter``
    or ``iter(f, sentinel)`` calls, they end the iteration as if it had been exhausted, so
    ``assert all(map(lambda x: f(x) == g(x), xs))`` held for an f that always raised.

    >>> isinstance(raised(("error", "ValueError", "x")), ValueError)
    True
    >>> raised(("error", "StopIteration", ""))
    CandidateError('StopIteration: ')
    """
    etype, text = str(r[1])[:100], str(r[2])[:2000]
    base = getattr(builtins, etype, None)
    try:
        if not (isinstance(base, type) and issubclass(base, Exception)) or issubclass(
                base, (AssertionError, StopIteration, StopAsyncIteration)):
            raise TypeError
        cls = type(etype, (base, CandidateError), {})
    except Exception:
        cls = CandidateError
    return cls("%s: %s" % (etype, text) if cls is CandidateError else text)


def stdio(job, chan):
    """stdio mode: the program, ready to run as ``__main__`` (the caller runs it, at the top of the
    stack)."""
    code = marshal.loads(recv(job))
    os.close(job)
    os.close(chan)
    main = type(sys)("__main__")
    main.__file__ = "/tmp/main.py"
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    sys.argv = ["main.py"]
    return compile(code, "main.py", "exec"), main.__dict__


def candidate(c_in, from_c, asserts):
    """C, the candidate process: loads the code, then answers calls. It never holds the tests, the
    secret or the channel. It ends with os._exit (EOF from R, or a reply that cannot be sent).
    In assert mode (`asserts`) a reply holds the arguments as the call left them as well, and an
    object that a class of the candidate's made (``Solution()``) stays here: R gets its number in
    `objects` (`Remote`), and sends it back in place of the object (`incoming`)."""
    # the code runs as a module named solution, so that pickle finds its functions and classes by
    # that name (multiprocessing.Pool.map(g, ...), pickle.dumps of its objects: a PicklingError)
    module = sys.modules["solution"] = type(sys)("solution")
    g = module.__dict__
    g["__builtins__"] = builtins
    objects = []

    def reply(obj):
        try:
            send(from_c, marshal.dumps(obj, 2))
        except BaseException:
            os._exit(3)
    try:
        source, wanted = marshal.loads(recv(c_in))
        wanted = set(wanted)
        exec(compile(source, "solution.py", "exec"), g)
        names = {}
        for k, v in list(g.items()):
            if k.startswith("__"):
                continue
            if type(v) is type(sys):
                names[k] = ("mod", str(v.__name__))
            elif callable(v):
                names[k] = ("fn", b"")
            elif k in wanted:
                try:
                    names[k] = ("val", marshal.dumps(v, 2))
                except Exception:
                    pass
        msg = ("loaded", names)
    except BaseException as e:
        msg = ("error", type(e).__name__, text(e))
    reply(msg)
    while True:
        m = recv(c_in)
        if m is None:
            os._exit(0)
        m = marshal.loads(m)
        name, blob, remote = m[:3]
        try:
            args, kwargs = marshal.loads(blob)
            names = m[3] if len(m) > 4 else ()  # assert mode: the classes the test defines
            table = marshal.loads(m[4]) if names else []
            if remote:
                (args, kwargs), table = incoming(((args, kwargs), table), objects)
            if table:
                args, kwargs = unflatten((args, kwargs), table, {n: own_class(g, n) for n in names})
            f = g.get(name) if type(name) is str else incoming((REMOTE, name), objects)
            if f is None and "Solution" in g:
                f = getattr(g["Solution"](), name)
            if f is None:
                raise NameError("name %r is not defined" % name)
            value = f(*args, **kwargs)
            made = asserts and isinstance(f, type)  # ``Solution()``: its class made it
            # what a class from elsewhere made (the prelude's ``Counter``, ``OrderedDict``, which a
            # test calls: ``assert f(s) == Counter(...)``) crosses as its plain value where it can,
            # as what a function returns: it stayed here, and no right program passed such a test
            own = made and getattr(f, "__module__", None) == "solution"
            msg = shown(value, args, kwargs, names, own) if asserts else None
            try:
                msg = msg or ("ok", marshal.dumps(value, 2) if made else dumps_plain(value))
            except Exception:
                if made:
                    objects.append(value)
                    msg = ("object", len(objects) - 1, type(value).__name__)
                else:
                    msg = ("bad", type(value).__name__)
        except BaseException as e:
            msg = ("error", type(e).__name__, text(e))
        reply(msg)


def dumps_plain(value):
    """In C: marshal of `value`, or of `as_plain(value)` if it holds a subclass of a plain type
    (only then is it walked)."""
    try:
        return marshal.dumps(value, 2)
    except Exception:
        return marshal.dumps(as_plain(value), 2)


def shown(value, args, kwargs, names, made=False):
    """In C, assert mode: the reply for a call that returned `value`: ("ok", value, the arguments
    as the call left them (None if they cannot cross: the function put an object of its own in
    one, R keeps its own), the `flatten` table of the objects of the test's classes `names` in
    either), each marshalled, `as_plain` if need be -- not a value that a class of the candidate's
    `made` (a ``MinStack(list)``: it stays in C, a `Remote`); None if the value cannot cross."""
    for whole in ((value, args, kwargs), (value,)):
        for convert in (False,) if made else (False, True):
            try:
                w, table = flatten(as_plain(whole) if convert else whole, names)
                return ("ok", marshal.dumps(w[0], 2), marshal.dumps(w[1:], 2) if w[1:] else None,
                        marshal.dumps(table, 2))
            except Exception:
                pass
    return None


def own_class(g, name):
    """In C: the candidate's class `name` (the task's prelude defines LeetCode's ``ListNode``
    before the code), else a bare class of that name, made once, for code that only reads the
    objects' attributes."""
    if not isinstance(g.get(name), type):
        g.setdefault("\0classes", {}).setdefault(name, type(name, (), {}))
        return g["\0classes"][name]
    return g[name]


class Candidate:
    """R's end of the pipes to C. `tg`, assert mode: the tests' namespace, whose classes (a
    ``ListNode`` that the test defines) cross to C and back as data (`flatten`)."""
    tg = {}

    def classes(self):
        return {v.__name__: v for v in list(self.tg.values())
                if isinstance(v, type) and v.__module__ == "__main__"}

    def __init__(self, to_c, c_out):
        self.to_c, self.c_out = to_c, c_out

    def reply(self):
        m = recv(self.c_out)
        if m is None:
            raise Dead("the candidate process ended (killed, crashed or exited)")
        try:
            r = marshal.loads(m)
        except Exception:  # C wrote its own bytes into its end of the pipe
            raise Dead("garbled reply from the candidate process")
        if type(r) is not tuple or not r or r[0] not in ("ok", "bad", "error", "loaded",
                                                         "object"):
            raise Dead("garbled reply from the candidate process")
        return r

    def call(self, name, args, kwargs):
        """Call C's function `name` (or the object a `Remote` names) with the test's arguments."""
        remote, classes = [], self.classes()
        try:
            sent, table = flatten((args, kwargs), classes)
            sent, table = outgoing((sent, table), remote)
        except TypeError as e:
            raise TypeError("argument cannot be sent to the candidate: %s" % e)
        send(self.to_c, marshal.dumps((name, marshal.dumps(sent, 2), bool(remote),
                                       sorted(classes), marshal.dumps(table, 2))))
        r = self.reply()
        if r[0] == "ok":
            value = plain(marshal.loads(r[1]))
            after = plain(marshal.loads(r[2])) if len(r) > 2 and r[2] is not None else None
            table = plain(marshal.loads(r[3])) if len(r) > 3 else []
            if table:
                value, after = unflatten((value, after), table, classes)
            if after is not None:
                update(args, after[0])
                update(kwargs, after[1])
            return value
        if r[0] == "object":
            return Remote(self, r[1] if type(r[1]) is int else -1,
                          "an object of class %s" % str(r[2])[:100])
        if r[0] == "bad":
            raise Untransferable("returned a value of type %s (only builtin plain types are"
                                 " accepted)" % str(r[1])[:100])
        raise raised(r)

    def proxy(self, name):
        """A function for the tests' namespace that calls C's function `name`."""
        def f(*args, **kwargs):
            return self.call(name, args, kwargs)
        f.__name__ = f.__qualname__ = name
        return f


# in what R sends, (REMOTE, ref) stands for the object in C that a `Remote` names
REMOTE = "\0remote"
NAMED = "\0named"  # (NAMED, module, name): a builtin or standard library object (`named`)


class Remote:
    """An object that a class of the candidate's made, as the tests hold it (``Solution()``, as
    LeetCode's tests call ``check(Solution().twoSum)``; ``MinStack()``): named by its number in
    C's `objects`, or an attribute of one (number, name). The tests can call it, call its methods
    and pass it to the candidate's functions, all in C. It is nothing else here: no truth value
    or equality (a class standing in for a function, ``f = type("F", (), {})``, cannot pass
    ``assert f(1)``, nor ``assert Solution().ok``), and an attribute is a method.

    Only objects that a class made: another value that cannot leave C fails the test. Objects of
    a class that the test itself defines (LeetCode's ``ListNode`` and ``TreeNode``, with the
    prelude's ``list_node`` and ``is_same_list``) are not Remotes: they cross as data
    (`flatten`), and the helpers that judge them run here."""

    def __init__(self, c, ref, what):
        self._c, self._ref, self._what = c, ref, what

    def __getattr__(self, name):
        if name.startswith("__") or type(self._ref) is not int:
            raise AttributeError(name)
        return Remote(self._c, (self._ref, name), "attribute %s of %s" % (name, self._what))

    def __call__(self, *args, **kwargs):
        return self._c.call(self._ref, args, kwargs)

    def __repr__(self):
        return "<%s in the candidate process>" % self._what

    def _refuse(self, *_):
        raise Untransferable("%s stays in the candidate process: the test can call it or pass it"
                             " to the candidate's functions, not look at it" % self._what)
    __bool__ = __eq__ = __ne__ = _refuse


def outgoing(v, remote, depth=0):
    """A test's argument `v` as R sends it to C: plain values as they are, a `Remote` as (REMOTE,
    its ref), a builtin or a function or class of the standard library (``abs``, ``int``,
    ``str.lower``, ``operator.add``: ``assert apply(abs, [-1]) == [1]``) as (NAMED, its module,
    its name), which C looks up in its own (`named`), each noted in `remote`; TypeError for
    anything else."""
    t = type(v)
    if t is Remote:
        remote.append(v)
        return (REMOTE, v._ref)
    if t not in PLAIN and depth <= 500 and (where := named(v)) is not None:
        remote.append(v)
        return (NAMED,) + where
    if t not in PLAIN or depth > 500:
        raise TypeError("value of type %s cannot leave the sandbox" % t.__name__)
    if (t is list or t is tuple) and not set(map(type, v)) <= ATOMS | {set, frozenset}:
        return t([outgoing(x, remote, depth + 1) for x in v])
    if t is dict:
        return {plain(k): outgoing(x, remote, depth + 1) for k, x in v.items()}
    return plain(v, depth)  # a value without a Remote in it, as it is


def named(v):
    """(module, qualified name) under which `v` itself is found (a builtin, a standard library
    function or class, a method of a builtin type), else None: the test's own functions and
    lambdas, or anything reached another way, do not cross.

    >>> import operator
    >>> named(abs), named(str.lower), named(operator.add), named(lambda: 0)
    (('builtins', 'abs'), ('builtins', 'str.lower'), ('_operator', 'add'), None)
    """
    where = getattr(v, "__module__", None) or getattr(getattr(v, "__objclass__", None),
                                                      "__module__", None)
    name = getattr(v, "__qualname__", None)
    if type(where) is not str or type(name) is not str or where in ("__main__", "solution"):
        return None
    found = sys.modules.get(where)
    for part in name.split("."):
        found = getattr(found, part, None)
    return (where, name) if found is v else None


def incoming(v, objects):
    """In C: what R sent, each (REMOTE, ref) replaced by the object it names in `objects` (a
    number, or (number, attribute name)), each (NAMED, module, name) by that in C's module."""
    t = type(v)
    if t is tuple and len(v) == 3 and type(v[0]) is str and v[0] == NAMED:
        __import__(v[1])
        found = sys.modules[v[1]]
        for part in v[2].split("."):
            found = getattr(found, part)
        return found
    if t is tuple and len(v) == 2 and type(v[0]) is str and v[0] == REMOTE:
        ref = v[1]
        return getattr(objects[ref[0]], ref[1]) if type(ref) is tuple else objects[ref]
    if t is list or t is tuple:
        return t([incoming(x, objects) for x in v])
    if t is dict:
        return {k: incoming(x, objects) for k, x in v.items()}
    return v


# in what crosses between R and C in assert mode, (OBJECT, i) stands for the i-th object of the
# `flatten` table that travels with it
OBJECT = "\0object"
ATOMS = {type(None), bool, int, float, complex, str, bytes}


def flatten(v, names):
    """(`v`, table): each instance of a class named in `names` (the classes the test defines:
    LeetCode's ``ListNode``, ``TreeNode``) replaced by (OBJECT, i) and table[i] = (its class's
    name, its attributes, replaced alike), so that objects cross between R and C as plain data,
    however long a chain of them, shared or cyclic; `unflatten` rebuilds them on the other side
    with that side's class of the name.

    >>> class ListNode: pass
    >>> a, b = ListNode(), ListNode()
    >>> a.val, a.next, b.val, b.next = 1, b, 2, None
    >>> value, table = flatten([a, a], {"ListNode"})
    >>> value
    [('\\x00object', 0), ('\\x00object', 0)]
    >>> table
    [('ListNode', {'val': 1, 'next': ('\\x00object', 1)}), ('ListNode', {'val': 2, 'next': None})]
    """
    table, index, objects = [], {}, []
    if not names:
        return v, table

    def walk(x, depth=0):
        t = type(x)
        if depth > 500 or t in ATOMS:
            return x
        if t is list or t is tuple or t is set or t is frozenset:
            return x if set(map(type, x)) <= ATOMS else t([walk(y, depth + 1) for y in x])
        if t is dict:
            return {walk(k, depth + 1): walk(y, depth + 1) for k, y in x.items()}
        # not a class, nor an int, list or dict of a subclass: its value is more than its attributes
        if t.__name__ in names and not isinstance(x, (type,) + PLAIN):
            if id(x) not in index:
                index[id(x)] = len(objects)
                objects.append(x)
            return (OBJECT, index[id(x)])
        return x
    v = walk(v)
    while len(table) < len(objects):  # an object's attributes may name objects not seen yet
        x = objects[len(table)]
        table.append((type(x).__name__, walk(attributes(x))))
    return v, table


def attributes(x):
    """An object's attributes: its ``__dict__``, and those of its ``__slots__``.

    >>> class P:
    ...     __slots__ = ("x", "y")
    >>> p = P(); p.x = 1; attributes(p)
    {'x': 1}
    """
    found = dict(x.__dict__) if type(getattr(x, "__dict__", None)) is dict else {}
    for cls in type(x).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in [slots] if type(slots) is str else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(x, name):
                found[name] = getattr(x, name)
    return found


def unflatten(v, table, classes):
    """`flatten` undone: each (OBJECT, i) in `v` becomes the object of table[i], made as an
    instance of classes[its class's name] (without calling ``__init__``) with its attributes;
    TypeError for a table that is not `flatten`'s or names a class not in `classes`.

    >>> class ListNode: pass
    >>> head = unflatten(("\\0object", 0), [("ListNode", {"val": 1, "next": ("\\0object", 0)})],
    ...                  {"ListNode": ListNode})
    >>> head.val, head.next is head
    (1, True)
    """
    objects = []
    for entry in table:
        cls = classes.get(entry[0]) if type(entry) is tuple and len(entry) == 2 and type(
            entry[0]) is str and type(entry[1]) is dict else None
        if not isinstance(cls, type):
            raise TypeError("an object of class %s cannot cross to the other process" % (
                str(entry[0])[:100] if type(entry) is tuple and entry else "?"))
        objects.append(cls.__new__(cls))

    def walk(x, depth=0):
        t = type(x)
        if depth > 500 or t in ATOMS:
            return x
        if t is tuple and len(x) == 2 and type(x[0]) is str and x[0] == OBJECT:
            if type(x[1]) is not int or not 0 <= x[1] < len(objects):
                raise TypeError("a reference to no object")
            return objects[x[1]]
        if t is list or t is tuple or t is set or t is frozenset:
            return x if set(map(type, x)) <= ATOMS else t([walk(y, depth + 1) for y in x])
        if t is dict:
            return {walk(k, depth + 1): walk(y, depth + 1) for k, y in x.items()}
        return x
    for obj, (_, attributes) in zip(objects, table):
        for k, x in attributes.items():
            if type(k) is str and not k.startswith("__"):
                object.__setattr__(obj, k, walk(x))  # a slot too; not the class's __setattr__
    return walk(v)


def update(old, new, depth=0):
    """Change the test's argument `old` in place to equal `new`, the argument as the call left it
    in C: lists, dicts and sets at every level, so that a test sees what the candidate's function
    did to its input (``f(a); assert a == [1, 2, 3]`` for a function that sorts in place,
    ``assert a == copy`` for one that must not). False where `old` cannot change (another type,
    an immutable value): then the caller puts `new` in its place.

    >>> a, d = [[3, 1], "x", {1}], {"k": [0]}
    >>> update((a, d), ([[1, 3, 4], "y"], {"k": [0, 0], "n": 2})), a, d
    (False, [[1, 3, 4], 'y'], {'k': [0, 0], 'n': 2})
    """
    t = type(old)
    if t is not type(new) or depth > 500:
        return False
    if t is tuple:  # a tuple cannot change, the lists in it can
        for x, y in zip(old, new):
            update(x, y, depth + 1)
        return False
    if t is list and {list, dict, set}.isdisjoint(map(type, new)):
        old[:] = new  # flat: one assignment (a walk took 0.7 s for a million elements)
    elif t is list:
        for i, y in enumerate(new[:len(old)]):
            if not update(old[i], y, depth + 1):
                old[i] = y
        del old[len(new):]
        old += new[len(old):]
    elif t is dict:
        for k in [k for k in old if k not in new]:
            del old[k]
        for k, y in new.items():
            if k not in old or not update(old[k], y, depth + 1):
                old[k] = y
    elif t is set:
        old.clear()
        old |= new
    elif t not in PLAIN and t is not Remote:  # a test's ListNode: its attributes
        for k, x in attributes(new).items():
            object.__setattr__(old, k, x)
    else:
        return False
    return True


def names_read(tests):
    """The names that the test statements `tests` read (their code's, nested code's too): the only
    values of the candidate's that C sends R. A global that no test reads (a sieve of 10**7
    entries) was copied to R and walked there: seconds of the run's CPU time, or its memory.

    C learns these names (identifiers only: no constant, no expected value). That earns no mark:
    C's functions, classes and modules reach the tests whatever their names, so C could define
    any name without knowing it is read; builtins and dunders are never taken from C, and a name
    that a test statement binds is rebound when it runs. What C can learn is which helpers the
    tests call (``isclose``, ``sorted``), which the task's statement usually says anyway.

    >>> names_read(["def check(c):\\n    assert c(N) == 2\\ncheck(f)"])
    ['N', 'check', 'f']
    """
    names, todo = set(), []
    for src in tests:
        try:
            todo.append(compile(src, "<test>", "exec"))
        except Exception:
            pass
    while todo:
        co = todo.pop()
        names.update(co.co_names)
        todo += [x for x in co.co_consts if type(x) is type(co)]
    return sorted(names)


def run_calls(c, tests, report):
    """call mode: each (name, marshalled arguments, cap) is called in C; the plain result goes to
    the parent, unless it takes more than `cap` bytes: no value equal to the expected one does
    (sandbox_checks.returned_cap), and the parent would read and decode it on its own CPU."""
    for i, (name, blob, cap) in enumerate(tests):
        send(c.to_c, marshal.dumps((name, blob, False)))
        try:
            r = c.reply()
            if r[0] == "ok":
                # version 2 has no back-references: C may send a blob whose shared sub-objects
                # (``[[s] * 64] * 64``, s of 1 MiB) are KiBs here and GiBs once walked; dumped
                # without sharing, the expansion happens in R, under the sandbox's limits, and what
                # the parent decodes is no bigger than what crossed the (capped) channel, nor, once
                # decoded, than MAX_VALUE_BYTES
                budget = [0, MAX_VALUE_BYTES, 0]
                value = plain(marshal.loads(r[1]), budget=budget)
                out = ("ok", marshal.dumps(value, 2))
                if budget[2] > MAX_VALUE_DEPTH:  # measured here, on the sandbox's CPU time
                    out = ("bad", "returned a value nested %d levels deep (at most %d are compared)"
                           % (budget[2], MAX_VALUE_DEPTH))
                elif len(out[1]) > cap:
                    out = ("bad", "returned a value of %d bytes (marshal), more than any value"
                           " equal to the expected one takes" % len(out[1]))
            elif r[0] == "bad":
                out = ("bad", "returned a value of type %s (only builtin plain types are accepted)"
                       % str(r[1])[:100])
            else:
                out = ("error", "%s: %s" % (str(r[1])[:100], str(r[2])[:2000]))
        except Dead as e:
            report((i, "dead", str(e)))
            break
        except Exception as e:
            out = ("bad", "%s: %s" % (type(e).__name__, text(e)))
        report((i,) + out)


def run_asserts(c, loaded, tests, report):
    """assert mode: the test statements run here, with R's own builtins, on plain values and
    proxies into C."""
    tg = c.tg = {"__name__": "__main__", "__builtins__": builtins}
    for k, (kind, x) in loaded[1].items():
        k = str(k)
        # a candidate `def abs(x): return 0` must not change the test's abs; nor may a crafted
        # "loaded" message (C can write its own) set ``__builtins__`` or another dunder
        if hasattr(builtins, k) or k.startswith("__"):
            continue
        try:
            if kind == "fn":
                tg[k] = c.proxy(k)
            elif kind == "val":
                tg[k] = plain(marshal.loads(x))
            elif kind == "mod":
                __import__(str(x))
                tg[k] = sys.modules[str(x)]
        except Exception:
            pass
    for i, src in enumerate(tests):
        try:
            exec(compile(src, "<test %d>" % i, "exec"), tg)
            out = ("pass",)
        except Dead as e:
            report((i, "dead", str(e)))
            break
        except AssertionError as e:
            out = ("fail", "AssertionError: " + text(e)[:2000])
        except Untransferable as e:
            out = ("fail", str(e))
        except CandidateError as e:
            out = ("error", str(e))
        except BaseException as e:
            out = ("error", "%s: %s" % (type(e).__name__, text(e)[:2000]))
        # the message is cut here, as in call mode: a message of the candidate's value (``assert
        # f(1) == 2, f(1)``) went whole to the parent, which read up to 64 MiB for its 1000-char
        # detail, and past that killed the run, losing the results of the later tests
        report((i,) + out)


def main():
    """Returns (code, globals) in stdio mode; call and assert mode end the process here."""
    # started with -s, not -I (it reads PYTHONHASHSEED): -c put the current directory, the
    # candidate's /tmp, on sys.path, where R imports the modules the candidate's code names
    sys.path[:] = [p for p in sys.path if p]
    job, chan, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    builtins.exit = builtins.quit = exit_
    send(chan, b"hello")
    if mode == "stdio":
        return stdio(job, chan)
    prctl = dll_prctl()
    if prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:  # C may not ptrace R or open /proc/R/{mem,fd}
        raise SystemExit("prctl failed")
    c_in, to_c = os.pipe()
    c_out, from_c = os.pipe()
    if os.fork() == 0:
        os.close(job)
        os.close(chan)
        os.close(to_c)
        os.close(c_out)
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        candidate(c_in, from_c, asserts=mode == "assert")
        os._exit(0)  # not reached: C ends inside candidate()
    os.close(c_in)
    os.close(from_c)
    secret, code, tests = marshal.loads(recv(job))
    os.close(job)

    def report(obj):
        send(chan, secret + marshal.dumps(obj))
    c = Candidate(to_c, c_out)
    send(to_c, marshal.dumps((code, names_read(tests) if mode == "assert" else [])))
    try:
        loaded = c.reply()
    except Dead as e:
        loaded = ("dead", str(e))
    if loaded[0] != "loaded":
        why = (("error", "%s: %s" % (loaded[1], loaded[2])) if loaded[0] == "error"
               else ("dead", str(loaded[-1])))
        for i in range(len(tests)):
            report((i,) + why)
    elif mode == "call":
        run_calls(c, tests, report)
    else:
        run_asserts(c, loaded, tests, report)
    report(("done",))
    os._exit(0)


if __name__ == "__main__":
    program, namespace = main()  # returns only in stdio mode
    # the candidate's program, as __main__, from the top-level frame as before
    exec(program, namespace)
    raise SystemExit(0)
