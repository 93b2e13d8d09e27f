"""polysandbox's in-runner measurement for pytest: one JSON line per test.

Loaded with ``-p polysandbox_measure`` (this directory on PYTHONPATH). For each test it reads
the kernel's own counters for the pytest process at the start of the test's setup and at the
end of its teardown, and writes one line to the file named by POLYSANDBOX_MEASURE (the host's
FIFO):

  {"test": NAME, "alias": NODEID, "wall_s": ..., "cpu_user_s": ..., "cpu_system_s": ...,
   "memory_peak_bytes": ..., "method": "in-runner", "cpu_clock": "process", "memory": "vmhwm"}

NAME is what pytest's junitxml plugin writes for the test, classname + "." + name (the
exercise runner reads the JUnit XML); NODEID the test's node id, path::name, what the `-rA`
summary prints (the repository runner reads that). CPU is
getrusage(RUSAGE_SELF) (every thread of the process, not its children), wall a monotonic clock,
memory the peak RSS (VmHWM) after resetting it through /proc/self/clear_refs.

Without POLYSANDBOX_MEASURE it does nothing; any failure of its own is swallowed: it never
changes a test's outcome, pytest's output or its reports. These are measurements taken inside
the process the code under test runs in: that code can distort them.
"""

import json
import os
import re
import resource
import time

import pytest

_PATH = os.environ.get("POLYSANDBOX_MEASURE") or None
if _PATH:
    try:
        _PATH = os.path.abspath(_PATH)  # before a test can chdir
    except Exception:
        _PATH = None

# Captured now: a test may monkeypatch these modules.
_getrusage = resource.getrusage
_RUSAGE_SELF = resource.RUSAGE_SELF
_monotonic = time.perf_counter
_os_open, _os_write, _os_close = os.open, os.write, os.close
_fcntl = None
try:
    import fcntl as _fcntl_mod

    _fcntl = _fcntl_mod
except Exception:
    pass
_dumps = json.dumps

_pending = {}
_prefix = None

try:
    from _pytest.junitxml import mangle_test_address as _mangle
except Exception:  # pytest moved it: the same rule, replicated
    _mangle = None

# The testcase's name goes through bin_xml_escape (characters XML cannot hold, e.g. \x1b, become
# "#x1B"). Used only where it does just that: pytest < 6 also XML-escaped ("&" -> "&amp;"), which
# the report's reader undoes.
try:
    from _pytest.junitxml import bin_xml_escape as _xml_escape

    if not (isinstance(_xml_escape("a&<\x1b"), str) and _xml_escape("a&<\x1b") == "a&<#x1B"):
        _xml_escape = None
except Exception:
    _xml_escape = None


def _mangle_fallback(address):
    path, bracket, params = address.partition("[")
    names = path.split("::")
    names[0] = names[0].replace("/", ".")
    names[0] = re.sub(r"\.py$", "", names[0])
    names[-1] += bracket + params
    return names


def _test_name(nodeid):
    """classname + "." + name as pytest's junitxml writes them (and polysandbox joins them)."""
    names = (_mangle or _mangle_fallback)(nodeid)
    classnames = names[:-1]
    if _prefix:
        classnames.insert(0, _prefix)
    name = names[-1]
    if _xml_escape is not None:
        name = _xml_escape(name)
    classname = ".".join(classnames)
    return classname + "." + name if classname else name


def _reset_peak():
    try:
        fd = _os_open("/proc/self/clear_refs", os.O_WRONLY | os.O_CLOEXEC)
        try:
            return _os_write(fd, b"5") == 1
        finally:
            _os_close(fd)
    except Exception:
        return False


def _vmhwm_bytes():
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except Exception:
        pass
    return None


def _write_line(line):
    data = line.encode("ascii") + b"\n"
    if len(data) >= 4096:
        return
    # Non-blocking open: a FIFO nobody reads fails (ENXIO) instead of hanging the test; the
    # write itself blocks (one write of < PIPE_BUF bytes into a pipe is atomic).
    fd = _os_open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        if _fcntl is not None:
            flags = _fcntl.fcntl(fd, _fcntl.F_GETFL)
            _fcntl.fcntl(fd, _fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        _os_write(fd, data)
    finally:
        _os_close(fd)


def pytest_configure(config):
    global _prefix
    try:
        _prefix = config.getoption("junitprefix", None)
    except Exception:
        _prefix = None


def _start(item):
    reset = _reset_peak()
    r = _getrusage(_RUSAGE_SELF)
    _pending[item.nodeid] = (reset, _monotonic(), r.ru_utime, r.ru_stime)


def _finish(item):
    wall1 = _monotonic()
    r = _getrusage(_RUSAGE_SELF)
    start = _pending.pop(item.nodeid, None)
    if start is None:
        return
    reset, wall0, user0, sys0 = start
    peak = _vmhwm_bytes()
    if peak is None:
        return
    fields = {
        "test": _test_name(item.nodeid),
        "alias": item.nodeid,
        "wall_s": round(wall1 - wall0, 6),
        "cpu_user_s": round(max(r.ru_utime - user0, 0.0), 6),
        "cpu_system_s": round(max(r.ru_stime - sys0, 0.0), 6),
        "memory_peak_bytes": peak,
        "method": "in-runner",
        "cpu_clock": "process",
        "memory": "vmhwm" if reset else "vmhwm-unreset",
    }
    line = _dumps(fields)
    if len(line) >= 4095:  # past one atomic write: the name alone, then
        del fields["alias"]
        line = _dumps(fields)
    _write_line(line)


# Outermost wrappers (tryfirst): the span starts before any other plugin's setup work for the
# test (fixtures, capture) and ends after every teardown; pytest always runs the teardown
# phase, whatever the setup and the call did.
@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    if _PATH:
        try:
            _start(item)
        except Exception:
            pass
    yield


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    if _PATH:
        try:
            _finish(item)
        except Exception:
            pass
