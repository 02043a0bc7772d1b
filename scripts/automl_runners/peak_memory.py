"""Run a command and report the peak resident memory of its process tree:
``python peak_memory.py CMD [ARG ...]``.

The command inherits this process's standard streams and its exit code is this one's. Once
it has exited, the largest resident set of any process of its tree that was waited for
(``getrusage(RUSAGE_CHILDREN).ru_maxrss``: the command, and the workers it reaped) is
written as the last line of standard error: ``peak-memory-mb: M``. A worker that is never
waited for (a daemon killed at exit) is not counted.
"""

import resource
import subprocess
import sys

if len(sys.argv) < 2:
    sys.exit("usage: python peak_memory.py CMD [ARG ...]")
code = subprocess.call(sys.argv[1:])
peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # kilobytes on Linux
print(f"peak-memory-mb: {peak_kb / 1024:.1f}", file=sys.stderr, flush=True)
sys.exit(code)
