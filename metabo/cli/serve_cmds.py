"""``metabo serve``: the REST warm-start service (FastAPI + uvicorn) on one knowledge base.

Binds 127.0.0.1 by default; any other host needs a token (``--token`` or ``METABO_TOKEN``).
One process: the studies' optimizers and the DuckDB connection live in it.
"""

from __future__ import annotations

import argparse
import logging

from metabo.cli._args import count, integer
from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.service.settings import DEFAULT_HOST, DEFAULT_MAX_PENDING, DEFAULT_PORT, TOKEN_ENV


def cmd_serve(args: argparse.Namespace) -> int:
    """``metabo serve``: run the REST warm-start service (ask/tell studies, knowledge queries, ingestion); returns
    the exit code."""
    import uvicorn

    from metabo.service.app import create_app
    from metabo.service.settings import ServiceSettings

    if args.kb is not None:  # as every command: --kb names an existing store (metabo kb init PATH makes one)
        from metabo.cli.kb_cmds import check_kb_arg

        check_kb_arg(args.kb)
    settings = ServiceSettings.resolve(host=args.host, port=args.port, token=args.token, kb_path=args.kb,
                                       max_pending=args.max_pending)
    KnowledgeBase(settings.kb_path).close()  # a store in use or a bad path: one line, before anything is served
    _check_port(settings.host, settings.port)
    level = logging.getLevelName(logging.getLogger().getEffectiveLevel()).lower()
    print(f"metabo service on http://{settings.host}:{settings.port} (API docs at /docs), "
          f"token {'required' if settings.token else 'not required'}", flush=True)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=level,
                access_log=args.verbose > 0)
    return 0


def _check_port(host: str, port: int) -> None:
    """Raise :class:`InputDataError` when ``host:port`` cannot be bound (in use, say)."""
    import socket

    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as e:
        raise InputDataError(f"cannot serve on {host}:{port}: {e.strerror or e} (another metabo serve? give --port)"
                             ) from None


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``metabo serve`` command(s) to the CLI's subparsers."""
    p = sub.add_parser("serve", parents=[common],
                       help="run the REST warm-start service (ask/tell studies, knowledge queries, ingestion)")
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST}; "
                   "any other needs a token)")
    p.add_argument("--port", type=integer(low=0, high=65535), default=DEFAULT_PORT,
                   help=f"port (default {DEFAULT_PORT})")
    p.add_argument("--token", default=None, help=f"bearer token clients must send (default: ${TOKEN_ENV})")
    p.add_argument("--max-pending", type=count(), default=DEFAULT_MAX_PENDING,
                   help=f"the most trials a study may have asked and not told (default {DEFAULT_MAX_PENDING}); "
                   "an ask beyond them is answered 409")
    p.set_defaults(func=cmd_serve)
