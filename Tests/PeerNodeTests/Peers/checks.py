"""What the web test peers share: checks that print their result, a deadline, and scratch folders."""
import atexit
import shutil
import signal
import sys
import tempfile
import time

STARTED = time.monotonic()
failures = []


def check(name, condition, detail=""):
    """Prints "ok NAME (T s)" or "FAIL NAME DETAIL (T s)": T, the seconds since the start, shows which wait took the time."""
    when = " (%.1f s)" % (time.monotonic() - STARTED)
    print(("ok " if condition else "FAIL ") + name + ("" if condition else " " + str(detail)) + when, flush=True)
    if not condition:
        failures.append(name)


def give_up_after(seconds):
    """A hung browser or node must not hang the test run: fail, and say so."""
    def give_up(*_):
        print("FAIL gave up after %d s" % seconds, flush=True)
        raise SystemExit(2)
    signal.signal(signal.SIGALRM, give_up)
    signal.alarm(seconds)


def scratch(prefix):
    """A new folder under the temporary directory, removed with what is in it when the script exits
    (each run of the suite left its nodes' data directories and Chromium's profiles there)."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path


def finish():
    sys.exit(1 if failures else 0)


def run_checks(main, seconds):
    """Runs the coroutine function `main` for at most `seconds`, prints "ALL OK"
    or what failed, and exits 1 on any failure."""
    import asyncio

    async def bounded():
        try:
            await asyncio.wait_for(main(), seconds)
        except (asyncio.TimeoutError, TimeoutError):
            print("FAIL the whole run took more than %d s" % seconds, flush=True)
            failures.append("time")
    asyncio.run(bounded())
    print("ALL OK" if not failures else f"{len(failures)} FAILED: {', '.join(failures)}", flush=True)
    finish()
