#!/usr/bin/env bash
# Runs the README's C and C++ recipes as a reader would paste them.
#
#   bash scripts/readme_recipes.sh [README]
#
# In README.md (or the file given), a fenced block whose info string has the word
# `readme-recipe` (```sh readme-recipe) is a recipe: each one runs, in order, in a fresh
# `bash -e` started with an empty environment (PATH and HOME only, plus CARGO_HOME and RUSTUP_HOME
# where set) from the repository root. A block whose info string has `file=PATH`
# (```c file=examples/c/run_demo.c) shows a file of the repository: it must be that file, byte
# for byte, so the program shown is the program the recipes compile. Fails on the first recipe
# that fails, on a shown file that differs, and when the README has no recipe at all.
set -euo pipefail
cd "$(dirname "$0")/.."
readme=${1:-README.md}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Split the README's marked blocks into $work: recipe-NN.sh, file-NN (+ file-NN.path).
awk -v dir="$work" '
  !in_block && /^```/ {
    in_block = 1; out = ""
    n_words = split(substr($0, 4), words, /[ \t]+/)
    for (i = 1; i <= n_words; i++) {
      if (words[i] == "readme-recipe") { out = sprintf("%s/recipe-%02d.sh", dir, ++recipes) }
      else if (words[i] ~ /^file=/) {
        out = sprintf("%s/file-%02d", dir, ++files)
        print substr(words[i], 6) > (out ".path"); close(out ".path")
      }
    }
    if (out != "") printf "" > out
    next
  }
  in_block && /^```[ \t]*$/ { in_block = 0; if (out != "") close(out); next }
  in_block && out != "" { print >> out }
' "$readme"

shopt -s nullglob
shown=("$work"/file-*.path)
recipes=("$work"/recipe-*.sh)
if [[ ${#recipes[@]} -eq 0 ]]; then
  echo "$readme: no \`readme-recipe\` block found" >&2
  exit 1
fi

for path_file in "${shown[@]}"; do
  path=$(cat "$path_file")
  if ! diff -u "$path" "${path_file%.path}" >"$work/diff"; then
    echo "$readme shows $path differently from the file in the repository:" >&2
    cat "$work/diff" >&2
    exit 1
  fi
  echo "== $readme shows $path as it is"
done

fresh_env=(PATH="$PATH" HOME="$HOME")
[[ -n ${CARGO_HOME:-} ]] && fresh_env+=(CARGO_HOME="$CARGO_HOME")
[[ -n ${RUSTUP_HOME:-} ]] && fresh_env+=(RUSTUP_HOME="$RUSTUP_HOME")
for recipe in "${recipes[@]}"; do
  echo "== $readme recipe $(basename "$recipe" .sh | cut -d- -f2), in a fresh shell:"
  sed 's/^/   | /' "$recipe"
  if ! env -i "${fresh_env[@]}" bash --noprofile --norc -e -o pipefail "$recipe"; then
    echo "$readme: recipe $(basename "$recipe" .sh | cut -d- -f2) failed (shown above)" >&2
    exit 1
  fi
done
echo "== ${#recipes[@]} README recipes ran, ${#shown[@]} shown files match"
