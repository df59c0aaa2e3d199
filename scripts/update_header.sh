#!/usr/bin/env bash
# Regenerate the checked-in C header include/tvm_runtime.h.
#
#   bash scripts/update_header.sh
#
# build.rs writes the cbindgen output to $OUT_DIR/tvm_runtime.h only; this script builds the
# library, finds that OUT_DIR from cargo's own build-script-executed message for package
# tvm-runtime (no guessing of target/ paths), and copies the header into include/. Commit the
# result with the change that altered it; the test `header_is_up_to_date` fails until then.
set -euo pipefail
cd "$(dirname "$0")/.."

# The package id exactly as cargo spells it in its messages (its format varies across cargo
# versions and with the checkout's directory name, so ask rather than match a pattern).
package_id=$(
  cargo metadata --no-deps --format-version 1 |
    python3 -c '
import json, sys
ids = [p["id"] for p in json.load(sys.stdin)["packages"] if p["name"] == "tvm-runtime"]
if len(ids) != 1:
    sys.exit("update_header: expected one tvm-runtime package, got %r" % ids)
print(ids[0])
'
)

out_dir=$(
  cargo build --lib --message-format=json |
    PACKAGE_ID="$package_id" python3 -c '
import json, os, sys
want = os.environ["PACKAGE_ID"]
dirs = set()
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "build-script-executed" and m.get("package_id") == want:
        dirs.add(m["out_dir"])
if len(dirs) != 1:
    sys.exit("update_header: expected one build-script-executed message for %s, got %r" % (want, sorted(dirs)))
print(dirs.pop())
'
)

generated="$out_dir/tvm_runtime.h"
[ -f "$generated" ] || { echo "update_header: $generated was not generated" >&2; exit 1; }
if cmp -s "$generated" include/tvm_runtime.h; then
  echo "include/tvm_runtime.h is up to date"
else
  cp "$generated" include/tvm_runtime.h
  echo "include/tvm_runtime.h regenerated from $generated; commit it"
fi
