{{/*
llm.rules.credentials: LR009's credential check for plain Helm, over every
key and string of the values (input: the values). The patterns are
llmrender's own (internal/redact); a test ties the two. Each pattern runs
over the values printed as text (keys and strings as written: JSON would
escape a newline and hide the word boundary after it), and only when the
text holds one of its hints (a literal every match contains): most values
hold none, and a regular expression over all of them is most of a render's
time. Only when one matches are the values walked to name the value.
*/}}
{{- define "llm.rules.credentials" -}}
{{- $text := toString . -}}
{{- $lower := "" -}}
{{- range include "llm.rules.patterns" "" | fromJsonArray -}}
{{- $p := . -}}
{{- $hinted := false -}}
{{- range index $p 2 }}{{ if contains . $text }}{{ $hinted = true }}{{ end }}{{ end -}}
{{- if $hinted -}}
{{- if index $p 3 }}{{ if not $lower }}{{ $lower = lower $text }}{{ end }}{{ end -}}
{{- if regexMatch (index $p 0) (ternary $lower $text (index $p 3)) -}}
{{- include "llm.rules.find" (dict "value" $ "path" "") -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
llm.rules.patterns: LR009's patterns as JSON: each is the expression, what
it finds, its hints, and whether it runs over the text in lower case (the
expression is then written in lower case; a literal prefix such as "http"
lets the expression skip ahead where "(?i)" would not).
*/}}
{{- define "llm.rules.patterns" -}}
{{- toJson (list
  (list `\bhf_[A-Za-z0-9]{30,}` "a Hugging Face token" (list "hf_") false)
  (list `\b(AKIA|ASIA)[A-Z0-9]{16}\b` "an AWS access key" (list "AKIA" "ASIA") false)
  (list `-----BEGIN [A-Z ]*PRIVATE KEY-----` "a private key" (list "-----BEGIN ") false)
  (list `\bgh[pousr]_[A-Za-z0-9]{36,}` "a GitHub token" (list "ghp_" "gho_" "ghu_" "ghs_" "ghr_") false)
  (list `\bgithub_pat_[A-Za-z0-9_]{36,}` "a GitHub token" (list "github_pat_") false)
  (list `https?://[^\s]*[?&](x-amz-signature|signature|sig|policy|key-pair-id|x-goog-signature)=` "a signed URL" (list "://") true)) -}}
{{- end -}}

{{/* llm.rules.find: walks the values to the credential and fails, naming it. Inputs (dict): value, path. */}}
{{- define "llm.rules.find" -}}
{{- if kindIs "map" .value -}}
{{- range $k, $e := .value -}}
{{- $path := printf "%s/%s" $.path $k -}}
{{- include "llm.rules.credential" (dict "text" $k "path" $path) -}}
{{- include "llm.rules.find" (dict "value" $e "path" $path) -}}
{{- end -}}
{{- else if kindIs "slice" .value -}}
{{- range $i, $e := .value -}}
{{- include "llm.rules.find" (dict "value" $e "path" (printf "%s/%d" $.path $i)) -}}
{{- end -}}
{{- else if kindIs "string" .value -}}
{{- include "llm.rules.credential" (dict "text" .value "path" .path) -}}
{{- end -}}
{{- end -}}

{{/* llm.rules.credential: fails when one string looks like a credential. Inputs (dict): text, path. */}}
{{- define "llm.rules.credential" -}}
{{- range include "llm.rules.patterns" "" | fromJsonArray -}}
{{- if regexMatch (index . 0) (ternary (lower $.text) $.text (index . 3)) -}}
{{- fail (printf "LR009: %s: this looks like %s; never put credentials in values (they would be rendered into the manifests): store it in a Secret and reference the Secret" $.path (index . 1)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* llm.or, llm.and: a list of names as people write it ("a, b or c",
"a, b and c"). Input: the list. */}}
{{- define "llm.or" -}}{{ include "llm.joinLast" (dict "names" . "last" " or ") }}{{- end -}}
{{- define "llm.and" -}}{{ include "llm.joinLast" (dict "names" . "last" " and ") }}{{- end -}}
{{- define "llm.joinLast" -}}
{{- if lt (len .names) 2 -}}
{{- join "" .names -}}
{{- else -}}
{{- join ", " (initial .names) }}{{ .last }}{{ last .names -}}
{{- end -}}
{{- end -}}
