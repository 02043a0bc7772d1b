"""The watchdog ends a command that does not end by itself after Ctrl-C or its time budget."""

from __future__ import annotations

import signal
import subprocess
import sys

from metabo.cli.watchdog import BUDGET_GRACE

STUCK = """
import sys, time
from metabo.cli import watchdog
dog = watchdog.install({budget})
ready = False
while True:  # work that swallows every interrupt, as a compiled call that never returns would
    try:  # "ready" inside it too: an interrupt that comes while it is printed is swallowed as well
        if not ready:
            print("ready", flush=True)
            ready = True
        time.sleep(60)
    except KeyboardInterrupt:
        pass
"""


def _start(budget: str) -> subprocess.Popen:
    # Ctrl-C's default handling, as in a terminal: a test run started in the background by a
    # shell inherits an ignored SIGINT, which the watchdog leaves ignored
    proc = subprocess.Popen([sys.executable, "-c", STUCK.format(budget=budget)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_an_interrupt_the_work_swallows_still_ends_the_process():
    proc = _start("None")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)  # generous: only that it ends
    assert proc.returncode == 130
    assert "interrupted: stopped" in err


def test_a_time_budget_the_work_overruns_ends_the_process():
    proc = _start(f"time.monotonic() + 0.2 - {BUDGET_GRACE}")  # over 0.2 s after the start
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.strip().splitlines()[-1].startswith("error: the time budget ran out")


def test_a_budget_marked_done_is_no_longer_watched():
    code = ("import time\nfrom metabo.cli import watchdog\n"
            "dog = watchdog.install(time.monotonic() - watchdog.BUDGET_GRACE + 0.3)\n"
            "dog.budget_done()\ntime.sleep(1.5)\nprint('finished')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "finished"


def test_outside_the_command_it_never_ends_the_process():
    """A command run inside another process (a test calling cmd_tune) gets an inert
    watchdog: a spent budget or an interrupt is not its to end."""
    import time

    from metabo.cli import watchdog

    if watchdog._installed is None:  # this test process did not start as the metabo command
        dog = watchdog.watch_budget(time.monotonic() - 100.0)
        assert not any(t.name == "metabo-watchdog" for t in __import__("threading").enumerate())
        assert watchdog.exit_now(130) == 130
        dog.budget_done()


INTERRUPTED_IMPORT = """
import runpy, sys

class Interrupt:  # Ctrl-C arriving while a command's module loads
    def find_spec(self, name, path=None, target=None):
        if name == "metabo.cli.{module}":
            raise KeyboardInterrupt

sys.meta_path.insert(0, Interrupt())
sys.argv = ["metabo", {argv}]
runpy.run_module("metabo.cli.main", run_name="__main__")
"""


def test_an_interrupt_while_the_command_loads_is_one_line_and_130():
    # without and with the watchdog; each command loads its own module only
    for module, argv in (("kb_cmds", '"kb", "stats"'), ("tune_cmds", '"tune", "sklearn:iris", "--budget", "3"')):
        done = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT.format(argv=argv, module=module)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 130, done.stderr
        assert done.stderr.strip() == "interrupted; nothing was done"
