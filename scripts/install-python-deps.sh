#!/usr/bin/env bash
# Installs what the Python package's tests need (numpy, pytest: PyPI) into
# the `python3` first on PATH (the pyenv Python 3.11 on these machines, not
# Debian's /usr/bin/python3) when missing; fast when present.
#   scripts/install-python-deps.sh              install only
#   scripts/install-python-deps.sh --run ARGS   then run `python3 ARGS`
# $FUSEC_PYTHON picks another interpreter.
set -euo pipefail
python=${FUSEC_PYTHON:-python3}
if ! "$python" -c "import numpy, pytest" 2>/dev/null; then
  echo "fusec: installing numpy and pytest for $("$python" -c \
    'import sys; print(sys.executable)')" >&2
  "$python" -m pip install -q --disable-pip-version-check --root-user-action=ignore numpy pytest >&2
fi
if [ "${1:-}" = "--run" ]; then
  shift
  exec "$python" "$@"
fi
