"""The backend's logger, "fusec.torch", and the FUSEC_LOGS switch.

Ops left to eager PyTorch are logged at WARNING, so they show with
Python's default logging setup; INFO adds each compiled partition and each
shape specialization, DEBUG each node's lowering. FUSEC_LOGS works as
TORCH_LOGS does for its artifacts:

    FUSEC_LOGS=+fallback   DEBUG: everything, on stderr
    FUSEC_LOGS=fallback    INFO
    FUSEC_LOGS=-fallback   ERROR: fallbacks silent

Standard logging configuration (logging.getLogger("fusec.torch")) works
as well, and wins where both are used.
"""
import logging
import os

log = logging.getLogger("fusec.torch")

_LEVELS = {"+fallback": logging.DEBUG, "fallback": logging.INFO,
           "-fallback": logging.ERROR}


def configure_from_env():
    """Applies FUSEC_LOGS once, at import; an unknown entry is reported,
    not ignored."""
    setting = os.environ.get("FUSEC_LOGS", "").strip()
    if not setting:
        return
    for entry in (e.strip() for e in setting.split(",") if e.strip()):
        if entry not in _LEVELS:
            log.warning("FUSEC_LOGS: unknown entry %r (known: %s)", entry,
                        ", ".join(_LEVELS))
            continue
        log.setLevel(_LEVELS[entry])
        if entry != "-fallback" and not log.handlers:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
            log.addHandler(handler)
            log.propagate = False  # one line per record, as TORCH_LOGS
