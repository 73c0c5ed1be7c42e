"""Minimal TAP for the Python tests: plan first, one line per check."""
import sys

_n = [0]
_failed = [0]


def plan(n):
    print(f"1..{n}", flush=True)


def ok(cond, what, why=""):
    _n[0] += 1
    print(f"{'ok' if cond else 'not ok'} {_n[0]} - {what}", flush=True)
    if not cond:
        _failed[0] += 1
        for line in str(why).splitlines():
            print(f"#   {line}", flush=True)
    return cond


def skip(what, reason):
    _n[0] += 1
    print(f"ok {_n[0]} - {what} # SKIP {reason}", flush=True)


def raises(fn, exc, needle, what):
    """ok when fn() raises exc whose message contains needle."""
    try:
        fn()
    except exc as e:
        return ok(needle in str(e), what, f"message: {e}")
    except Exception as e:        # noqa: BLE001 - any other error is a failure
        return ok(False, what, f"raised {type(e).__name__}: {e}")
    return ok(False, what, "nothing raised")


def done():
    sys.exit(1 if _failed[0] else 0)
