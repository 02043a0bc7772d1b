"""A meta-dataset ingestion killed half way (SIGKILL after its first chunk), for the tests
that show a rerun completes it and that nothing stored before the kill is lost."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

_SLOW_INGEST = textwrap.dedent("""
    import importlib, sys, time
    from pathlib import Path
    from metabo.kb import KnowledgeBase
    from metabo.metadatasets.ingest import ingest_metadataset

    module, name = sys.argv[1].split(":")
    source = getattr(importlib.import_module(module), name)
    beat = Path(sys.argv[4])
    def progress(n):
        beat.write_text(str(int(beat.read_text() or 0) + 1) if beat.exists() else "1")
        time.sleep(0.3)  # room for the parent to kill between (or inside) chunks
    with KnowledgeBase(sys.argv[3]) as kb:
        ingest_metadataset(kb, source(sys.argv[2], rows_per_chunk=1), progress=progress)
""")


def ingest_killed_midway(source: str, root: str | Path, store: str | Path, workdir: str | Path,
                         *, timeout: float = 60.0) -> None:
    """Ingest the meta-dataset at ``root`` into the store at ``store`` in a child process,
    one row per chunk, and SIGKILL it once its first chunk is stored (or after
    ``timeout`` seconds). ``source``: ``"module:Class"`` of the source (for instance
    ``"metabo.metadatasets.oboe:OBOE"``); ``workdir`` holds the child's script and beat file."""
    workdir = Path(workdir)
    script, beat = workdir / "slow_ingest.py", workdir / "beat"
    script.write_text(_SLOW_INGEST)
    proc = subprocess.Popen([sys.executable, str(script), source, str(root), str(store), str(beat)])
    deadline = time.monotonic() + timeout
    while not beat.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


__all__ = ["ingest_killed_midway"]
