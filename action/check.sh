#!/usr/bin/env bash
# The checks of the llmrender GitHub Action (action.yml), runnable anywhere:
#
#   LLMRENDER_DIR=deploy/llm bash action/check.sh
#
# For every LLMRENDER_DIR/NAME.values.yaml: validate (annotations on the
# values file), render, diff against LLMRENDER_GOLDEN_DIR/NAME.yaml (default
# LLMRENDER_DIR/rendered; annotations on the golden's changed objects), and a
# Markdown plan appended to $GITHUB_STEP_SUMMARY. The goldens are linted as
# files, so findings point at their lines. Every finding also goes into one
# SARIF log, written to $RUNNER_TEMP/llmrender.sarif and named in the step
# output sarif-file. The step output status is 0 or 1; the script itself
# exits 0 so that the upload runs, except on a usage mistake (exit 2).
set -uo pipefail

dir=${LLMRENDER_DIR:?set LLMRENDER_DIR to the directory of the values files}
golden_dir=${LLMRENDER_GOLDEN_DIR:-}
[ -n "$golden_dir" ] || golden_dir="$dir/rendered"
summary=${GITHUB_STEP_SUMMARY:-/dev/null}
output=${GITHUB_OUTPUT:-/dev/null}
tmp=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/llmrender.XXXXXX")
sarif_out="${RUNNER_TEMP:-$tmp}/llmrender.sarif"
status=0

shopt -s nullglob
files=("$dir"/*.values.yaml)
if [ ${#files[@]} -eq 0 ]; then
  echo "::error title=llmrender::no *.values.yaml in $dir"
  echo "status=1" >> "$output"
  exit 2
fi

n=0
for values in "${files[@]}"; do
  name=$(basename "$values" .values.yaml)
  golden="$golden_dir/$name.yaml"
  n=$((n + 1))
  echo "::group::$name"
  # Annotations for the log and the pull request; the same findings as
  # SARIF for code scanning.
  llmrender validate -f "$values" --format sarif --report-file "$tmp/$n-validate.sarif" >/dev/null 2>&1
  if ! llmrender validate -f "$values" --format github; then
    status=1
    echo "::endgroup::"
    continue
  fi
  llmrender render -f "$values" > "$tmp/$n-rendered.yaml" || status=1
  if [ -f "$golden" ]; then
    llmrender lint --format sarif --report-file "$tmp/$n-lint.sarif" "$golden" >/dev/null 2>&1
    llmrender lint --format github "$golden" || status=1
    llmrender diff -f "$values" --against "$golden" --color never --format sarif --report-file "$tmp/$n-diff.sarif" >/dev/null 2>&1
    if ! llmrender diff -f "$values" --against "$golden" --color never --format github 2>&1; then
      echo "if the change is intended: llmrender render -f $values > $golden"
      status=1
    fi
  else
    echo "::warning file=$values,title=llmrender::no golden rendering $golden to diff against; create it with: llmrender render -f $values > $golden"
  fi
  llmrender plan -f "$values" -o markdown >> "$summary" || status=1
  echo "::endgroup::"
done

# One SARIF run out of all of them: code scanning wants one run per tool
# and category. Every log has the same driver, so rule indexes agree.
logs=("$tmp"/*.sarif)
if [ ${#logs[@]} -gt 0 ] && jq -s '{"$schema": .[0]["$schema"], version: .[0].version,
    runs: [{tool: .[0].runs[0].tool, columnKind: .[0].runs[0].columnKind, results: [.[].runs[0].results[]]}]}' \
    "${logs[@]}" > "$sarif_out"; then
  echo "sarif-file=$sarif_out" >> "$output"
fi
rm -rf "$tmp"
echo "status=$status" >> "$output"
exit 0
