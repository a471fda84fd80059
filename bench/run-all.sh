#!/bin/bash
# Every benchmark in bench/, one after another. They print figures; they
# are not tests and never fail on a number.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=${PYTHON:-python3}
"$py" "$here/nossd-vs-stock.py" "$@"
