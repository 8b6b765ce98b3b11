#!/usr/bin/env bash
# Checks every values file of a repository: schema and rules, a lint of the
# rendered objects, and drift from the committed golden rendering. Prints a
# plan per workload (Markdown, for a pull request) to $PLAN_FILE if set.
#
#   llmrender-check.sh DIR      # DIR holds NAME.values.yaml and rendered/NAME.yaml
#
# Exit status 1 if any check fails; every values file is checked regardless.
set -uo pipefail

dir=${1:?usage: llmrender-check.sh DIR}
plan_file=${PLAN_FILE:-/dev/null}
status=0
shopt -s nullglob
files=("$dir"/*.values.yaml)
if [ ${#files[@]} -eq 0 ]; then
  echo "llmrender-check: no *.values.yaml in $dir" >&2
  exit 1
fi
for values in "${files[@]}"; do
  name=$(basename "$values" .values.yaml)
  golden="$dir/rendered/$name.yaml"
  echo "== $name"
  if ! rendered=$(llmrender render -f "$values"); then
    status=1
    continue
  fi
  printf '%s\n' "$rendered" | llmrender lint - || status=1
  if ! llmrender diff -f "$values" --against "$golden" --color=never; then
    echo "::error file=$values::the rendered output differs from $golden; if the change is intended, run: llmrender render -f $values > $golden"
    status=1
  fi
  llmrender plan -f "$values" -o markdown >> "$plan_file" || status=1
done
exit $status
