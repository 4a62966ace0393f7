#!/usr/bin/env bash
# Print the path of a working Python >= 3.12 that can create a venv.
#
# A name on PATH is not enough: pyenv puts shims for every version it knows
# on PATH, and a shim fails when its version is not the active one. So each
# candidate is actually run.
#
# Order: $VENV_PYTHON (if set, and then only it), python3.13, python3.12, pyenv's installed
# 3.13.x / 3.12.x, then python3.
set -uo pipefail

# Prints sys.executable when the interpreter runs, is >= 3.12 and has venv
# with ensurepip (Debian ships those separately, as python3.X-venv).
probe() {
    "$1" - 2>/dev/null <<'EOF'
import sys
if sys.version_info < (3, 12):
    sys.exit(1)
import ensurepip, venv  # noqa: F401,E401
print(sys.executable)
EOF
}

# An explicit choice is not second-guessed: it works or we stop.
if [[ -n "${VENV_PYTHON:-}" ]]; then
    if path="$(probe "$VENV_PYTHON")" && [[ -n "$path" ]]; then
        printf '%s\n' "$path"
        exit 0
    fi
    echo "find_python.sh: VENV_PYTHON=$VENV_PYTHON does not run, is older than 3.12 or lacks venv." >&2
    exit 1
fi

# PYTHON_MINOR=12 asks for exactly 3.12 (the second CI run, Django 5.2 LTS).
minors=(13 12)
[[ -n "${PYTHON_MINOR:-}" ]] && minors=("$PYTHON_MINOR")
candidates=()
for minor in "${minors[@]}"; do candidates+=("python3.$minor"); done

if command -v pyenv >/dev/null 2>&1; then
    pyenv_root="$(pyenv root 2>/dev/null)"
else
    pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
fi
if [[ -d "$pyenv_root/versions" ]]; then
    for minor in "${minors[@]}"; do
        # Newest patch release first.
        while IFS= read -r dir; do
            [[ -n "$dir" ]] && candidates+=("$dir/bin/python3.$minor")
        done < <(find "$pyenv_root/versions" -mindepth 1 -maxdepth 1 -name "3.$minor.*" 2>/dev/null | sort -V -r)
    done
fi
[[ -z "${PYTHON_MINOR:-}" ]] && candidates+=(python3)

for candidate in "${candidates[@]}"; do
    if path="$(probe "$candidate")" && [[ -n "$path" ]]; then
        printf '%s\n' "$path"
        exit 0
    fi
done

{
    echo "find_python.sh: no working Python >= 3.12 with venv found."
    echo "  tried: ${candidates[*]}"
    echo "  Install Python 3.12 or 3.13 (on Debian/Ubuntu also python3.X-venv),"
    echo "  or point VENV_PYTHON at one: make VENV_PYTHON=/path/to/python3.13 .venv"
} >&2
exit 1
